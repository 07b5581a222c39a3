#!/usr/bin/env bash
# Runs the GPU tests (ctest label `gpu`) on a GPU machine. Built binaries come either from
# ./build or, on the device machine, from the carried folder .device/bin (tools/stage_device.sh).
# Writes logs to $OUT when set; prints a short summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.device/bin
[ -d "$bin" ] || bin=build
out=${OUT:-/tmp/tilejit-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1
status=0
summary=()
for t in gpu_driver_test gpu_kernels_test gpu_tune_test ${EXTRA_GPU_TESTS:-}; do
  exe=$(find "$bin" -name "$t" -type f | head -1)
  [ -n "$exe" ] || { summary+=("$t: missing"); status=1; continue; }
  start=$(date +%s)
  "$exe" --gtest_color=no ${GTEST_ARGS:-} >"$out/$t.log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$out/$t.log")
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$out/$t.log")
  skipped=$(grep -c '^\[  SKIPPED \]' "$out/$t.log")
  summary+=("$t: rc=$rc passed=$passed failed=$failed skipped=$skipped ($(( $(date +%s) - start ))s)")
  [ $rc -eq 0 ] || status=1
  grep -E "Failure|error|Expected|Which is|actual|relative|seed|FAILED|exception" "$out/$t.log" | head -40
done
printf '%s\n' "${summary[@]}"
exit $status
