#!/usr/bin/env python3
"""Bad arguments to the attention (fp32 GQA, SDPA quick, flex block-sparse), gated_delta (FLA) and hbv peer scripts are refused before torch is imported, with
a message naming the argument (no GPU or torch needed).

    python3 tests/bench/test_peer_args.py
"""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "bench", "peers", script), *args],
                          capture_output=True, text=True, timeout=60)


# Per script: (arguments, what stderr must contain); each must exit 2 (argparse's usage error).
CASES = {
    "attention_fp32_gqa.py": [(["--group", "3"], "--group 3 must divide 8"),
                              (["--group", "0"], "--group 0 must divide 8"),
                              (["--group", "four"], "invalid int value")],
    "hbv_peer.py": [(["--out", "x.jsonl", "--quick", "--grid"], "--quick and --grid"),
                    (["--out", "x.jsonl", "--grid", "3"], "unrecognized arguments: 3"),
                    (["--grid"], "--out")],
    "sdpa_flash_quick.py": [(["--shapes", "2048:x"], "'2048:x' is not N:D or N:D:causal"),
                            (["--shapes", "2048:64:sideways"], "is not N:D or N:D:causal"),
                            (["--shapes", "2048"], "'2048' is not N:D")],
    "flex_sparse.py": [(["--n", "8192,x"], "--n '8192,x' is not a comma-separated list"),
                       (["--densities", "10,0"], "--densities 0 is outside 1..100"),
                       (["--n", "64"], "--n 64 is outside 128..")],
    "fla_gated_delta.py": [(["--fla", "/nonexistent"], "--fla /nonexistent: no fla package there"),
                           (["--fla", ".", "--shapes", "4:2048:16"], "'4:2048:16' is not B:T:H:D"),
                           (["--fla", ".", "--shapes", "4:0:16:128"], "is not B:T:H:D"),
                           (["--shapes", "4:8:1:8"], "--fla"),
                           (["--op", "recurrence", "--shapes", "4:8:1"], "is not B:T:H:D"),
                           (["--fla", ".", "--op", "gla"], "invalid choice: 'gla'")],
}


def main():
    failures = []
    for script, cases in CASES.items():
        for args, want in cases:
            r = run(script, *args)
            if r.returncode != 2 or want not in r.stderr:
                failures.append(f"{script} {' '.join(args)}: exit {r.returncode}, "
                                f"stderr {r.stderr.strip()!r} (wanted exit 2 and {want!r})")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
