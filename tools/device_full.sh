#!/usr/bin/env bash
# One GPU-machine run: GPU correctness tests (a subset: TESTS), tune paged_sparse into a fresh
# database, time the tuned kernels, the shared Triton yardstick and our own peers, and print
# the paired report. Everything lands in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 TILEJIT_CACHE_DIR=/tmp/tilejit-modules
bin=.device/bin
GTEST_ARGS="--gtest_filter=${TESTS:-GpuPagedSparse.Ragged*}" tools/gpu_check.sh 2>&1 | tail -4
db="$out/tilejit.db"
"$bin/tilejit" --db "$db" tune --workload paged_sparse --budget "${BUDGET:-30}" >"$out/tune.txt" 2>"$out/tune.err"
tail -3 "$out/tune.txt"
"$bin/tilejit" --db "$db" bench --workload paged_sparse --commit "${COMMIT:-unknown}" --repeats 30 \
  --out "$out/tilejit.jsonl" >"$out/bench.txt" 2>"$out/bench.err"
[ -d .peers ] && timeout 150 python3 .peers/run_all.py --only paged_sparse --out "$out/yardstick.jsonl" >"$out/yardstick.log" 2>&1
timeout "${PEER_SECONDS:-170}" python3 bench/peers/paged_sparse_peer.py --out "$out/peer.jsonl" --budget 140 \
  --commit "${COMMIT:-unknown}" >"$out/peer.log" 2>&1
python3 bench/report.py --tilejit "$out/tilejit.jsonl" --peers "$out/peer.jsonl" "$out/yardstick.jsonl" \
  --markdown "$out/report.md" 2>&1 | tail -45
