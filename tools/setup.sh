#!/usr/bin/env bash
# Installs the Debian 12 packages tilejit builds with, when they are missing.
# Nothing else is downloaded: CUDA comes from /usr/local/cuda.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config python3 libsqlite3-dev libgtest-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libdlpack-dev llvm-14-tools clang-format
          clang-14 libclang-rt-14-dev # clang + libFuzzer: tools/fuzz.sh
          python3-pip python3-setuptools python3-wheel python3-pytest python3-numpy
          python3-matplotlib python3-dev # the Python package (python3-dev: its C launch
          # path), its tests, bench/plot.py
          libamdhip64-dev) # HIPRTC (ROCm 5.2): AMD code objects, compiled without an AMD GPU
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ! -e /usr/local/cuda/include/cuda.h ]; then
  echo "setup: warning: /usr/local/cuda not found; NVRTC codegen tests will be skipped" >&2
fi
