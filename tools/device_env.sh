# Sourced by the device scripts from the repository root: where results go ($OUT on the device
# machine), the module cache, the staged binaries (.device/bin, tools/stage_device.sh), the
# device's Python with torch and tilejit's library and package for it, Nsight Compute, and a
# first line naming the GPU.
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
# tilejit from Python: the staged library (a script timing another one names it on the command
# line, TILEJIT_LIBRARY=... python3 ...) and the package in the tree.
export TILEJIT_LIBRARY=${TILEJIT_LIBRARY:-$PWD/$B/libtilejit.so.0.1.0}
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
# Nsight Compute's CLI, on the PATH or where the device image installs it; need_ncu stops a
# script that cannot run without it.
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
need_ncu() { [ -n "$NCU" ] || { echo "ncu not found"; exit 1; }; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
