#!/usr/bin/env bash
# Attention's K and V tiles by TMA (rank-4 tensor maps) against the base build's cp.async, in
# one device call: GPU tests first (attention forward/backward, dense and block-sparse; the
# dequant TMA test; the Python op's GPU tests, strided-heads views among them), then the forward
# (and the whole step) of both builds alternating on dense and block-sparse bf16 B=4 H=16 D=128
# shapes at the Hopper tiles, then flex_attention on the sparse ones. Every output is checked
# against float64 by `tilejit bench`. Carry .device (tools/stage_base.sh REV, then
# tools/stage_device.sh build/capi/libtilejit.so.0.1.0).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
[ "${TESTS-}" = none ] || timeout 240 $B/gpu_kernels_test --gtest_filter="${TESTS:-GpuAttention.*:GpuDequant.W4A16WgmmaInFlightWithTma}" \
  >"$out/tests.log" 2>&1
echo "gpu_kernels_test: exit $?"
grep -hE "^\[  FAILED|Failure|exception" "$out/tests.log" | head -10
grep -hcE "^\[       OK" "$out/tests.log"
if [ -f "$B/libtilejit.so.0.1.0" ] && [ "${PYTEST-}" != none ]; then
  (cd python && TILEJIT_LIBRARY=../$B/libtilejit.so.0.1.0 PYTHONPATH=. timeout 240 $PY -m pytest -q -m gpu \
    -p no:cacheprovider tests/test_attention_gpu.py >"$out/pytest.log" 2>&1)
  echo "pytest attention gpu: exit $?"; tail -3 "$out/pytest.log"
fi
# SETS/PLAN: another configuration (D = 64's backward: PLAN=dq_kernel, SETS with BN 64, BM 128).
read -r -a TILES <<<"--set ${SETS:-forward:BM=128 forward:BN=128 forward:WARPS=8 forward:STAGES=2 backward:TR=1 backward:BN=128 backward:BM=64 backward:WARPS=8 backward:STAGES=2}"
for round in $(seq "${ROUNDS:-2}"); do
  for sh in ${SHAPES:-B=4,H=16,N=8192,D=128 B=4,H=16,N=8192,D=128,CAUSAL=1 B=4,H=16,N=16384,D=128,DENSITY=10 B=4,H=16,N=16384,D=128,DENSITY=25 B=4,H=16,N=16384,D=128,DENSITY=50}; do
    for b in tilejit_base tilejit; do
      timeout 120 $B/$b bench --workload attention --shape "$sh" --dtype bf16 --plan "${PLAN:-atomic_dq}" \
        "${TILES[@]}" --repeats 10 --out "$out/$b.jsonl" >>"$out/bench.log" 2>&1
      echo "round $round $b $sh: exit $?"
    done
  done
done
if [ -n "${FLEX-1}" ]; then
  (cd bench/peers && timeout 200 $PY flex_sparse.py --n 16384 --out "$out/flex.jsonl" >"$out/peer.log" 2>&1)
  echo "flex: exit $?"
fi
$PY - "$out" <<'PY'
import json, sys, statistics, os
out = sys.argv[1]
rows = {}
for b in ("tilejit_base", "tilejit"):
    p = os.path.join(out, b + ".jsonl")
    if not os.path.exists(p): continue
    for line in open(p):
        r = json.loads(line)
        st = {x["step"]: x["ms"] for x in r["steps"]}
        bwd = sum(v for k, v in st.items() if k != "forward")
        rows.setdefault(r["problem"], {}).setdefault(b, []).append((st["forward"], bwd, r["ms"], r["correct"]))
print("| problem | base fwd | TMA fwd | fwd ratio | base bwd | TMA bwd | bwd ratio | base total | TMA total | correct |")
for prob, d in rows.items():
    med = lambda b, i: statistics.median(x[i] for x in d.get(b, [(float('nan'),)*4]))
    ok = all(x[3] for v in d.values() for x in v)
    print(f"| {prob} | {med('tilejit_base',0):.3f} | {med('tilejit',0):.3f} | {med('tilejit_base',0)/med('tilejit',0):.3f}x | "
          f"{med('tilejit_base',1):.3f} | {med('tilejit',1):.3f} | {med('tilejit_base',1)/med('tilejit',1):.3f}x | "
          f"{med('tilejit_base',2):.3f} | {med('tilejit',2):.3f} | {ok} |")
PY
[ -f "$out/flex.jsonl" ] && cut -c1-220 "$out/flex.jsonl"
