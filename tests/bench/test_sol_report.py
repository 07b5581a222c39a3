#!/usr/bin/env python3
"""CPU test for bench/sol/sol_report.py (standard library only).

    python3 tests/bench/test_sol_report.py

Runs the report on the recorded H100 run in bench/results (speed of light, peer, tilejit from
one device call) and checks its ratios against ones computed here from the same files, then on
a copy whose first SOL row failed its checksum, which the report must flag.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REPORT = os.path.join(ROOT, "bench", "sol", "sol_report.py")
RUN = os.path.join(ROOT, "bench", "results", "2026-11-22-3e09a3b-paged_sparse-h100-sol")


def run(sol, peer, tilejit):
    return subprocess.run([sys.executable, REPORT, sol, "--peer", peer, "--tilejit", tilejit],
                          capture_output=True, text=True, check=True).stdout


def main():
    sol, peer, tj = RUN + ".tsv", RUN + "-peer.jsonl", RUN + "-tilejit.tsv"
    out = run(sol, peer, tj)
    rows = [l for l in out.splitlines() if l.startswith("| D=")]
    failures = []
    if len(rows) != 24:
        failures.append(f"expected 24 shapes, got {len(rows)}")
    # peer / chain per row, recomputed from the table's own columns (chain, peer).
    ratios = []
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        chain, peer_us, shown = float(cells[5]), float(cells[7]), float(cells[8].rstrip("x"))
        if abs(peer_us / chain - shown) > 0.006:
            failures.append(f"{cells[0]}: peer/chain {peer_us / chain:.3f} shown as {shown}")
        ratios.append(peer_us / chain)
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    m = re.search(r"peer / chain: geometric mean ([0-9.]+)x", out)
    if not m or abs(float(m.group(1)) - gm) > 0.006:
        failures.append(f"geometric mean of peer/chain: report {m and m.group(1)}, here {gm:.3f}")
    if "CHECKSUM MISMATCH" in out:
        failures.append("the recorded run has no checksum mismatch, but the report says so")
    with tempfile.TemporaryDirectory() as d:
        lines = open(sol).read().splitlines()
        first = next(i for i, l in enumerate(lines) if l.startswith("D="))
        lines[first] = lines[first].rsplit("\t", 1)[0] + "\tCHECKSUM MISMATCH"
        bad = os.path.join(d, "sol.tsv")
        open(bad, "w").write("\n".join(lines) + "\n")
        if "CHECKSUM MISMATCH on 1 shapes" not in run(bad, peer, tj):
            failures.append("a row that failed its checksum is not flagged")
    for f in failures:
        print("FAIL", f)
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
