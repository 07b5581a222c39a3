#!/usr/bin/env python3
"""Runs our Triton peer (paged_sparse_peer.py) on one shape with one fixed configuration, for a
profiler such as Nsight Compute: no search, no reference check, a few plain launches.

    python3 bench/peers/peer_one_config.py --case D256/ps16/ctx131072/r0.05 \
        --config BN64/w4/s2/nopf/split512 [--launches 3]

The case is written the way `tilejit run --case` takes it; the config the way the peer's rows
name theirs (BLOCK_N / warps / stages / pf|nopf / split tokens)."""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paged_sparse_peer as peer  # noqa: E402


def parse_case(text):
    m = re.fullmatch(r"D(\d+)/ps(\d+)/ctx(\d+)/r([0-9.]+)", text)
    if not m:
        raise SystemExit(f"--case {text!r}: expected D<d>/ps<page size>/ctx<tokens>/r<ratio>")
    return int(m[1]), int(m[2]), int(m[3]), float(m[4])


def parse_config(text):
    m = re.fullmatch(r"BN(\d+)/w(\d+)/s(\d+)/(pf|nopf)/split(\d+)", text)
    if not m:
        raise SystemExit(f"--config {text!r}: expected BN<n>/w<warps>/s<stages>/pf|nopf/split<tokens>")
    return peer.KernelConfig(int(m[1]), int(m[2]), int(m[3]), m[4] == "pf"), int(m[5])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--launches", type=int, default=3)
    a = p.parse_args()
    d, ps, ctx, ratio = parse_case(a.case)
    kc, split = parse_config(a.config)
    torch = peer.torch
    torch.manual_seed(0)
    dev = peer.DEVICE
    kd = torch.randn(peer.B, peer.HKV, ctx, d, device=dev, dtype=torch.float16)
    vd = torch.randn_like(kd)
    q = torch.randn(peer.B, peer.HQ, d, device=dev, dtype=torch.float16)
    kcache, vcache, bt = peer.page_cache(kd, vd, ps)
    del kd, vd
    n = peer.kept_count(ctx, ratio)
    kept_idx, kept_len = peer.random_kept(peer.B, peer.HKV, ctx, n, dev)
    seq_lens = torch.full((peer.B,), ctx, dtype=torch.int32, device=dev)
    inp = peer.DecodeInputs(q, kcache, vcache, bt, seq_lens, kept_idx, kept_len, 1.0 / math.sqrt(d))
    run = peer.SplitKDecode(inp, kc, split, peer.Workspace())
    for _ in range(a.launches):
        run()
    torch.cuda.synchronize()
    print(f"ran {run.name()} on {a.case} (kept {n}) {a.launches} times")


if __name__ == "__main__":
    main()
