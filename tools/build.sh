#!/usr/bin/env bash
# Configures and builds tilejit into ./build (Release, tests on). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=ON "$@" >/dev/null
cmake --build build -j "$jobs"
