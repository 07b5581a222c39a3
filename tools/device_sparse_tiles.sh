#!/usr/bin/env bash
# Block-sparse attention's tiles per density (bench/attention_sparse_tiles_time.py) in one
# device call, a table last. Stage: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 (the
# test binaries removed); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 500 $PY bench/attention_sparse_tiles_time.py --out "$out/tiles.jsonl" >"$out/tiles.log" 2>&1
echo "attention_sparse_tiles_time: exit $?"
tail -3 "$out/tiles.log" | cut -c1-300
$PY - "$out/tiles.jsonl" <<'PY'
import json, sys
print("| N | density | kernel | config | ms | sum |")
for line in open(sys.argv[1]):
    r = json.loads(line)
    c = r["config"]
    c = "op's tile" if c is None else " ".join(f"{k}={v}" for k, v in c.items())
    ms = f"{r['ms']:.3f}" if "ms" in r else r.get("error", "")[:60]
    print(f"| {r['N']} | {r['density_percent']} | {r['kernel']} | {c} | {ms} | {r.get('sum', 0):.6g} |")
PY
