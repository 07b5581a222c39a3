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
  -E '^(NvrtcKernels\.EveryKernelCompilesForSm80AndSm90a|CompileTimeout\.NoLimitAndTheEnvironmentAreHonouredAndBadValuesNamed)$'
# That compile-timeout test runs here without the leak check: it passes, then LeakSanitizer's
# own tracer crashes at exit reading the main thread's dynamic TLS ("DTLS 4 at
# 0x1a5b-0x2000002b5d", "Tracer caught signal 11") after NVRTC ran on a thread of its own
# (GCC 12's LeakSanitizer on Debian 12's glibc; from 2e01764 on, which changed the prelude NVRTC
# compiles, not the test's code; bisected, and reproduced only under ctest). Memory errors and
# undefined behaviour are still checked.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --output-on-failure -R '^CompileTimeout\.NoLimitAndTheEnvironmentAreHonouredAndBadValuesNamed$'
# (Left out here: every shipped kernel through NVRTC and ptxas for two architectures, ~120 s
# of which nearly all is NVRTC's own work, not tilejit's code; the plain build runs it, and
# NvrtcSemantics takes tilejit's side of that path through the sanitizers.)
