#!/usr/bin/env bash
# Where attn_bwd and attn_dq (the dense N = 8192 D = 128 case of bench/attention_ncu_target.py)
# spend their warps' time, instruction by instruction: Nsight Compute's warp-state sampling per
# SASS instruction (SourceCounters), the 30 instructions with the most samples per kernel with
# their stall reasons, and each reason's share of all samples. Writes $OUT/sass_<kernel>.csv (the
# whole source page) and prints the tops (tools/ncu_sass_listing.py lists a CSV instruction by
# instruction, with sums over phases). TARGET_ARGS go to the target (e.g. the five-product
# backward: SKIP=1 COUNT=1 TARGET_ARGS='--dense-only --atomic-dq 1 --issue 1 --config
# BULK=1,PRODUCER=1'); KERNELS (a regex) and KERNEL_NAMES (a list) pick other kernels (e.g.
# SKIP=1 COUNT=1 KERNELS=attn_fwd_sparse KERNEL_NAMES=attn_fwd_sparse: the 10% forward).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
need_ncu
timeout 300 "$NCU" --clock-control none --kernel-name-base function -k "regex:^${KERNELS:-attn_(bwd|dq)}$" \
  --launch-skip ${SKIP:-2} --launch-count ${COUNT:-2} --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section LaunchStats \
  --import-source no -o "$out/sass" $PY bench/attention_ncu_target.py ${TARGET_ARGS:-} >"$out/ncu_sass.log" 2>&1
echo "ncu: exit $?"; tail -3 "$out/ncu_sass.log"
for k in ${KERNEL_NAMES:-attn_bwd attn_dq}; do
  "$NCU" --import "$out/sass.ncu-rep" -k "$k" --page source --csv --print-source sass \
    >"$out/sass_$k.csv" 2>"$out/sass_$k.err"
  echo "== $k: $(wc -l <"$out/sass_$k.csv") lines"
  $PY - "$out/sass_$k.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr_i = next(i for i, r in enumerate(rows) if any("Source" == c for c in r))
hdr, body = rows[hdr_i], rows[hdr_i + 1:]
def col(name):
    for i, c in enumerate(hdr):
        if c == name:
            return i
    return None
src = col("Source")
samp = col("Warp Stall Sampling (All Samples)")
if samp is None:
    print("columns:", hdr[:40]); sys.exit()
stall_cols = [(i, c) for i, c in enumerate(hdr)
              if "stall" in c.lower() and "Sampling" not in c]
if not stall_cols:
    print("no per-reason columns; header:", [c for c in hdr][:60])
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return 0.0
total = sum(num(r[samp]) for r in body if len(r) > samp)
print(f"total samples {total:.0f}; columns with stall reasons: {len(stall_cols)}")
shares = sorted(((sum(num(r[i]) for r in body if len(r) > i), c) for i, c in stall_cols),
                reverse=True)[:10]
print("  ".join(f"{c.replace('stall_', '')} {100 * v / max(total, 1):.1f}%" for v, c in shares))
top = sorted((r for r in body if len(r) > samp), key=lambda r: -num(r[samp]))[:30]
for r in top:
    reasons = sorted(((num(r[i]), c) for i, c in stall_cols), reverse=True)[:3]
    rs = ", ".join(f"{c.replace('stall_', '')} {v:.0f}" for v, c in reasons if v > 0)
    print(f"{100 * num(r[samp]) / max(total, 1):5.1f}%  {r[src][:70]:70s}  {rs}")
PY
done
