#!/usr/bin/env bash
# Quick start, command 2: set up, build, run every test that needs no GPU.
# (GPU tests carry the ctest label `gpu`; run them with tools/gpu_check.sh on a GPU machine.)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
(cd build && ctest -LE gpu --output-on-failure -j "$(nproc 2>/dev/null || echo 2)")
# The installed C++ package and examples/cpp_app, the Python package and its tests.
tools/package_test.sh
# The same tests again, built with AddressSanitizer and UBSan (tools/sanitized_tests.sh).
tools/sanitized_tests.sh
# The front end and cache import under libFuzzer with ASan and UBSan (tools/fuzz.sh), from the
# same sanitized build.
FUZZ_SECONDS=${FUZZ_SECONDS:-45} tools/fuzz.sh
