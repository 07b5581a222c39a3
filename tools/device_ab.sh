#!/usr/bin/env bash
# A/B timing of two tilejit builds on the GPU machine, in one call: the working tree's
# (.device/bin/tilejit) and another commit's (.device/bin/tilejit_base, from
# tools/stage_base.sh), each case at one configuration, the two builds alternating for ROUNDS
# rounds on fresh inputs. Prints one line per measurement and a table of medians last.
#   CASES="D256/ps16/ctx32768/r0.04@CHUNK=128,BN=32,STAGES=3,WARPS=2,PF=0 ..." ROUNDS=2 \
#     tools/device_ab.sh
# TUNE=N: each build first tunes each case (N trials, its own database) and is then timed at
# its own winner; a case may then leave out "@config". For variants whose best configurations
# differ (another kernel formulation, a changed tuning space).
# BUILDS="tilejit_base tilejit tilejit_b ...": more builds staged in .device/bin, compared in one
# call (the first is the base every ratio divides by).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
bin=.device/bin
builds=${BUILDS:-tilejit_base tilejit}
for b in $builds; do
  [ -x "$bin/$b" ] || { echo "device_ab: $bin/$b is missing (tools/stage_base.sh REV, then tools/stage_device.sh)"; exit 2; }
done
: "${CASES:?CASES: space-separated case@config pairs, e.g. D256/ps16/ctx32768/r0.04@CHUNK=128,BN=32}"
rows=$out/ab.tsv; : >"$rows"
if [ -n "${TUNE:-}" ]; then
  for cc in $CASES; do
    for b in $builds; do
      "$bin/$b" --db "/tmp/ab-$b.db" tune --workload paged_sparse --case "${cc%%@*}" --budget "$TUNE" \
        2>/dev/null | tail -2 | head -1 | sed "s/^/$b tuned: /"
    done
  done
fi
for round in $(seq "${ROUNDS:-2}"); do
  for cc in $CASES; do
    c=${cc%%@*}; cfg=""; [ "$cc" != "$c" ] && cfg=${cc#*@}
    set_cfg=(); [ -n "$cfg" ] && [ -z "${TUNE:-}" ] && set_cfg=(--set "$cfg")
    label=${cfg:-default}; [ -n "${TUNE:-}" ] && label=tuned
    for b in $builds; do
      us=$("$bin/$b" --db "/tmp/ab-$b.db" bench --workload paged_sparse --case "$c" "${set_cfg[@]}" \
             --out "/tmp/ab-$b.jsonl" 2>/dev/null | awk '$1 == "f16" { print $(NF-3) }' | tail -1)
      printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$c" "$label" "$b" "${us:-failed}" | tee -a "$rows"
    done
  done
done
python3 - "$rows" $builds <<'PY'
import statistics, sys
from collections import defaultdict
builds = sys.argv[2:]
t = defaultdict(list)
for line in open(sys.argv[1]):
    r, c, cfg, b, us = line.rstrip("\n").split("\t")
    if us != "failed":
        t[(c, cfg, b)].append(float(us))
med = lambda v: statistics.median(v) if v else float("nan")
print(f"{'case':28} {'config':12} " + " ".join(f"{b[:14]:>14}" for b in builds) + "   (us; x = base/build)")
for c, cfg in dict.fromkeys((c, cfg) for c, cfg, _ in t):
    base = med(t.get((c, cfg, builds[0])))
    cells = [f"{med(t.get((c, cfg, b))):7.1f} {base / med(t.get((c, cfg, b))):5.2f}x" for b in builds]
    print(f"{c:28} {cfg[:12]:12} " + " ".join(f"{x:>14}" for x in cells))
PY
