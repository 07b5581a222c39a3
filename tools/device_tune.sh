#!/usr/bin/env bash
# Device step 1 (GPU machine): quick GPU correctness tests, then tune paged_sparse into a
# database kept under $OUT (carry it back with .device/db for the benchmark step).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
bin=.device/bin
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
GTEST_ARGS="--gtest_filter=${GPU_TEST_FILTER:-GpuExamples.*:GpuPagedSparse.Ragged*}" tools/gpu_check.sh 2>&1 | tail -8
db="$out/tilejit.db"
[ -f .device/db/tilejit.db ] && cp .device/db/tilejit.db "$db"
"$bin/tilejit" --db "$db" tune --workload paged_sparse --dtype "${DTYPE:-f16}" --budget "${BUDGET:-40}" 2>"$out/tune.err" | tee "$out/tune.txt"
tail -5 "$out/tune.err"
