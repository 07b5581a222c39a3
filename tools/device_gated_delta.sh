#!/usr/bin/env bash
# The gated delta rule's chunked form on the GPU: its GPU test, then tilejit's forward beside
# flash-linear-attention's chunk_gated_delta_rule in the same call, a short table last. Stage:
#   tools/stage_device.sh build/tests/gpu/gpu_workloads_test, and FLA's `fla` package under
#   .device/fla (git archive of a fla-org/flash-linear-attention checkout; never committed);
# carry .device. About 4-5 minutes (FLA compiles and autotunes on its first call per shape family).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ -z "${SKIP_TESTS:-}" ]; then # (tools/device_pending.sh runs them itself)
  timeout "${TEST_TIMEOUT:-120}" $B/gpu_kernels_test --gtest_filter='GpuGatedDelta.ChunkedForward' \
    >"$out/tests.log" 2>&1
  echo "GpuGatedDelta.ChunkedForward: exit $?"
  grep -hE "^\[  FAILED|Failure|relative error|exception" "$out/tests.log" | head -8
fi
shapes=(128:256:4:32 128:1024:4:32 4:2048:16:128)
for s in "${shapes[@]}"; do
  IFS=: read -r b t h d <<<"$s"
  timeout 60 $B/tilejit bench --workload gated_delta --shape "B=$b,T=$t,H=$h,D=$d,RULE=delta" \
    --dtype bf16 --plan chunked --repeats 20 --out "$out/tilejit.jsonl" >>"$out/bench.log" 2>&1
  echo "tilejit $s: exit $?"
done
(cd bench/peers && timeout "${PEER_TIMEOUT:-150}" $PY fla_gated_delta.py --fla ../../.device/fla \
  --shapes "$(IFS=,; echo "${shapes[*]}")" --out "$out/fla.jsonl" >"$out/peer.log" 2>&1)
echo "fla: exit $?"; tail -2 "$out/peer.log"
# The rule's forward + backward (BWD=1; chunks of 32, where its step 2 does not spill, and 64).
for s in 128:256:4:32:32 4:2048:16:128:32 4:2048:16:128:64; do
  IFS=: read -r b t h d c <<<"$s"
  timeout 90 $B/tilejit bench --workload gated_delta \
    --shape "B=$b,T=$t,H=$h,D=$d,RULE=delta,BWD=1,CHUNK=$c" --dtype bf16 --repeats 10 \
    --out "$out/tilejit_bwd.jsonl" >>"$out/bench.log" 2>&1
  echo "tilejit delta fwd+bwd $s: exit $?"
done
# Linear attention, forward + backward, beside FLA's chunk and fused_chunk forms.
for s in 128:1024:4:32 4:2048:16:128; do
  IFS=: read -r b t h d <<<"$s"
  timeout 60 $B/tilejit bench --workload gated_delta --shape "B=$b,T=$t,H=$h,D=$d" \
    --dtype bf16 --repeats 20 --out "$out/tilejit_linear.jsonl" >>"$out/bench.log" 2>&1
  echo "tilejit linear $s: exit $?"
done
(cd bench/peers && timeout "${PEER_TIMEOUT:-150}" $PY fla_gated_delta.py --fla ../../.device/fla \
  --op linear --shapes 128:1024:4:32,4:2048:16:128 --out "$out/fla_linear.jsonl" \
  >"$out/peer_linear.log" 2>&1)
echo "fla linear: exit $?"; tail -2 "$out/peer_linear.log"
$PY - "$out" <<'PY'
import json, os, sys
o = sys.argv[1]
rows = lambda f: [json.loads(l) for l in open(os.path.join(o, f))] if os.path.exists(os.path.join(o, f)) else []
fla = {(r["B"], r["T"], r["H"], r["D"]): r for r in rows("fla.jsonl")}
print("| bf16 gated delta fwd | tj prepare | tj chunk | tj fwd ms | FLA fwd ms | x | ok |")
for r in rows("tilejit.jsonl"):
    s = r["shape"]; st = {x["step"]: x["ms"] for x in r["steps"]}
    p = fla.get((s["B"], s["T"], s["H"], s.get("D")), {}).get("fla_fwd_ms", float("nan"))
    print(f"| B={s['B']} T={s['T']} H={s['H']} D={s.get('D')} | {st.get('prepare', 0):.3f} | "
          f"{st.get('forward', 0):.3f} | {r['ms']:.3f} | {p:.3f} | {p / r['ms']:.2f} | {r.get('correct')} |")
print("| bf16 gated delta fwd+bwd | chunk | steps ms | fwd+bwd ms | bwd / fwd | ok (errors) |")
for r in rows("tilejit_bwd.jsonl"):
    s = r["shape"]; st = {x["step"]: x["ms"] for x in r["steps"]}
    f = st.get("prepare", 0) + st.get("forward", 0)
    print(f"| B={s['B']} T={s['T']} H={s['H']} D={s.get('D')} | {s.get('chunk', 64)} | "
          f"{' '.join(f'{k}={v:.3f}' for k, v in st.items())} | {r['ms']:.3f} | {r['ms'] / f:.2f} | "
          f"{r.get('correct')} {r.get('errors')} |")
fl = {(r["B"], r["T"], r["H"], r["D"]): r for r in rows("fla_linear.jsonl")}
print("| bf16 linear attn | tj fwd ms | tj fwd+bwd ms | FLA chunk fwd+bwd | FLA fused_chunk fwd+bwd | ok |")
for r in rows("tilejit_linear.jsonl"):
    s = r["shape"]; st = {x["step"]: x["ms"] for x in r["steps"]}
    p = fl.get((s["B"], s["T"], s["H"], s.get("D")), {})
    print(f"| B={s['B']} T={s['T']} H={s['H']} D={s.get('D')} | {st.get('forward', 0):.3f} | {r['ms']:.3f} | "
          f"{p.get('fla_chunk_fwdbwd_ms', float('nan')):.3f} | {p.get('fla_fused_chunk_fwdbwd_ms', float('nan')):.3f} | {r.get('correct')} |")
PY
