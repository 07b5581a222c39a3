#!/usr/bin/env bash
# Branch exp/lse-shared, before it is merged: attn_bwd / attn_bwd_sparse with lse and delta
# copied by the pipeline (TMA rows) checked and timed in one device call (about 6 minutes):
#   1. GpuPipelines.RowRunsByTheTma (rank-1 TMA copies against the interpreter: the last box
#      past N, N % 4 != 0 falling back to cp.async, counting down);
#   2. the attention Python GPU tests (odd N, GQA, D = 72, f16, block 64, empty rows, dq by
#      atomics and by attn_dq, into poisoned outputs);
#   3. tilejit beside its peers (tools/device_attention_peers_quick.sh's table).
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0, then remove from
# .device/bin all but gpu_kernels_test and the library.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 120 $B/gpu_kernels_test --gtest_color=no --gtest_filter='GpuPipelines.RowRunsByTheTma' \
  >"$out/row_runs.log" 2>&1
echo "GpuPipelines.RowRunsByTheTma: exit $?"; grep -E "Failure|FAILED" "$out/row_runs.log" | head -5
timeout 200 $PY -m pytest -q -x -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "pytest test_attention_gpu.py: exit $?"; tail -3 "$out/py_attention.log"
bash tools/device_attention_peers_quick.sh
