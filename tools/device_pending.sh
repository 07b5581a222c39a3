#!/usr/bin/env bash
# One device call for what landed on 2026-11-28/29 (fourth session) without a GPU run: the
# blocked solve_tril and the chunked gated delta rule's scaling normalisation
# (GpuGatedDelta.ChunkedForward), the rule's backward step 1
# (GpuGatedDelta.BackwardStateGradients), the attention backward test's dq-kernel WG = 0 case
# (GpuAttention.Backward: its harness threw there), and the gated_delta Python ops' GPU tests;
# then the rule's and linear attention's times beside FLA (tools/device_gated_delta.sh). Stage:
#   tools/stage_device.sh build/capi/libtilejit.so.0.1.0, and FLA under .device/fla (see
#   tools/device_gated_delta.sh); carry .device. About 8-9 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 $B/gpu_kernels_test \
  --gtest_filter='GpuGatedDelta.*:GpuAttention.Backward' >"$out/kernels.log" 2>&1
echo "gpu_kernels_test: exit $?"
grep -hE "^\[  FAILED|Failure|relative error|exception" "$out/kernels.log" | head -10
grep -hE "^\[       OK" "$out/kernels.log"
TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python timeout 120 \
  $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_gated_delta_gpu.py \
  >"$out/pytest.log" 2>&1
echo "pytest test_gated_delta_gpu.py: exit $?"; tail -3 "$out/pytest.log"
SKIP_TESTS=1 PEER_TIMEOUT=100 tools/device_gated_delta.sh 2>&1 | grep -v "^NVIDIA"
