#!/usr/bin/env bash
# Dots split over warpgroups on wgmma (and a tile read as A and as B through descriptors): the
# GPU tests those compiler rules reach, in one device call: GpuWgmmaSplit (against the
# interpreter), the gated_delta / linear attention kernels' tests and GpuAttention.SparseBackward
# (gpu_kernels_test), the attention Python GPU tests; then dq by atomics (its product now on
# wgmma) against dq by attn_dq timed (bench/attention_bwd_configs_time.py), a table last. Stage
# with tools/stage_device.sh (gpu_kernels_test kept); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuWgmmaSplit.*:GpuGatedDelta.*:GpuLinearAttn.*:GpuAttention.SparseBackward' \
  >"$out/kernels.log" 2>&1
echo "gpu_kernels_test (split, gated_delta, linear_attn, sparse backward): exit $?"
grep -E "^\[  (PASSED|FAILED)|^\[       OK|^\[  FAILED" "$out/kernels.log" | head -14
timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
timeout 150 $PY bench/attention_bwd_configs_time.py --rounds 3 \
  --configs "ATOMIC_DQ=0,ISSUE=1;ATOMIC_DQ=1,ISSUE=1" \
  --shapes "8192:128,16384:128:10" --out "$out/configs.jsonl" >"$out/configs.log" 2>&1
echo "attention_bwd_configs_time: exit $?"
$PY bench/attention_bwd_configs_time.py --table "$out/configs.jsonl"
