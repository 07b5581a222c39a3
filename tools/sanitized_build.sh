#!/usr/bin/env bash
# Configures build-fuzz/: clang 14 at -O1 with AddressSanitizer, UndefinedBehaviorSanitizer
# (aborting on the first report) and libFuzzer's coverage instrumentation. One build serves the
# fuzz targets (tools/fuzz.sh) and the CPU tests under the sanitizers (tools/sanitized_tests.sh),
# so the libraries are compiled once for both.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
  -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DTILEJIT_FUZZ=ON -DTILEJIT_BUILD_TESTS=ON \
  -DTILEJIT_BUILD_GPU_TESTS=OFF \
  -DTILEJIT_STATIC_RUNTIME=OFF >/dev/null
