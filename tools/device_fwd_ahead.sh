#!/usr/bin/env bash
# attn_fwd's AHEAD (next scores issued before this tile's softmax) checked and timed in one
# device call: the attention forward GPU tests of SA and AHEAD, then
# bench/attention_fwd_ahead_time.py, a table last. Stage: tools/stage_device.sh
# build/capi/libtilejit.so.0.1.0 (test binaries removed); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
# TIMINGS_ONLY=1: the timings alone (the tests already passed on this build).
if [ -z "${TIMINGS_ONLY:-}" ]; then
timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  python/tests/test_gpu.py >"$out/py_ahead.log" 2>&1
echo "attention and ops GPU tests (the Hopper forward tile with SA, AHEAD, ISSUE): exit $?"
tail -1 "$out/py_ahead.log"
grep -E "^FAILED|Error" "$out/py_ahead.log" | head -5
if [ -x $B/gpu_kernels_test ]; then
  timeout 120 $B/gpu_kernels_test --gtest_filter='GpuAttention.Ring*:GpuAttention.SparseForward' \
    >"$out/gpu_kernels.log" 2>&1
  echo "gpu_kernels_test (ring attention, sparse forward): exit $?"
  grep -E "OK \]|FAILED  \]" "$out/gpu_kernels.log" | head -5
fi
fi
timeout 300 $PY bench/attention_fwd_ahead_time.py --out "$out/ahead.jsonl" >"$out/ahead.log" 2>&1
echo "attention_fwd_ahead_time: exit $?"
$PY - "$out/ahead.jsonl" <<'PY'
import json, sys
print("| N | D | causal | density | config | ms | sum |")
for line in open(sys.argv[1]):
    r = json.loads(line)
    c = " ".join(f"{k}={v}" for k, v in r["config"].items()) or "op's tile"
    ms = f"{r['ms']:.3f}" if "ms" in r else r.get("error", "")[:80]
    print(f"| {r['N']} | {r['D']} | {r['causal']} | {r.get('density_percent')} | {c} | {ms} | "
          f"{r.get('sum', 0):.8g} |")
PY
