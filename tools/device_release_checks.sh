#!/usr/bin/env bash
# The GPU tests after the pipelines' per-slot release became the default (2026-11-30): every
# kernel whose rings TMA fills (attention, the dequant GEMM, ...) changed its synchronisation.
# One device call, each step with its own timeout and exit code, a summary last.
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 build/tests/gpu/gpu_semantics_test,
# then remove gpu_driver_test, gpu_tune_test, tilejit and tilejit_base from .device/bin.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
summary=()
step() {  # name, timeout, command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("| $name | $rc | $(( $(date +%s) - t0 )) s | $(tail -1 "$out/$name.log" | cut -c1-90) |")
}
step py_attention 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py
step py_others 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_dequant_gpu.py \
  python/tests/test_gated_delta_gpu.py python/tests/test_hbv_gpu.py python/tests/test_gpu.py
step gpu_semantics 120 $B/gpu_semantics_test --gtest_brief=1
step gpu_kernels 150 $B/gpu_kernels_test --gtest_brief=1
grep -h -E "FAILED|Error|error:" "$out"/py_*.log "$out"/gpu_*.log | head -20
echo "| step | exit | time | last line |"
echo "|---|---|---|---|"
printf '%s\n' "${summary[@]}"
