#!/usr/bin/env bash
# One GPU-machine call for platform work: every GPU test (gpu_check.sh, with the workload
# tests), the launch-path benchmark (Runtime::launch against cuLaunchKernel), and a same-run
# A/B of the working tree's CLI against another commit's (tools/stage_base.sh) at fixed
# configurations (tools/device_ab.sh). Results in $OUT: tests/*.log, launch.jsonl, ab.tsv.
#   TESTS=gtest-filter AB_CASES="case@config ..." tools/device_platform.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out/tests"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
if [ "${TESTS:-all}" != none ]; then
  filter=(); [ "${TESTS:-all}" != all ] && filter=(GTEST_ARGS="--gtest_filter=$TESTS")
  env "${filter[@]}" OUT="$out/tests" EXTRA_GPU_TESTS=gpu_workloads_test tools/gpu_check.sh 2>&1 | tail -25
fi
echo "--- launch path"
.device/bin/tilejit_launch_bench --json "$out/launch.jsonl"
if [ -n "${AB_CASES:-}" ] && [ -x .device/bin/tilejit_base ]; then
  echo "--- A/B against $(.device/bin/tilejit_base --version 2>/dev/null || echo the base build)"
  CASES="$AB_CASES" ROUNDS=${ROUNDS:-2} tools/device_ab.sh 2>&1 | tail -12
fi
