# Sourced by the device scripts from the repository root: where results go ($OUT on the device
# machine), the module cache, the staged binaries (.device/bin, tools/stage_device.sh), the
# device's Python with torch, and a first line naming the GPU.
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
# Nsight Compute's CLI, on the PATH or where the device image installs it.
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
