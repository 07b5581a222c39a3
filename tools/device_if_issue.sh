#!/usr/bin/env bash
# Dots left running through an if (the emitter change of 2026-11-30) checked and timed in one
# device call: the attention Python GPU tests on the new library, then
# bench/attention_bwd_time.py alternating the library before (.device/base) and after
# (.device/bin), twice each, a table last. Stage the new library with tools/stage_device.sh
# (test binaries removed) and the earlier one in .device/base; carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 200 env TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 $PY -m pytest -q -p no:cacheprovider \
  -m gpu python/tests/test_attention_gpu.py >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
for round in 1 2; do
  for lib in base bin; do
    TILEJIT_LIBRARY=$PWD/.device/$lib/libtilejit.so.0.1.0 timeout 100 $PY bench/attention_bwd_time.py \
      --tag "$lib" --out "$out/bwd.jsonl" >>"$out/bwd.log" 2>&1
  done
done
$PY - "$out/bwd.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| N | causal | density | before (2 runs) | after (2 runs) | grad sums equal |")
for key in sorted({(r["N"], r["causal"], str(r["density_percent"])) for r in rows}):
    sel = [r for r in rows if (r["N"], r["causal"], str(r["density_percent"])) == key]
    b = [r["bwd_ms"] for r in sel if r["tag"] == "base"]
    a = [r["bwd_ms"] for r in sel if r["tag"] == "bin"]
    same = len({r["grad_sum"] for r in sel}) == 1
    print(f"| {key[0]} | {key[1]} | {key[2]} | {' '.join(f'{x:.3f}' for x in b)} | "
          f"{' '.join(f'{x:.3f}' for x in a)} | {same} |")
PY
