#!/usr/bin/env bash
# One GPU-machine run: GPU correctness tests (a subset: TESTS; SKIP_TESTS=1 skips them), tune
# paged_sparse into a fresh database, time the tuned kernels, the shared Triton yardstick and
# our own peers, and print the paired report. At most 8 files come back from the device, so
# only the results land in $OUT (report, three JSON-lines files, the tuning table and export);
# logs stay in /tmp/tilejit-logs. PART=tilejit stops after the tuning and tilejit's bench;
# PART=peers only times the peers (bench/report.py pairs the rows of both calls afterwards),
# for two back-to-back calls on one warm machine when one call's time limit is too short.
# IMPORT=FILE (a `tilejit cache export` of an earlier tune, carried) skips tuning: the winners are
# imported into the fresh database and benched, so one call can bench tilejit and time the peers.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
logs=/tmp/tilejit-logs; mkdir -p "$logs"
export PYTHONUNBUFFERED=1 TILEJIT_CACHE_DIR=/tmp/tilejit-modules
bin=.device/bin
[ -n "${SKIP_TESTS:-}" ] || OUT=$logs GTEST_ARGS="--gtest_filter=${TESTS:-GpuPagedSparse.Ragged*}" \
  tools/gpu_check.sh 2>&1 | tail -4
db="$logs/tilejit.db"
if [ "${PART:-all}" != peers ]; then
start=$(date +%s)
if [ -n "${IMPORT:-}" ]; then
  "$bin/tilejit" --db "$db" cache import "$IMPORT" 2>&1 | tail -1
else
  "$bin/tilejit" --db "$db" tune --workload paged_sparse --budget "${BUDGET:-30}" >"$out/tune.txt" 2>"$logs/tune.err"
  echo "tuned in $(( $(date +%s) - start )) s"; tail -2 "$out/tune.txt"
  "$bin/tilejit" --db "$db" cache export "$out/tuning.json" >/dev/null 2>>"$logs/tune.err"
fi
"$bin/tilejit" --db "$db" bench --workload paged_sparse --commit "${COMMIT:-unknown}" --repeats 30 \
  --out "$out/tilejit.jsonl" >"$logs/bench.txt" 2>"$logs/bench.err"
grep -c '"config_source": *"tuned winner for the exact' "$out/tilejit.jsonl" |
  sed 's/$/ tilejit rows used an exact tuned winner/'
fi
[ "${PART:-all}" = tilejit ] && exit 0
[ -d .peers ] && timeout "${YARDSTICK_SECONDS:-150}" python3 .peers/run_all.py --only paged_sparse \
  --out "$out/yardstick.jsonl" >"$logs/yardstick.log" 2>&1
rm -f "$out"/yardstick.jsonl.*
timeout "${PEER_SECONDS:-170}" python3 bench/peers/paged_sparse_peer.py --out "$out/peer.jsonl" --budget 140 \
  --commit "${COMMIT:-unknown}" >"$logs/peer.log" 2>&1
[ -f "$out/tilejit.jsonl" ] || { echo "peers timed; no tilejit rows here: run bench/report.py where they are"; exit 0; }
python3 bench/report.py --tilejit "$out/tilejit.jsonl" --peers "$out/peer.jsonl" "$out/yardstick.jsonl" \
  --markdown "$out/report.md" 2>&1 | tail -45
