#!/usr/bin/env bash
# Attention's GPU time kernel by kernel, tilejit's forward and backward beside compiled
# flex_attention's (bench/attention_kernel_breakdown.py --flex), a table last. Stage with
# tools/stage_device.sh; carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 400 $PY bench/attention_kernel_breakdown.py --flex --out "$out/breakdown.jsonl" \
  --shapes "${SHAPES:-8192:128,16384:128:10,16384:128:50}" >"$out/breakdown.log" 2>&1
echo "breakdown: exit $?"
$PY - "$out/breakdown.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    top = ", ".join(f"{k.split('(')[0][:40]} {v:.3f}" for k, v in list(r["kernels"].items())[:5])
    print(f"| N={r['N']} dens={r['density_percent']} {r['pass']} | {r['total_ms']:.3f} | {top} |")
PY
