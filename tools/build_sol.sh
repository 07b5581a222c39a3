#!/usr/bin/env bash
# Builds bench/sol's speed-of-light program for the GPU machine into .device/bin (nvcc from
# /usr/local/cuda; the CUDA runtime and libstdc++ linked statically so the binary runs there).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device/bin
"${NVCC:-/usr/local/cuda/bin/nvcc}" -O3 -std=c++17 -arch=sm_90 -Xcompiler -static-libstdc++ \
  -o .device/bin/gather_sol bench/sol/paged_sparse_gather_sol.cu
"${NVCC:-/usr/local/cuda/bin/nvcc}" -O3 -std=c++17 -arch=sm_90 -Xcompiler -static-libstdc++ \
  -o .device/bin/weight_sol bench/sol/weight_stream_sol.cu
