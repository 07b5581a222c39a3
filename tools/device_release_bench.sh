#!/usr/bin/env bash
# The pipelines' slot release (mbarriers per ring slot, the default since 2026-11-30) against the
# block barrier at each iteration's top (TILEJIT_PIPELINE_RELEASE=barrier), in one device call:
# the attention Python GPU tests with the default, then bench/attention_release_time.py once per
# setting (barrier, mbarrier, barrier again: the order's drift shows), a table last.
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
if [ -z "${SKIP_TESTS:-}" ]; then  # SKIP_TESTS=1: the timings only
  timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
    >"$out/py_attention.log" 2>&1
  echo "pytest test_attention_gpu.py (slot release by mbarriers): exit $?"
  tail -3 "$out/py_attention.log"
fi
for mode in barrier mbarrier barrier2; do
  TILEJIT_PIPELINE_RELEASE=${mode%2} timeout 170 $PY bench/attention_release_time.py \
    --out "$out/release.jsonl" >>"$out/release.log" 2>&1
  echo "attention_release_time ($mode): exit $?"
done
[ -f "$out/release.jsonl" ] && $PY - "$out/release.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def f(x): return "-" if x is None else f"{x:.3f}"
print("| N | D | causal | density | release | fwd ms | bwd ms | bwd STAGES=3 ms | sums (o, bwd) |")
for r in rows:
    print(f"| {r['N']} | {r['D']} | {r['causal']} | {r['density_percent']} | {r['release']} | "
          f"{f(r['fwd_ms'])} | {f(r.get('bwd_ms'))} | {f(r.get('bwd_stages3_ms'))} | "
          f"{r['o_sum']:.6g}, {r.get('bwd_grad_sum') or 0:.6g} |")
PY
