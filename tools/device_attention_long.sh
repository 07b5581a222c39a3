#!/usr/bin/env bash
# Issue 16's long bf16 shapes (B=4 H=16, N in {2048, 8192, 16384}, D in {64, 128}, causal and
# not) and its block-sparse ones, tilejit beside SDPA's FlashAttention-2 and cuDNN backends and
# compiled flex_attention in the same call. One part per device call (each fits the 10-minute
# limit); carry .device (tools/stage_device.sh build/tests/gpu/gpu_workloads_test):
#   tools/device_attention_long.sh dense-a   # GPU tests (Backward, SparseBackward), N 2048 and 8192
#   tools/device_attention_long.sh dense-b   # N 16384
#   tools/device_attention_long.sh sparse    # 10/25/50% density at N 8192 and 16384 against flex
#   tools/device_attention_long.sh dq-kernel # D = 64 (and D = 128 non-causal) with dq by attn_dq
# tilejit: the forward at its defaults (WG = 1), the backward in its transposed form (TR = 1,
# BN 128, BM 64, 8 warps: the best of the 2026-11-28 sweep at N = 4096), dq by atomics; medians
# of 10 with the L2 flushed, every output checked against float64 on sampled heads.
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:?usage: device_attention_long.sh dense-a|dense-b|sparse|dq-kernel}
source tools/device_env.sh
BWD=(--set backward:TR=1 backward:BN=128 backward:BM=64 backward:WARPS=8 backward:STAGES=2)
PLAN=atomic_dq
bench() { # shape
  timeout 150 $B/tilejit bench --workload attention --shape "$1" --dtype bf16 --plan $PLAN \
    "${BWD[@]}" --repeats 10 --out "$out/tilejit.jsonl" >>"$out/bench.log" 2>&1
  echo "tilejit $1: exit $?"
}
case $part in
dense-a)
  timeout 240 $B/gpu_kernels_test --gtest_filter='GpuAttention.Backward:GpuAttention.SparseBackward' \
    >"$out/tests.log" 2>&1
  echo "gpu_kernels_test: exit $?"
  grep -hE "^\[  FAILED|Failure|exception" "$out/tests.log" | head -10
  grep -hE "^\[       OK" "$out/tests.log"
  shapes=(); peer=""
  for n in 2048 8192; do for d in 64 128; do for c in "" ",CAUSAL=1"; do
    shapes+=("B=4,H=16,N=$n,D=$d$c"); peer+="$n:$d${c:+:causal},"
  done; done; done ;;
dense-b)
  # D = 64's backward: both forms and their tiles at N = 8192 (the fixed TR = 1 tile was
  # 0.85-0.91x FlashAttention-2 there, 2026-11-28).
  for c in "" ",CAUSAL=1"; do
    timeout 150 $B/tilejit bench --workload attention --shape "B=4,H=16,N=8192,D=64$c" --dtype bf16 \
      --plan atomic_dq --sweep "backward:TR=0|1,BN=64|128,BM=32|64,WARPS=4|8,STAGES=2" --repeats 10 \
      --out "$out/sweep64.jsonl" >>"$out/bench.log" 2>&1
    echo "sweep D=64$c: exit $?"
  done
  shapes=(); peer=""
  for d in 64 128; do for c in "" ",CAUSAL=1"; do
    shapes+=("B=4,H=16,N=16384,D=$d$c"); peer+="16384:$d${c:+:causal},"
  done; done ;;
dq-kernel)
  # The dq_kernel plan (attn_bwd without atomics, then attn_dq) with the transposed backward at
  # BN 64, BM 64, 4 warps: the best D = 64 backward of the sweeps (9.94 ms at N = 8192 against
  # the atomics plan's 10.82), on every D = 64 shape and D = 128's two non-causal long ones.
  PLAN=dq_kernel
  BWD=(--set backward:TR=1 backward:BN=64 backward:BM=64 backward:WARPS=4 backward:STAGES=2)
  shapes=(); peer=""
  for n in 2048 8192 16384; do for c in "" ",CAUSAL=1"; do
    shapes+=("B=4,H=16,N=$n,D=64$c"); peer+="$n:64${c:+:causal},"
  done; done
  shapes+=("B=4,H=16,N=8192,D=128" "B=4,H=16,N=16384,D=128"); peer+="8192:128,16384:128," ;;
sparse)
  # D = 64's backward with dq in its own kernel (attn_dq: no atomics; its three products on
  # wgmma at 4 warps) against the atomics plan's best of dense-b's sweep.
  timeout 150 $B/tilejit bench --workload attention --shape "B=4,H=16,N=8192,D=64" --dtype bf16 \
    --plan dq_kernel --sweep "backward:TR=0|1,BN=64|128,BM=32|64,WARPS=4|8,STAGES=2" --repeats 10 \
    --out "$out/sweep64.jsonl" >>"$out/bench.log" 2>&1
  echo "sweep D=64 dq_kernel: exit $?"
  shapes=()
  for n in 8192 16384; do for p in 10 25 50; do shapes+=("B=4,H=16,N=$n,D=128,DENSITY=$p"); done; done ;;
*) echo "unknown part '$part' (dense-a, dense-b, sparse or dq-kernel)" >&2; exit 2 ;;
esac
for sh in "${shapes[@]}"; do bench "$sh"; done
if [ "$part" = sparse ]; then
  (cd bench/peers && timeout 300 $PY flex_sparse.py --out "$out/flex.jsonl" >"$out/peer.log" 2>&1)
else
  (cd bench/peers && timeout 300 $PY sdpa_flash_quick.py --shapes "${peer%,}" --out "$out/sdpa.jsonl" \
    >"$out/peer.log" 2>&1)
fi
echo "peer: exit $?"; tail -3 "$out/peer.log"
$PY - "$out" "$part" <<'PY'
import json, os, sys
o, part = sys.argv[1], sys.argv[2]
def rows(f):
    p = os.path.join(o, f)
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
def split(r):
    f = sum(s["ms"] for s in r.get("steps", []) if s["step"] == "forward")
    return f, sum(s["ms"] for s in r.get("steps", []) if s["step"] != "forward")
if part == "sparse":
    peers = {(r["N"], r["kept_blocks"]): r for r in rows("flex.jsonl")}
    print("| B4 H16 D128 bf16 | tj fwd | flex fwd | x | tj fwd+bwd | flex fwd+bwd | x | ok |")
    for r in rows("tilejit.jsonl"):
        s = r["shape"]; f, b = split(r); nb = -(-s["N"] // s["block"])
        kept = round(s["density"] * nb); p = peers.get((s["N"], kept), {})
        pf, pb = p.get("flex_fwd_ms", float("nan")), p.get("flex_fwdbwd_ms", float("nan"))
        print(f"| N={s['N']} {kept}/{nb} blocks | {f:.3f} | {pf:.3f} | {pf/f:.2f} | "
              f"{f+b:.3f} | {pb:.3f} | {pb/(f+b):.2f} | {r.get('correct')} |")
else:
    peers = {(r["N"], r["D"], r["causal"]): r for r in rows("sdpa.jsonl")}
    print("| B4 H16 bf16 | tj fwd | FA2 | x | cuDNN | x | tj bwd | FA2 | x | cuDNN | x | ok |")
    for r in rows("tilejit.jsonl"):
        s = r["shape"]; f, b = split(r)
        p = peers.get((s["N"], s["D"], s.get("causal", False)), {})
        nan = float("nan")
        ff, cf = p.get("flash_fwd_ms", nan), p.get("cudnn_fwd_ms", nan)
        fb, cb = p.get("flash_bwd_ms", nan), p.get("cudnn_bwd_ms", nan)
        c = " causal" if s.get("causal") else ""
        print(f"| N={s['N']} D={s['D']}{c} | {f:.3f} | {ff:.3f} | {ff/f:.2f} | {cf:.3f} | {cf/f:.2f} | "
              f"{b:.3f} | {fb:.3f} | {fb/b:.2f} | {cb:.3f} | {cb/b:.2f} | {r.get('correct')} |")
sweep = {}
for r in rows("sweep64.jsonl"):
    st = {x["step"]: x["ms"] for x in r.get("steps", [])}
    if r.get("correct") and "backward" in st:
        plan = r["config"].split()[0]
        sweep.setdefault((r["shape"].get("causal"), plan), []).append(
            (sum(st.values()) - st.get("forward", 0), r["config"].split("backward:")[1].split()[0]))
for (causal, plan), v in sorted(sweep.items()):
    print(f"| N=8192 D=64 causal={causal} {plan}: backward steps, fastest four | " +
          " | ".join(f"{ms:.3f} {cfg}" for ms, cfg in sorted(v)[:4]) + " |")
PY
