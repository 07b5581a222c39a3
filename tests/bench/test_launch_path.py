#!/usr/bin/env python3
"""Runs bench/launch_path's program on this machine (no GPU needed: its CPU part compiles
paged_sparse for sm_90a with NVRTC) and checks what it measures: the host work a repeated launch
of a known shape does before the driver call (prepare + packing) against what every launch did
before prepared launches (resolve_config + compile). The two differ by ~50x, so the check (at
least 4x) holds on a loaded machine too.

    python3 tests/bench/test_launch_path.py --bench build/tilejit_launch_bench
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "launch.jsonl")
        run = subprocess.run([args.bench, "--json", out], capture_output=True, text=True,
                             timeout=300)
        print(run.stdout, run.stderr, sep="")
        if run.returncode != 0:
            print("FAIL: exit", run.returncode)
            return 1
        rows = [json.loads(line) for line in open(out)]
    cpu = [r for r in rows if r.get("part") == "cpu"]
    failures = []
    if len(cpu) != 1:
        failures.append(f"expected one cpu row, got {len(cpu)}")
    else:
        r = cpu[0]
        if not (r["prepare_and_pack_us"] > 0 and r["before_us"] > 0):
            failures.append(f"times must be positive: {r}")
        elif r["prepare_and_pack_us"] * 4 > r["before_us"]:
            failures.append(f"a prepared launch is not much cheaper than re-planning: {r}")
        if r["kernel"] != "paged_sparse_decode":
            failures.append(f"measured kernel {r['kernel']}")
    if "prepare hit + argument packing" not in run.stdout:
        failures.append("the table line for the prepared launch is missing")
    for f in failures:
        print("FAIL:", f)
    print(f"{1 - bool(failures)} passed, {int(bool(failures))} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
