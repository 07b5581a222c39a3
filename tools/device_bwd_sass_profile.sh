#!/usr/bin/env bash
# Where attention's backward kernel (attn_bwd with dq by atomics, the Hopper tile) spends its
# time, instruction by instruction: Nsight Compute's warp-state sampling on the SASS, summed
# per opcode class and listed for the hottest instructions. One call, a table last.
#   SHAPE=B=4,H=16,N=8192,D=128 tools/device_bwd_sass_profile.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ncu_common.sh
SHAPE=${SHAPE:-B=4,H=16,N=8192,D=128}
SETS=${SETS:-backward:TR=1,backward:BN=128,backward:BM=64,backward:WARPS=8,backward:STAGES=2}
$NCU --clock-control none -k 'regex:^attn_bwd$' -c 1 --section WarpStateStats \
  --section SourceCounters --section SpeedOfLight -f -o "$out/bwd" \
  "$B" run --workload attention --dtype bf16 --shape "$SHAPE" --plan "${PLAN:-atomic_dq}" \
  --set "$SETS" --seed 7 >"$out/ncu_run.txt" 2>&1
echo "ncu: exit $?"; tail -3 "$out/ncu_run.txt"
$NCU -i "$out/bwd.ncu-rep" --page source --print-source sass --csv >"$out/sass.csv" 2>"$out/sass.err"
echo "source page: exit $? ($(wc -l <"$out/sass.csv") lines)"; head -c 600 "$out/sass.csv"; echo
$NCU -i "$out/bwd.ncu-rep" --page details --print-units base >"$out/details.txt" 2>&1
grep -E "Duration|Warp Cycles Per Issued|Compute \(SM\) Throughput|Memory Throughput" "$out/details.txt" | head -6
python3 - "$out/sass.csv" <<'PY'
import csv, sys, collections, re
rows = list(csv.reader(open(sys.argv[1])))
if not rows:
    sys.exit("no rows")
head = rows[0]
print("columns:", head[:12], "...", len(head))
def col(name):
    for i, h in enumerate(head):
        if h.strip().lower() == name.lower():
            return i
    return None
src = col("Source")
samp = col("Warp Stall Sampling (All Samples)") or col("Warp Stall Sampling (All Samples) [%]")
if src is None or samp is None:
    print("no Source / sampling columns; first rows:", rows[1:3]); sys.exit()
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return 0.0
total = sum(num(r[samp]) for r in rows[1:] if len(r) > samp)
by_op = collections.Counter()
for r in rows[1:]:
    if len(r) <= samp: continue
    op = re.split(r"[ .]", r[src].strip().lstrip("@!P0123456789 "), 1)[0]
    by_op[op] += num(r[samp])
print(f"total samples {total:.0f}")
print("| opcode | samples % |")
for op, v in by_op.most_common(18):
    print(f"| {op} | {100 * v / max(total, 1):.1f} |")
stall_cols = [i for i, h in enumerate(head) if h.startswith("Warp Stall Sampling") is False and "stall" in h.lower()]
hot = sorted((r for r in rows[1:] if len(r) > samp), key=lambda r: -num(r[samp]))[:30]
print("| samples % | instruction |")
for r in hot:
    print(f"| {100 * num(r[samp]) / max(total, 1):.1f} | {r[src].strip()[:90]} |")
PY
