#!/usr/bin/env bash
# What the 2026-11-29 sessions left unrun on a GPU, in one device call:
#   1. GpuAttention.RingOpOfOneRank: the C++ ring op on a group of one rank (NCCL from the
#      device's PyTorch wheel, found for TILEJIT_NCCL_LIBRARY);
#   2. GpuWorkloads.TheAttentionOpTakesThePlanStoredForItsShape: the op reads the database's
#      plan choice (2026-11-29, twelfth session: written, not run);
#   3. both block-sparse plans timed (bench --plan all) at N = 16384 D = 128, 10% and 50%, and
#      D = 64 at 10%, with the Hopper tiles, beside compiled flex_attention.
# Carry .device (tools/stage_device.sh stages gpu_kernels_test and gpu_workloads_test).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_NCCL_LIBRARY=${TILEJIT_NCCL_LIBRARY:-$(find /opt/torch/.venv -name 'libnccl.so.2' 2>/dev/null | head -1)}
echo "NCCL: ${TILEJIT_NCCL_LIBRARY:-not found}"
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuAttention.RingOpOfOneRank' >"$out/tests.log" 2>&1
echo "GpuAttention.RingOpOfOneRank: exit $?"; grep -hE "^\[  FAILED|Failure|SKIPPED|PASSED" "$out/tests.log" | head -5
timeout 120 $B/gpu_workloads_test --gtest_filter='GpuWorkloads.TheAttentionOpTakesThePlan*' \
  >"$out/tests2.log" 2>&1
echo "GpuWorkloads.TheAttentionOpTakesThePlan*: exit $?"; grep -hE "^\[  FAILED|Failure|PASSED" "$out/tests2.log" | head -5
for sh in B=4,H=16,N=16384,D=128,DENSITY=10 B=4,H=16,N=16384,D=128,DENSITY=50 B=4,H=16,N=16384,D=64,DENSITY=10; do
  timeout 120 $B/tilejit bench --workload attention --shape "$sh" --dtype bf16 --plan all \
    --repeats 10 --out "$out/plans.jsonl" >>"$out/bench.log" 2>&1
  echo "bench --plan all $sh: exit $?"
done
(cd bench/peers && timeout 150 $PY flex_sparse.py --n 16384 --densities 10,50 --out "$out/flex.jsonl" \
  >"$out/peer.log" 2>&1)
echo "flex: exit $?"
$PY - "$out/plans.jsonl" <<'PY'
import json, sys
print("| problem | plan | forward | backward steps | total ms | correct |")
for line in open(sys.argv[1]):
    r = json.loads(line)
    st = {x["step"]: x["ms"] for x in r["steps"]}
    bwd = sum(v for k, v in st.items() if k != "forward")
    print(f"| {r['problem']} | {r['plan']} | {st['forward']:.3f} | {bwd:.3f} | {r['ms']:.3f} | {r['correct']} |")
PY
[ -f "$out/flex.jsonl" ] && cut -c1-200 "$out/flex.jsonl"
