#!/usr/bin/env bash
# Block-sparse attention with its index loads read an iteration early (the default) against
# read with the copies (TILEJIT_PIPELINE_EARLY_INPUTS=0), in one device call: the attention
# Python GPU tests, then the kernels' times (bench/attention_kernel_breakdown.py) in
# alternating processes, a table last. Stage with tools/stage_device.sh; carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
for round in 1 2 3; do
  for mode in 1 0; do
    TILEJIT_PIPELINE_EARLY_INPUTS=$mode timeout 100 $PY bench/attention_kernel_breakdown.py \
      --shapes "${SHAPES:-16384:128:10,16384:128:25,16384:128:50}" >"$out/early$mode.$round.jsonl" 2>&1
  done
done
$PY - "$out" <<'PY'
import json, sys, glob, statistics, collections
rows = collections.defaultdict(list)
for mode in "10":
    for f in sorted(glob.glob(f"{sys.argv[1]}/early{mode}.*.jsonl")):
        for l in open(f):
            if not l.startswith("{"):
                continue
            r = json.loads(l)
            for k, v in r["kernels"].items():
                rows[(r["density_percent"], r["pass"], k.split("(")[0], mode)].append(v)
keys = sorted({k[:3] for k in rows})
print("| density | pass | kernel | early (ms) | late (ms) | late / early |")
for d, p, k in keys:
    e, l = (statistics.median(rows.get((d, p, k, m), [float("nan")])) for m in "10")
    print(f"| {d} | {p} | {k} | {e:.3f} | {l:.3f} | {l / e:.3f} |")
PY
