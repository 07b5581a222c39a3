#!/usr/bin/env bash
# What the 2026-11-29 (tenth) session landed without running on a GPU, in one device call:
#   1. the timer after its protocol moved to tuner/timing_protocol.h (gpu_tune_test: a tuning
#      run, the warm-up after an idle pause, graph replay and the kernel flush);
#   2. the block-sparse dq_kernel plan (GpuAttention.SparseBackward, now with attn_dq_sparse);
#   3. both block-sparse plans timed (bench --plan all) at N = 16384 D = 128, 10% and 50%, and
#      D = 64 at 10%, with the Hopper tiles, beside compiled flex_attention.
# Carry .device (tools/stage_device.sh, which stages gpu_tune_test and gpu_kernels_test).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 150 $B/gpu_tune_test >"$out/tune_test.log" 2>&1
echo "gpu_tune_test: exit $?"; grep -hE "^\[  FAILED|Failure" "$out/tune_test.log" | head -5
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuAttention.SparseBackward' >"$out/tests.log" 2>&1
echo "GpuAttention.SparseBackward: exit $?"; grep -hE "^\[  FAILED|Failure" "$out/tests.log" | head -5
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
