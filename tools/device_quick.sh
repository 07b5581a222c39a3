#!/usr/bin/env bash
# A short GPU-machine round for kernel work: the paged_sparse and example GPU tests, then tune,
# time and compare on the five shapes of the peers' --quick mode (our Triton peer and the
# shared yardstick, same run), and print the paired table last.
#   BUDGET=40 TESTS='GpuPagedSparse.Ragged*:GpuExamples.*' tools/device_quick.sh
# CASES='D128/ps64/ctx32768/r0.02 ...' picks other shapes of the grid: our peer then times exactly
# those (the yardstick's quick mode has its own five shapes, so it is skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
# At most 8 files come back from the device: results go to $OUT (tune.txt, tilejit.jsonl,
# peer.jsonl, yardstick.jsonl, report.md, quick.db), logs to /tmp/tilejit-logs. TESTS=none
# skips the GPU tests.
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
logs=/tmp/tilejit-logs; mkdir -p "$logs"
export PYTHONUNBUFFERED=1 TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin/tilejit; db="$out/quick.db"
[ "${TESTS:-}" = none ] || OUT=$logs GTEST_ARGS="--gtest_filter=${TESTS:-GpuPagedSparse.Ragged*:GpuExamples.*}" \
  tools/gpu_check.sh 2>&1 | tail -6
quick_cases="D128/ps16/ctx131072/r0.02 D128/ps16/ctx131072/r0.05 D128/ps64/ctx131072/r0.05 \
  D256/ps16/ctx131072/r0.05 D256/ps64/ctx32768/r0.02"
for c in ${CASES:-$quick_cases}; do
  "$B" --db "$db" tune --workload paged_sparse --case "$c" --budget "${BUDGET:-40}" 2>>"$logs/tune.err" \
    | tail -2 | head -1 | tee -a "$out/tune.txt"
  "$B" --db "$db" bench --workload paged_sparse --case "$c" --commit "${COMMIT:-unknown}" \
    --out "$out/tilejit.jsonl" >>"$logs/bench.txt" 2>>"$logs/bench.err"
done
if [ -z "${NO_PEER:-}" ]; then
  if [ -n "${CASES:-}" ]; then peer_shapes=(--cases "$(echo $CASES | tr ' ' ',')"); else peer_shapes=(--quick); fi
  timeout 150 python3 bench/peers/paged_sparse_peer.py "${peer_shapes[@]}" --out "$out/peer.jsonl" --budget 100 \
    --commit "${COMMIT:-unknown}" >"$logs/peer.log" 2>&1
  [ -d .peers ] && [ -z "${CASES:-}" ] && timeout 120 python3 .peers/run_all.py --only paged_sparse --quick \
    --out "$out/yardstick.jsonl" >"$logs/yardstick.log" 2>&1
  peers=("$out/peer.jsonl"); [ -f "$out/yardstick.jsonl" ] && peers+=("$out/yardstick.jsonl")
  python3 bench/report.py --tilejit "$out/tilejit.jsonl" --peers "${peers[@]}" \
    --markdown "$out/report.md" 2>&1 | tail -14
fi
