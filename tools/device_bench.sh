#!/usr/bin/env bash
# Device step 2 (GPU machine): time the tuned kernels, our Triton/SDPA peers and the shared
# yardstick in one run, then print the paired report.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 TILEJIT_CACHE_DIR=/tmp/tilejit-modules
db=.device/db/tilejit.db
.device/bin/tilejit --db "$db" bench --workload paged_sparse --dtype "${DTYPE:-f16}" --commit "${COMMIT:-unknown}" \
  --out "$out/tilejit.jsonl" 2>"$out/bench.err" | tail -30
python3 bench/peers/paged_sparse_peer.py --out "$out/peer.jsonl" ${PEER_ARGS:-} >"$out/peer.log" 2>&1; tail -5 "$out/peer.log"
[ -d .peers ] && python3 .peers/run_all.py --only paged_sparse --out "$out/yardstick.jsonl" >"$out/yardstick.log" 2>&1
python3 bench/report.py --tilejit "$out/tilejit.jsonl" --peers "$out/peer.jsonl" "$out/yardstick.jsonl" --markdown "$out/report.md"
