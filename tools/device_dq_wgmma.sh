#!/usr/bin/env bash
# dq's product on the warpgroup tensor cores inside attn_bwd / attn_bwd_sparse (the warpgroups
# splitting D; the keys' tile read as the score product's A and dq's B), checked and timed in one
# device call: the attention Python GPU tests (dq by atomics at ISSUE 0 and 1 among them), then
# bench/attention_bwd_configs_time.py: dq by attn_dq (today's default) against dq by atomics in
# attn_bwd, configurations alternating, a table last. Stage the library with
# tools/stage_device.sh (test binaries removed); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 240 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
timeout 300 $PY bench/attention_bwd_configs_time.py \
  --configs "${CONFIGS:-ATOMIC_DQ=0,ISSUE=1;ATOMIC_DQ=1,ISSUE=1;ATOMIC_DQ=1,ISSUE=0}" \
  --shapes "${SHAPES:-8192:128,8192:128:causal,16384:128:10,16384:128:50,8192:64}" \
  --out "$out/configs.jsonl" >"$out/configs.log" 2>&1
echo "attention_bwd_configs_time: exit $?"; tail -3 "$out/configs.log"
$PY bench/attention_bwd_configs_time.py --table "$out/configs.jsonl"
