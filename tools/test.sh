#!/usr/bin/env bash
# Quick start, command 2: set up, build, run every test that needs no GPU.
# (GPU tests carry the ctest label `gpu`; run them with tools/gpu_check.sh on a GPU machine.)
# Each stage prints how long it took ("[test.sh] ... s"): CI's time is their sum.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
timed() {
  local what=$1 start=$SECONDS
  shift
  "$@"
  echo "[test.sh] $what: $((SECONDS - start)) s"
}
timed "setup" tools/setup.sh
timed "build" tools/build.sh
timed "ctest" bash -c "cd build && ctest -LE gpu --output-on-failure -j $jobs"
# The installed C++ package and examples/cpp_app, the Python package and its tests.
timed "package tests" tools/package_test.sh
# The same tests again, built with AddressSanitizer and UBSan (tools/sanitized_tests.sh).
timed "sanitized build and tests" tools/sanitized_tests.sh
# The front end and cache import under libFuzzer with ASan and UBSan (tools/fuzz.sh), from the
# same sanitized build.
timed "fuzzing" env FUZZ_SECONDS="${FUZZ_SECONDS:-45}" tools/fuzz.sh
echo "[test.sh] all: $SECONDS s"
