#!/usr/bin/env bash
# One GPU-machine call that puts paged_sparse beside its speed of light: bench/sol's gather
# program (.device/bin/gather_sol, built by tools/build_sol.sh), then tilejit at fixed
# configurations (CASES, as tools/device_ab.sh takes them) and our Triton peer, all in the same
# run so that the three can be compared. Prints the SOL table and the A/B medians last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
bin=.device/bin
"$bin/gather_sol" ${SOL_ARGS:-} >"$out/sol.tsv" 2>"$out/sol.err" || { cat "$out/sol.err"; exit 1; }
if [ -n "${PEER:-}" ]; then
  timeout "${PEER_SECONDS:-170}" python3 bench/peers/paged_sparse_peer.py --out "$out/peer.jsonl" \
    --budget "${PEER_BUDGET:-140}" --commit "${COMMIT:-unknown}" >"$out/peer.log" 2>&1
fi
if [ -n "${CASES:-}" ]; then
  BUILDS=${BUILDS:-tilejit} ROUNDS=${ROUNDS:-1} timeout "${AB_SECONDS:-250}" tools/device_ab.sh \
    >"$out/ab.txt" 2>&1
fi
cat "$out/sol.tsv"
[ -f "$out/ab.txt" ] && tail -30 "$out/ab.txt"
exit 0
