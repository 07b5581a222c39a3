#!/usr/bin/env python3
"""The block-sparse forward as a persistent kernel (attn_fwd_sparse_tiles, the experiment in
bench/kernels/attention_fwd_persistent.tile: a block per multiprocessor taking the query tiles
in turn, the producer warps issuing each tile's q and first key tile) against a block per query tile (attn_fwd_sparse at the Hopper tile), on the same
lists and inputs. First the outputs compared on odd shapes (o and lse poisoned before each run;
the two do the same arithmetic, so bit-equal is expected), then both timed in turn
(alternating_ms) at bf16 B=4 H=16. One JSON line per case.

    PYTHONPATH=python:bench TILEJIT_LIBRARY=... python3 bench/attention_fwd_persistent_time.py [--out F]

Masks: "const" keeps round(density * nb) blocks in every query block row (the diagonal among
them; bench/peers/flex_sparse.py's masks), "bern" each block with probability density (the
diagonal always), so rows differ: the persistent kernel then takes the tiles in the natural
order or sorted by kept count, largest first, dealt to the programs in a snake (round r of
PROGRAMS tiles reversed when r is odd), so that each program's share of blocks evens out.
"""
import math
import os

from attention_bench_common import alternating_ms, session

TILE = {"BM": "128", "BN": "128", "WARPS": "8", "STAGES": "2"}
BASE = dict(TILE, SA="1", AHEAD="1", ISSUE="1", PRODUCER="1")
PROGRAMS = 132


def make_mask(torch, mb, mh, nb, density, kind, gen):
    if kind == "const":
        keep = max(1, round(density * nb))
        scores = torch.rand(mb, mh, nb, nb, generator=gen)
        scores += 2 * torch.eye(nb)  # the diagonal first
        idx = scores.topk(keep, dim=-1).indices
        m = torch.zeros(mb, mh, nb, nb, dtype=torch.bool)
        m.scatter_(-1, idx, True)
    else:
        m = torch.rand(mb, mh, nb, nb, generator=gen) < density
        m |= torch.eye(nb, dtype=torch.bool)
    return m


def lists(torch, mask):
    """The kernels' lists: per query block the kept count and the kept indices first."""
    cnt = mask.sum(-1, dtype=torch.int32)
    idx = torch.argsort((~mask).to(torch.int8), dim=-1, stable=True).to(torch.int32)
    return cnt.cuda().contiguous(), idx.cuda().contiguous()


def tile_order(torch, cnt, b, hq, n, bm, blk, snake):
    """Tile ids (b * HQ + h) * cdiv(N, BM) + m0 / BM: natural, or sorted and dealt in a snake."""
    nqt = (n + bm - 1) // bm
    total = b * hq * nqt
    if not snake:
        return torch.arange(total, dtype=torch.int32, device="cuda")
    c = cnt.cpu()
    qb = torch.arange(nqt) * bm // blk
    per_tile = c.expand(b, hq, -1)[:, :, qb].reshape(-1)
    ranked = torch.argsort(-per_tile, stable=True).tolist()
    order = []
    for r in range(0, total, PROGRAMS):
        chunk = ranked[r: r + PROGRAMS]
        order += chunk[::-1] if (r // PROGRAMS) % 2 else chunk
    return torch.tensor(order, dtype=torch.int32, device="cuda")


def main():
    s = session(__doc__, "attention_fwd_persistent_time")
    if s is None:
        return
    args, torch, tilejit, timer, emit = s
    rt = tilejit.Runtime()
    base = rt.load("embedded:workloads/attention.tile", "attn_fwd_sparse")
    here = os.path.dirname(os.path.abspath(__file__))
    tiles = rt.load(os.path.join(here, "kernels", "attention_fwd_persistent.tile"),
                    "attn_fwd_sparse_tiles")
    gen = torch.Generator().manual_seed(0)

    def run_both(b, hq, hkv, n, d, mb, mh, density, kind, causal, edits=False, snakes=(False,)):
        """The base kernel's call, then the persistent kernel's for each order (natural or
        snake), each with its own poisoned o and lse; and the counts."""
        blk = 128
        nb = (n + blk - 1) // blk
        q = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, n, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        cnt, idx = lists(torch, make_mask(torch, mb, mh, nb, density, kind, gen))
        if edits:  # a row with no kept block, and an index outside the blocks
            cnt[0, 0, nb // 2] = 0
            idx[-1, -1, 0, 0] = -1
        scale = 1 / math.sqrt(d)
        outs = []
        runs = [(base, dict(BASE, D=d, BLK=blk, CAUSAL=causal), ())]
        for snake in snakes:
            order = tile_order(torch, cnt, b, hq, n, 128, blk, snake)
            runs.append((tiles, dict(TILE, D=d, BLK=blk, CAUSAL=causal), (order,)))
        for kern, cfg, extra in runs:
            o = torch.full_like(q, float("nan"))
            lse = torch.full((b, hq, n), float("nan"), device="cuda")
            call = (lambda kern=kern, cfg=cfg, extra=extra, o=o, lse=lse:
                    kern(q, k, v, cnt, idx, *extra, o, lse, scale, config=cfg))
            outs.append((o, lse, call))
        return outs, cnt

    # Correctness: odd N, GQA, causal, masks per head or broadcast, an empty row, a -1 index.
    for (b, hq, hkv, n, d, mb, mh, causal) in ((2, 6, 2, 1000, 128, 1, 6, 0), (2, 6, 2, 1000, 128, 2, 1, 1),
                                               (1, 4, 4, 777, 64, 1, 1, 0), (3, 2, 1, 300, 128, 3, 2, 1)):
        outs, _ = run_both(b, hq, hkv, n, d, mb, mh, 0.3, "bern", causal, edits=True,
                           snakes=(False, True))
        for _, _, call in outs:
            call()
        torch.cuda.synchronize()
        (o1, l1, _) = outs[0]
        for snake, (o2, l2, _) in zip((False, True), outs[1:]):
            emit({"check": True, "B": b, "HQ": hq, "HKV": hkv, "N": n, "D": d, "MB": mb, "MH": mh,
                  "causal": causal, "snake": snake,
                  "o_equal": bool(torch.equal(o1, o2)), "lse_equal": bool(torch.equal(l1, l2)),
                  "o_nan": int(o2.isnan().sum()), "lse_nan": int(l2.isnan().sum()),
                  "o_max_diff": float((o1.float() - o2.float()).abs().nan_to_num(1e9).max())})

    # Timing.
    for (n, d, density, kind) in ((16384, 128, 0.10, "const"), (16384, 128, 0.25, "const"),
                                  (16384, 128, 0.50, "const"), (16384, 128, 0.10, "bern"),
                                  (8192, 128, 0.10, "const"), (16384, 64, 0.10, "const")):
        snakes = (False, True) if kind == "bern" else (False,)
        outs, cnt = run_both(4, 16, 16, n, d, 1, 16, density, kind, 0, snakes=snakes)
        calls = [c for _, _, c in outs]
        names = ["attn_fwd_sparse", "tiles_natural", "tiles_snake"][: len(calls)]
        ms = alternating_ms(timer, calls)
        row = {"N": n, "D": d, "density": density, "mask": kind,
               "kept_blocks_mean": float(cnt.float().mean()), "device": torch.cuda.get_device_name()}
        row.update({name: round(t, 4) for name, t in zip(names, ms)})
        row["speedup_natural"] = round(ms[0] / ms[1], 3)
        if len(ms) > 2:
            row["speedup_snake"] = round(ms[0] / ms[2], 3)
        emit(row)


if __name__ == "__main__":
    main()
