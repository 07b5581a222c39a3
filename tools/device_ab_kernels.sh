#!/usr/bin/env bash
# A/B timing of any .tile kernels between two staged builds (.device/bin/tilejit_base from
# tools/stage_base.sh, and .device/bin/tilejit), alternating for ROUNDS rounds in one device
# call, with `tilejit bench FILE.tile` (random inputs, L2 flushed, median). One case per line
# of KERNEL_CASES: "FILE|SIZES|SETTINGS" (SIZES for --shape, SETTINGS for --set). Prints one
# line per measurement and a table of medians (base / build) last. Both builds need
# `bench FILE.tile` (cherry-pick it onto an older base).
set -uo pipefail
cd "$(dirname "$0")/.."
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
bin=.device/bin
rows=$out/ab_kernels.tsv; : >"$rows"
: "${KERNEL_CASES:?KERNEL_CASES: lines of FILE|SIZES|SETTINGS}"
for round in $(seq "${ROUNDS:-3}"); do
  while IFS='|' read -r file sizes settings; do
    [ -n "$file" ] || continue
    for b in tilejit_base tilejit; do
      us=$("$bin/$b" bench "$file" --shape "$sizes" --set "$settings" 2>/dev/null | awk 'NR > 2 { print $NF }' | tail -1)
      printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$(basename "$file" .tile)" "$sizes $settings" "$b" "${us:-failed}" | tee -a "$rows"
    done
  done <<< "$KERNEL_CASES"
done
python3 - "$rows" <<'PY'
import statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    r, k, case, b, us = line.rstrip("\n").split("\t")
    if us != "failed":
        t[(k, case, b)].append(float(us))
med = lambda v: statistics.median(v) if v else float("nan")
print(f"{'kernel':12} {'case':60} {'base us':>9} {'this us':>9} {'base/this':>9}")
for k, case in dict.fromkeys((k, c) for k, c, _ in t):
    a, b = med(t.get((k, case, "tilejit_base"))), med(t.get((k, case, "tilejit")))
    print(f"{k:12} {case[:60]:60} {a:9.2f} {b:9.2f} {a / b:8.2f}x")
PY
