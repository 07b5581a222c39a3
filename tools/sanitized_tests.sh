#!/usr/bin/env bash
# Every CPU test (ctest -LE gpu) built with AddressSanitizer and UndefinedBehaviorSanitizer
# (tools/sanitized_build.sh): a memory error, a leak or undefined behaviour fails the test that
# ran into it. tools/test.sh (CI) runs it after the plain build's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/sanitized_build.sh
cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)"
cd build-fuzz
# Leaks inside vendor libraries tilejit cannot free are suppressed by library (tools/lsan.supp).
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/../tools/lsan.supp:print_suppressions=0} \
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest -LE gpu --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" \
  -E '^NvrtcKernels\.EveryKernelCompilesForSm80AndSm90a$'
# (Left out here: every shipped kernel through NVRTC and ptxas for two architectures, ~120 s
# of which nearly all is NVRTC's own work, not tilejit's code; the plain build runs it, and
# NvrtcSemantics takes tilejit's side of that path through the sanitizers.)
