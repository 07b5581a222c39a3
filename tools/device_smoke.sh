#!/usr/bin/env bash
# A short GPU-machine check of the command line: tune (cold, then warm), tune of a .tile file,
# run (a workload and a .tile against the interpreter), bench through the database, cache list.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin/tilejit; DB="$out/smoke.db"
$B --db "$DB" tune --workload paged_sparse --case ctx32768/r0.02 --budget 12 2>/dev/null | tail -6
start=$(date +%s%N)
$B --db "$DB" tune --workload paged_sparse --case ctx32768/r0.02 2>/dev/null | tail -2
echo "warm re-run: $(( ($(date +%s%N) - start) / 1000000 )) ms"
$B --db "$DB" tune embedded:examples/gemm.tile --shape M=500,N=300,K=256 --set T=f16 --budget 10 2>/dev/null | tail -3
$B run --workload paged_sparse --case D128/ps16/ctx32768/r0.02 --dtype both | tail -3
$B run embedded:examples/softmax.tile --shape R=37,C=1000 --set T=bf16 | tail -3
$B --db "$DB" bench --workload paged_sparse --case ps16/ctx32768/r0.02 --out "$out/b.jsonl" 2>/dev/null | tail -3
$B --db "$DB" cache list | head -8
