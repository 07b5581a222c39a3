#!/usr/bin/env bash
# Issue 17's components in one kernel (hbv_forward_nmul) on a GPU machine, one call (under 10
# minutes), a short table last:
#   - GpuHbv.ComponentsInOneKernelForwardAndEveryBackwardForm (forward and every derived
#     backward against the float64 reference on the B x NM models);
#   - the Python op through autograd (test_hbv_gpu.py -k components: nmul 3, 4, 16);
#   - one training step at nmul = 16 beside the shared Triton yardstick on repeated rows
#     (bench/peers/hbv_nmul_step.py), rows in $OUT/hbv-nmul.jsonl.
# Stage: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 build/tests/gpu/gpu_semantics_test
# (tilejit, gpu_kernels_test, gpu_semantics_test and the library into .device/bin); carry .device and .peers (the shared yardstick).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuHbv.*' >"$out/nmul-gtest.log" 2>&1
echo "GpuHbv.*: exit $?"
grep -hE "^\[  FAILED|Failure|Expected|^\[       OK" "$out/nmul-gtest.log" | head -6
if [ -x $B/gpu_semantics_test ]; then # a [N, 1] value of a row slice: once per row
  timeout 100 $B/gpu_semantics_test --gtest_filter='GpuSemantics.UnitAxis*' >"$out/unit-gtest.log" 2>&1
  echo "GpuSemantics.UnitAxis*: exit $?"; grep -hE "^\[  FAILED|Failure" "$out/unit-gtest.log" | head -4
fi
timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_hbv_gpu.py \
  >"$out/nmul-pytest.log" 2>&1
echo "pytest test_hbv_gpu.py: exit $?"; tail -3 "$out/nmul-pytest.log"
timeout 200 $PY bench/peers/hbv_nmul_step.py --yardstick .peers --out "$out/hbv-nmul.jsonl" \
  --commit "$(git rev-parse --short HEAD 2>/dev/null)" >"$out/nmul-bench.log" 2>&1
echo "hbv_nmul_step: exit $?"
$PY - "$out/hbv-nmul.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if len(sys.argv) > 1 else []
print(f"{'B':>6} {'impl':<15} {'ms':>9} {'mem MB':>8} {'err':>9}")
for r in rows:
    ms = f"{r['ms']:.3f}" if r.get("ms") else r.get("error", "")[:40]
    print(f"{r['shape']['B']:>6} {r['impl']:<15} {ms:>9} {r.get('mem_mb', 0):>8.0f} "
          f"{r.get('err', 0):>9.2e}")
PY
# Every plan of the nmul = 16 shapes (which backward form the op should default to).
timeout 240 $B/tilejit bench --workload hbv --case nmul --plan all --repeats 10 \
  --out "$out/hbv-nmul-plans.jsonl" >"$out/nmul-plans.log" 2>&1
echo "bench --case nmul --plan all: exit $?"; tail -30 "$out/nmul-plans.log"
