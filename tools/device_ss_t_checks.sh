#!/usr/bin/env bash
# A read through a descriptor transposed (MN-major) and from tiles written from registers
# (tj::dot_wgmma_ss_t): the GPU tests it reaches and attention backward's dq by atomics timed,
# in one short device call. GpuWgmmaSplit (against the interpreter) and
# GpuAttention.SparseBackward, the attention Python GPU tests, then
# bench/attention_bwd_configs_time.py (dq by attn_dq against dq by atomics) and
# bench/attention_dq_cost_variants.py. Stage with tools/stage_device.sh (gpu_kernels_test kept);
# carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 100 $B/gpu_kernels_test --gtest_filter='GpuWgmmaSplit.*:GpuAttention.SparseBackward' \
  >"$out/kernels.log" 2>&1
echo "gpu_kernels_test (split, sparse backward): exit $?"
grep -E "^\[       OK|^\[  FAILED|^\[  PASSED" "$out/kernels.log" | head -6
timeout 120 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
timeout 60 $PY bench/attention_bwd_configs_time.py --rounds 3 \
  --configs "ATOMIC_DQ=0,ISSUE=1;ATOMIC_DQ=1,ISSUE=1" --shapes "8192:128,16384:128:10" \
  --out "$out/configs.jsonl" >"$out/configs.log" 2>&1
echo "attention_bwd_configs_time: exit $?"; cat "$out/configs.jsonl" | cut -c1-400
timeout 60 $PY bench/attention_dq_cost_variants.py --out "$out/dq_cost.jsonl" >"$out/dq_cost.log" 2>&1
echo "attention_dq_cost_variants: exit $?"; tail -2 "$out/dq_cost.log"
