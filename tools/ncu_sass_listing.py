#!/usr/bin/env python3
"""A kernel's SASS as Nsight Compute's source page sampled it (the CSV that
tools/ncu_attention_sass.sh writes, $OUT/sass_<kernel>.csv), one line per instruction: its index,
its share of all warp-state samples, the instruction, and its two main stall reasons. Then,
with --phases, the samples summed between instruction indices, so that a loop's phases (the
wait for a product, the exponentials, a barrier) can be compared after reading the listing.

    python3 tools/ncu_sass_listing.py sass_attn_bwd.csv > listing.txt
    python3 tools/ncu_sass_listing.py sass_attn_bwd.csv --phases 504:525:wait,525:669:scores

The shares are of the kernel's samples from every warp (producer warps included): a warp
waiting at a barrier counts as much as one issuing an instruction.
"""
import argparse
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_source_page(path):
    """(header, rows) of the source page: the header is the first row naming 'Source'."""
    rows = list(csv.reader(open(path)))
    for i, row in enumerate(rows):
        if "Source" in row:
            return row, rows[i + 1:]
    sys.exit(f"{path}: no 'Source' column (not an ncu --page source --csv export)")


def parse_phases(text):
    """'A:B:name,...' -> [(A, B, name)], instruction indices A <= i < B."""
    phases = []
    for part in filter(None, text.split(",")):
        fields = part.split(":")
        if len(fields) != 3 or not fields[0].isdigit() or not fields[1].isdigit():
            sys.exit(f"--phases: '{part}' is not FIRST:END:NAME (instruction indices)")
        phases.append((int(fields[0]), int(fields[1]), fields[2]))
    return phases


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", help="the source page (ncu -i REPORT --page source --csv "
                   "--print-source sass)")
    p.add_argument("--phases", default="", help="FIRST:END:NAME,... sums to print after it")
    args = p.parse_args()
    header, body = read_source_page(args.csv)
    if "Warp Stall Sampling (All Samples)" not in header:
        sys.exit(f"{args.csv}: no 'Warp Stall Sampling (All Samples)' column (profile with "
                 "--section SourceCounters)")
    source = header.index("Source")
    samples = header.index("Warp Stall Sampling (All Samples)")
    # Per-reason columns ('stall_long_sb', ...); the '(Not Issued)' ones repeat them.
    reasons = [(i, c) for i, c in enumerate(header)
               if "stall" in c.lower() and "Sampling" not in c and "Not Issued" not in c]
    total = sum(number(r[samples]) for r in body if len(r) > samples) or 1.0
    share = []
    for n, row in enumerate(body):
        s = 100 * number(row[samples]) / total if len(row) > samples else 0.0
        share.append(s)
        top = sorted(((number(row[i]), c) for i, c in reasons if len(row) > i), reverse=True)[:2]
        why = " ".join(f"{c.replace('stall_', '')}:{v:.0f}" for v, c in top if v > 0)
        print(f"{n:5d} {s:5.2f}  {row[source][:80]:80s} {why}")
    for first, end, name in parse_phases(args.phases):
        print(f"{name:30s} {sum(share[first:end]):5.1f}%  (instructions {first} to {end - 1})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
