#!/usr/bin/env python3
"""tools/ncu_sass_listing.py on a small source page written here in Nsight Compute's CSV form:
every instruction listed with its share of the samples and its main stall reasons, phases
summed, and bad input (not a source page, no sampling column, a malformed --phases) refused by
name (no GPU or ncu needed).

    python3 tests/bench/test_ncu_sass_listing.py
"""
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "ncu_sass_listing.py")
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)",
          "Warp Stall Sampling (Not-issued Samples)", "stall_long_sb",
          "stall_long_sb (Not Issued)", "stall_wait"]
ROWS = [["0x0", "HGMMA.64x64x16.F32.BF16 R152, gdesc[UR16], RZ", "10", "5", "0", "0", "10"],
        ["0x10", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "60", "50", "0", "0", "60"],
        ["0x20", "LDS.64 R10, [R8]", "30", "20", "25", "20", "5"]]


def write(path, header, rows, preamble=()):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        for line in preamble:  # ncu prints lines above the header
            w.writerow(line)
        w.writerow(header)
        w.writerows(rows)


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=60)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "sass.csv")
        write(page, HEADER, ROWS, preamble=[["==PROF== Connected"]])
        r = run(page, "--phases", "0:2:products,2:3:loads")
        lines = r.stdout.splitlines()
        if r.returncode != 0 or len(lines) != 5:
            failures.append(f"listing: exit {r.returncode}, {len(lines)} lines: {r.stdout}{r.stderr}")
        else:
            if not (lines[1].split()[1] == "60.00" and "wait:60" in lines[1]):
                failures.append(f"the barrier's line: {lines[1]}")
            if not ("long_sb:25" in lines[2] and "wait:5" in lines[2]):
                failures.append(f"the load's reasons, largest first: {lines[2]}")
            if not (lines[3].startswith("products") and "70.0%" in lines[3]):
                failures.append(f"phase sum: {lines[3]}")
            if not (lines[4].startswith("loads") and "30.0%" in lines[4]):
                failures.append(f"phase sum: {lines[4]}")
        no_source = os.path.join(d, "other.csv")
        write(no_source, ["a", "b"], [["1", "2"]])
        no_samples = os.path.join(d, "no_samples.csv")
        write(no_samples, ["Address", "Source"], [["0x0", "EXIT"]])
        for args, message in (([no_source], "no 'Source' column"),
                              ([no_samples], "no 'Warp Stall Sampling (All Samples)' column"),
                              ([page, "--phases", "0:x:bad"], "'0:x:bad' is not FIRST:END:NAME"),
                              ([page, "--phases", "3"], "'3' is not FIRST:END:NAME")):
            r = run(*args)
            if r.returncode == 0 or message not in r.stderr:
                failures.append(f"{args[1:] or args}: exit {r.returncode}, stderr {r.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
