#!/usr/bin/env python3
"""Puts paged_sparse's timings beside the speed of light measured in the same device call.

    python3 bench/sol/sol_report.py SOL.tsv --peer PEER.jsonl --tilejit AB.tsv|TILEJIT.jsonl

SOL.tsv is bench/sol/paged_sparse_gather_sol.cu's output; PEER.jsonl bench/peers' rows; the
tilejit times are either `tilejit bench` JSON lines or tools/device_ab.sh's ab.tsv (median over
rounds). Prints a markdown table and the geometric means of peer/SOL: how much faster than the
peer any kernel that reads the kept K/V rows could be when timed this way.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def shape_key(D, ps, ctx, r):
    return (int(D), int(ps), int(ctx), round(float(r), 4))


def read_sol(path):
    rows, header = {}, ""
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if line.startswith("#"):
            header = " ".join(x for x in f[1:] if x)
            continue
        if f[0] == "shape":
            continue
        d, ps, ctx, r = (p.split("=")[1] for p in f[0].split())
        rows[shape_key(d, ps, ctx, r)] = {"kept": int(f[1]), "floor": float(f[2]),
                                          "stream": float(f[3]), "flat": float(f[4]),
                                          "chain": float(f[5]), "chain_config": f[7], "checks": f[8]}
    return header, rows


def read_peer(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("impl") == "triton_peer" and r.get("variant") == "sparse" and r.get("ms"):
            s = r["shape"]
            out[shape_key(s["D"], s["ps"], s["ctx"], s["r"])] = r["ms"] * 1e3
    return out


def read_tilejit(path):
    times = defaultdict(list)
    for line in open(path):
        if path.endswith(".jsonl"):
            r = json.loads(line)
            if r.get("impl") == "tilejit" and r.get("correct"):
                s = r["shape"]
                times[shape_key(s["D"], s["ps"], s["ctx"], s["r"])].append(r["ms"] * 1e3)
            continue
        _, case, _, _, us = line.rstrip("\n").split("\t")
        if us != "failed":
            d, ps, ctx, r = case.split("/")
            times[shape_key(d[1:], ps[2:], ctx[3:], r[1:])].append(float(us))
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sol")
    ap.add_argument("--peer", required=True)
    ap.add_argument("--tilejit", required=True)
    a = ap.parse_args(argv)
    header, sol = read_sol(a.sol)
    peer, tj = read_peer(a.peer), read_tilejit(a.tilejit)
    keys = [k for k in sol if k in peer and k in tj]
    if not keys:
        sys.exit("sol_report: no shape has a SOL row, a peer row and a tilejit time")
    print(f"Device: {header}\n")
    print("| shape | kept | floor µs | stream µs | flat µs | chain µs | tilejit µs | peer µs "
          "| peer / chain | tilejit / chain |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        s = sol[k]
        print(f"| D={k[0]} ps={k[1]} ctx={k[2]} r={k[3]} | {s['kept']} | {s['floor']:.1f} "
              f"| {s['stream']:.1f} | {s['flat']:.1f} | {s['chain']:.1f} | {tj[k]:.1f} "
              f"| {peer[k]:.1f} | {peer[k] / s['chain']:.2f}x | {tj[k] / s['chain']:.2f}x |")
    g = statistics.geometric_mean
    print()
    for name in ("stream", "flat", "chain"):
        ratios = [peer[k] / sol[k][name] for k in keys]
        print(f"- peer / {name}: geometric mean {g(ratios):.2f}x, max {max(ratios):.2f}x")
    print(f"- tilejit / chain: geometric mean {g([tj[k] / sol[k]['chain'] for k in keys]):.2f}x")
    print(f"- peer / tilejit: geometric mean {g([peer[k] / tj[k] for k in keys]):.2f}x")
    big = [k for k in keys if sol[k]["floor"] > 20]
    below = [k for k in big if 100 * sol[k]["floor"] / sol[k]["chain"] < 60]
    print(f"- shapes whose floor is over 20 µs where even the chain SOL is under 60% of the floor: "
          f"{len(below)} of {len(big)}")
    bad = [k for k in keys if sol[k]["checks"] != "ok"]
    if bad:
        print(f"- CHECKSUM MISMATCH on {len(bad)} shapes: those SOL rows are not valid")


if __name__ == "__main__":
    main()
