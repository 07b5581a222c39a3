#!/usr/bin/env bash
# What the 2026-11-29 sessions changed or wrote without device time, checked in one device call
# (about 6-8 minutes; every step has its own timeout and reports its exit code):
#   1. GpuAttention.RingOpOfOneRank: the C++ ring op on a group of one rank (NCCL from the
#      device's PyTorch wheel, found for TILEJIT_NCCL_LIBRARY);
#   2. gpu_workloads_test and gpu_tune_test whole: the tuner's and the workloads' buffers, waits
#      and timer now go through runtime/gpu_api.h and tuner/launch_timer.h (AMD's path beside
#      CUDA's), and GpuWorkloads.TheAttentionOpTakesThePlanStoredForItsShape (the op reads the
#      database's plan choice);
#   3. the ops' stream-ordered work buffers (cuMemAllocAsync / cuMemFreeAsync) through the Python
#      GPU tests of attention, gated_delta and hbv;
#   4. both block-sparse plans timed (bench --plan all) at N = 16384 D = 128, 10% and 50%, and
#      D = 64 at 10%, with the Hopper tiles, beside compiled flex_attention.
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0, then
# rm .device/bin/gpu_driver_test (unused here; with it the carry is near its 64 MiB).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_NCCL_LIBRARY=${TILEJIT_NCCL_LIBRARY:-$(find /opt/torch/.venv -name 'libnccl.so.2' 2>/dev/null | head -1)}
echo "NCCL: ${TILEJIT_NCCL_LIBRARY:-not found}"
summary() { grep -hE "^\[  FAILED|Failure|SKIPPED|^\[  PASSED|tests? ran" "$1" | head -8; }
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuAttention.RingOpOfOneRank' >"$out/ring.log" 2>&1
echo "GpuAttention.RingOpOfOneRank: exit $?"; summary "$out/ring.log"
timeout 300 $B/gpu_workloads_test >"$out/workloads.log" 2>&1
echo "gpu_workloads_test: exit $?"; summary "$out/workloads.log"
timeout 150 $B/gpu_tune_test >"$out/tune.log" 2>&1
echo "gpu_tune_test: exit $?"; summary "$out/tune.log"
for t in test_attention_gpu.py test_gated_delta_gpu.py test_hbv_gpu.py; do
  TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python timeout 150 \
    $PY -m pytest -q -p no:cacheprovider -m gpu "python/tests/$t" >"$out/py_$t.log" 2>&1
  echo "pytest $t: exit $?"; tail -2 "$out/py_$t.log"
done
for sh in B=4,H=16,N=16384,D=128,DENSITY=10 B=4,H=16,N=16384,D=128,DENSITY=50 B=4,H=16,N=16384,D=64,DENSITY=10; do
  timeout 120 $B/tilejit bench --workload attention --shape "$sh" --dtype bf16 --plan all \
    --repeats 10 --out "$out/plans.jsonl" >>"$out/bench.log" 2>&1
  echo "bench --plan all $sh: exit $?"
done
(cd bench/peers && timeout 150 $PY flex_sparse.py --n 16384 --densities 10,50 --out "$out/flex.jsonl" \
  >"$out/peer.log" 2>&1)
echo "flex: exit $?"
[ -f "$out/plans.jsonl" ] && $PY - "$out/plans.jsonl" <<'PY'
import json, sys
print("| problem | plan | forward | backward steps | total ms | correct |")
for line in open(sys.argv[1]):
    r = json.loads(line)
    st = {x["step"]: x["ms"] for x in r["steps"]}
    bwd = sum(v for k, v in st.items() if k != "forward")
    print(f"| {r['problem']} | {r['plan']} | {st['forward']:.3f} | {bwd:.3f} | {r['ms']:.3f} | {r['correct']} |")
PY
[ -f "$out/flex.jsonl" ] && cut -c1-200 "$out/flex.jsonl"
