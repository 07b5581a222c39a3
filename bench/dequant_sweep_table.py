#!/usr/bin/env python3
"""The best tilejit time per (shape, value of one tunable) from `tilejit bench --sweep` rows,
beside fp16 cuBLAS rows of bench/peers/dequant_gemm_peer.py from the same run.

    python3 bench/dequant_sweep_table.py --sweeps S.jsonl --fp16 F.jsonl [--split WG]
"""
import argparse
import json
import re
import sys


def rows(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def linear_config(row):
    """The linear step's configuration text of a bench row ('' when absent)."""
    m = re.search(r"linear:(\S+)", row.get("config", ""))
    return m.group(1) if m else row.get("config", "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", required=True)
    ap.add_argument("--fp16", required=True)
    ap.add_argument("--split", default="WG",
                    help="tunables (comma-separated) whose combined values get a column each")
    a = ap.parse_args(argv)
    fp16 = {}
    for r in rows(a.fp16):
        if r.get("peer") == "cublas_fp16" and r.get("ms"):
            s = r["shape"]
            fp16[(s["M"], s["N"], s["K"])] = r["ms"]
    best, wrong = {}, 0
    for r in rows(a.sweeps):
        if r.get("impl") != "tilejit" or not r.get("ms"):
            continue
        if not r.get("correct", False):
            wrong += 1
            continue
        s = r["shape"]
        cfg = linear_config(r)
        parts = []
        for name in a.split.split(","):
            m = re.search(rf"(?:^|,){re.escape(name)}=([^,]+)", cfg)
            parts.append(f"{name}={m.group(1) if m else '?'}")
        key = ((s["M"], s["N"], s["K"]), ",".join(parts))
        if key not in best or r["ms"] < best[key][0]:
            best[key] = (r["ms"], cfg)
    values = sorted({k[1] for k in best})
    shapes = sorted({k[0] for k in best}, key=lambda t: (t[1], t[2], t[0]))
    head = ["M x N x K", "fp16 us"] + [f"{v} us (vs fp16)" for v in values]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for sh in shapes:
        f = fp16.get(sh)
        cells = [f"{sh[0]} x {sh[1]} x {sh[2]}", f"{f * 1e3:.1f}" if f else "-"]
        for v in values:
            b = best.get((sh, v))
            if not b:
                cells.append("-")
                continue
            ratio = f" ({f / b[0]:.2f}x)" if f else ""
            cells.append(f"{b[0] * 1e3:.1f}{ratio}")
        print("| " + " | ".join(cells) + " |")
    print()
    for sh in shapes:
        for v in values:
            if (sh, v) in best:
                print(f"{sh} {v}: {best[(sh, v)][1]}")
    if wrong:
        print(f"\n{wrong} rows were not correct (left out)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
