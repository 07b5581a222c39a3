#!/usr/bin/env bash
# tilejit's attention beside its peers in one device call (about 4 minutes): SDPA's
# FlashAttention-2 and cuDNN backends (bench/peers/sdpa_flash_quick.py) and tilejit's ops
# (bench/attention_release_time.py) on N = 8192 bf16 shapes, then block-sparse N = 16384 D = 128
# at 10/25/50% beside compiled flex_attention (bench/peers/flex_sparse.py --tilejit), a table last.
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 (the test binaries unused).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 150 $PY bench/peers/sdpa_flash_quick.py --shapes 8192:128,8192:128:causal,8192:64 \
  --out "$out/sdpa.jsonl" >"$out/sdpa.log" 2>&1
echo "sdpa_flash_quick: exit $?"
timeout 150 $PY bench/attention_release_time.py --out "$out/tilejit.jsonl" >"$out/tilejit.log" 2>&1
echo "attention_release_time: exit $?"
timeout 280 $PY bench/peers/flex_sparse.py --n 16384 --densities 10,25,50 --tilejit \
  --out "$out/flex.jsonl" >"$out/flex.log" 2>&1
echo "flex_sparse --tilejit: exit $?"
$PY - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
def rows(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
sd = {(r["N"], r["D"], r["causal"]): r for r in rows("sdpa.jsonl")}
print("| shape | ours fwd | FA2 fwd | cuDNN fwd | ours bwd | FA2 bwd | cuDNN bwd |")
for r in rows("tilejit.jsonl"):
    s = sd.get((r["N"], r["D"], r["causal"]))
    if r["density_percent"] or not s:
        continue
    print(f"| N={r['N']} D={r['D']} causal={r['causal']} | {r['fwd_ms']:.3f} | "
          + " | ".join(str(s.get(k)) for k in ("flash_fwd_ms", "cudnn_fwd_ms"))
          + f" | {r['bwd_ms']:.3f} | "
          + " | ".join(str(s.get(k)) for k in ("flash_bwd_ms", "cudnn_bwd_ms")) + " |")
print("| density | flex fwd | ours fwd (BlockMask) | flex fwd+bwd | ours fwd+bwd (BlockMask) |")
for r in rows("flex.jsonl"):
    print(f"| {r.get('density_percent', r.get('density'))} | {r.get('flex_fwd_ms')} | "
          f"{r.get('tilejit_fwd_ms')} ({r.get('tilejit_blockmask_fwd_ms')}) | {r.get('flex_fwdbwd_ms')} | "
          f"{r.get('tilejit_fwdbwd_ms')} ({r.get('tilejit_blockmask_fwdbwd_ms')}) |")
PY
