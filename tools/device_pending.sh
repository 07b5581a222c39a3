#!/usr/bin/env bash
# One device call for what landed on 2026-11-28 (third session) without a GPU run: the GPU tests
# of attention's transposed backward (TR = 1, wgmma), gated_delta's linear attention (kernel and
# workload), then A/B timings (attn_bwd TR 0 against 1; gated_delta forward + backward with the
# defaults), a short table last. Carry .device (tools/stage_device.sh with gpu_kernels_test and
# gpu_workloads_test staged):
#   tools/stage_device.sh build/tests/gpu/gpu_workloads_test; run: tools/device_pending.sh
# (about 6-8 minutes: GpuAttention.Backward alone took 73 s before its three TR = 1
# configurations were added).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout "${TEST_TIMEOUT:-300}" $B/gpu_kernels_test --gtest_filter='GpuLinearAttn.*:GpuGatedDelta.*:GpuAttention.Backward' \
  >"$out/kernels.log" 2>&1
echo "gpu_kernels_test: exit $?"
timeout 200 $B/gpu_workloads_test --gtest_filter='GpuWorkloads.GatedDelta*' >"$out/workloads.log" 2>&1
echo "gpu_workloads_test: exit $?"
# hbv's and paged_sparse's kernels after the vector-width change (db95d17), and the semantics suite.
timeout 150 $B/gpu_kernels_test --gtest_filter='GpuHbv.*:GpuPagedSparse.*' >"$out/hbv_paged.log" 2>&1
echo "gpu_kernels_test hbv/paged: exit $?"
timeout 150 $B/gpu_semantics_test >"$out/semantics.log" 2>&1
echo "gpu_semantics_test: exit $?"
grep -hE "^\[  (FAILED|     OK)|Failure|relative error" "$out/kernels.log" "$out/workloads.log" "$out/hbv_paged.log" "$out/semantics.log" | grep -v "     OK" | head -20
grep -chE "^\[       OK" "$out"/*.log
for sh in "B=4,H=16,N=4096,D=128" "B=4,H=16,N=4096,D=128,CAUSAL=1"; do
  timeout 120 $B/tilejit bench --workload attention --shape "$sh" --dtype bf16 --plan atomic_dq \
    --sweep "backward:TR=0|1,BN=64|128,BM=64,WARPS=4|8" --repeats 10 --out "$out/attn_bwd.jsonl" \
    >>"$out/bench.log" 2>&1
  echo "attention $sh: exit $?"
done
for sh in "B=4,T=2048,H=16,D=128" "B=128,T=1024,H=4,D=32" "B=4,T=2048,H=16,D=128,RULE=delta"; do
  timeout 120 $B/tilejit bench --workload gated_delta --shape "$sh" --dtype bf16 --repeats 10 \
    --out "$out/gated_delta.jsonl" >>"$out/bench.log" 2>&1
  echo "gated_delta $sh: exit $?"
done
python3 - "$out" <<'PY'
import json, os, re, sys
o = sys.argv[1]
def rows(f):
    p = os.path.join(o, f)
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
best = {}
for r in rows("attn_bwd.jsonl"):
    st = [s for s in r.get("steps", []) if s.get("step") == "backward"]
    if not st or not r.get("correct"): continue
    tr = re.search(r"backward:\S*TR=(\d)", r["config"]).group(1)
    k = (json.dumps(r["shape"], sort_keys=True), tr)
    if k not in best or st[0]["ms"] < best[k][0]: best[k] = (st[0]["ms"], r["config"])
print("| attention backward (bf16) | TR | best ms | config |")
for (shape, tr), (ms, cfg) in sorted(best.items()):
    print(f"| {shape} | {tr} | {ms:.3f} | {re.search(r'backward:(\S+)', cfg).group(1)} |")
print("| gated_delta linear (bf16) | fwd ms | fwd+bwd ms | correct |")
for r in rows("gated_delta.jsonl"):
    f = [s["ms"] for s in r.get("steps", []) if s.get("step") == "forward"]
    print(f"| {json.dumps(r['shape'], sort_keys=True)} | {f[0] if f else float('nan'):.3f} | {r['ms']:.3f} | {r.get('correct')} |")
PY
