#!/usr/bin/env python3
"""The block-sparse attention kernels against the shape of their block lists, on the Hopper
tiles at bf16 B=4 H=16 N=16384 D=128, blocks of 128: where a block-sparse row's time goes.

1. Patterns (forward): attn_fwd dense; attn_fwd_sparse with every block kept (the same work);
   13 of 128 blocks per row kept at random, as a band around the diagonal, and the same 13
   in every row; the random rows in shuffled order. Each case's time per kept block and
   multiprocessor (ms * 1000 / (tiles * kept / 132)) compares the per-block cost.
2. Order (forward, attn_bwd_sparse, attn_dq_sparse at 10 / 25 / 50% kept): each row's kept
   blocks ascending (the ops' lists), rotated to start at the diagonal, or shuffled.
3. The backward's kernels per kept block: attn_bwd and attn_dq dense against attn_bwd_sparse
   and attn_dq_sparse with every block kept and with 13 kept at random.

Kernels called directly (rt.load), each case timed in turn (alternating_ms). One JSON line per
case.

    PYTHONPATH=python:bench TILEJIT_LIBRARY=... python3 bench/attention_sparse_patterns_time.py [--out F]
"""
import math

from attention_bench_common import alternating_ms, session
import attention_fwd_persistent_time as P

DENSE = dict(P.BASE, WG="1")
BWD = {"TR": "1", "BN": "128", "BM": "64", "WARPS": "8", "STAGES": "2", "ISSUE": "1",
       "PRODUCER": "1", "ATOMIC_DQ": "0"}
DQ = {"BM": "128", "BN": "128", "WARPS": "8", "STAGES": "2", "ISSUE": "1"}


def main():
    s = session(__doc__, "attention_sparse_patterns_time")
    if s is None:
        return
    args, torch, tilejit, timer, emit = s
    rt = tilejit.Runtime()
    emb = "embedded:workloads/attention.tile"
    dense = rt.load(emb, "attn_fwd")
    bwd_dense, dq_dense = rt.load(emb, "attn_bwd"), rt.load(emb, "attn_dq")
    fwd, bwd, dqk = (rt.load(emb, name) for name in ("attn_fwd_sparse", "attn_bwd_sparse",
                                                     "attn_dq_sparse"))
    b, hq, n, d, keep = 4, 16, 16384, 128, 13
    nb = n // 128
    q = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16)
    k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    o = torch.empty_like(q)
    lse = torch.full((b, hq, n), 20.0, device="cuda")  # p small: timing only
    delta = torch.randn(b, hq, n, device="cuda")
    dk, dv, dq = torch.empty_like(k), torch.empty_like(v), torch.empty_like(q)
    dq_acc = torch.empty(1, device="cuda").expand(b, hq, n, d)  # unused (ATOMIC_DQ 0)
    scale = 1 / math.sqrt(d)
    gen = torch.Generator().manual_seed(0)
    cfg = dict(P.BASE, D=d, BLK=128, CAUSAL=0)

    def rows_lists(rows):
        """Lists from rows [H, nb, keep] of block indices."""
        idx = torch.zeros(1, hq, nb, nb, dtype=torch.int32)
        idx[..., : rows.shape[-1]] = rows.to(torch.int32)
        cnt = torch.full((1, hq, nb), rows.shape[-1], dtype=torch.int32)
        return cnt.cuda(), idx.cuda()

    # 1. Patterns.
    cases = {"all kept": rows_lists(torch.arange(nb).expand(hq, nb, nb).clone())}
    cnt, idx = P.lists(torch, P.make_mask(torch, 1, hq, nb, keep / nb, "const", gen))
    cases["random"] = (cnt, idx)
    band = (torch.arange(nb)[:, None] + torch.arange(keep)[None, :] - keep // 2) % nb
    cases["band"] = rows_lists(band.expand(hq, nb, keep).clone())
    same = torch.randperm(nb, generator=gen)[:keep].sort().values
    cases["same in every row"] = rows_lists(same.expand(hq, nb, keep).clone())
    rows = idx[0, :, :, :keep].cpu()
    perm = torch.argsort(torch.rand(hq, nb, keep, generator=gen), dim=-1)
    cases["random, shuffled"] = rows_lists(torch.gather(rows, -1, perm))
    calls = [lambda: dense(q, k, v, o, lse, scale, config=dict(DENSE, D=d, CAUSAL=0))]
    names = ["dense"]
    for name, (c, i) in cases.items():
        calls.append(lambda c=c, i=i: fwd(q, k, v, c, i, o, lse, scale, config=cfg))
        names.append(name)
    for call in calls:
        call()
    tiles = b * hq * nb
    for name, t in zip(names, alternating_ms(timer, calls)):
        kept = nb if name in ("dense", "all kept") else keep
        emit({"part": "pattern", "case": name, "ms": round(t, 4), "kept_per_row": kept,
              "us_per_block_per_sm": round(t * 1000 / (tiles * kept / 132), 3)})

    # 2. Order of each row's kept blocks.
    def ordered(mask, how):
        r, c = torch.arange(nb)[:, None], torch.arange(nb)[None, :]
        if how == "ascending":
            key = c.expand(nb, nb).float()
        elif how == "rotated":
            key = ((c - r) % nb).float()
        else:
            key = torch.rand(mask.shape[1], nb, nb, generator=gen)
        key = key.expand(1, mask.shape[1], nb, nb) + (~mask).float() * 1e6
        return (mask.sum(-1, dtype=torch.int32).cuda().contiguous(),
                torch.argsort(key, dim=-1).to(torch.int32).cuda().contiguous())

    for density in (0.10, 0.25, 0.50):
        mask = P.make_mask(torch, 1, hq, nb, density, "const", gen)
        tmask = mask.transpose(-1, -2).contiguous()
        for kernel in ("attn_fwd_sparse", "attn_bwd_sparse", "attn_dq_sparse"):
            calls = []
            for how in ("ascending", "rotated", "shuffled"):
                c, i = ordered(tmask if kernel == "attn_bwd_sparse" else mask, how)
                if kernel == "attn_fwd_sparse":
                    calls.append(lambda c=c, i=i: fwd(q, k, v, c, i, o, lse, scale, config=cfg))
                elif kernel == "attn_bwd_sparse":
                    calls.append(lambda c=c, i=i: bwd(q, k, v, do, lse, delta, c, i, dk, dv, dq_acc,
                                                      scale, config=dict(BWD, D=d, BLK=128, CAUSAL=0)))
                else:
                    calls.append(lambda c=c, i=i: dqk(q, k, v, do, lse, delta, c, i, dq, scale,
                                                      config=dict(DQ, D=d, BLK=128, CAUSAL=0)))
            for call in calls:
                call()
            ms = alternating_ms(timer, calls)
            emit({"part": "order", "kernel": kernel, "density": density,
                  **{how: round(t, 4) for how, t in zip(("ascending", "rotated", "shuffled"), ms)}})

    # 3. The backward's kernels per kept block.
    bcfg = dict(BWD, D=d, CAUSAL=0)
    qcfg = dict(DQ, D=d, CAUSAL=0)
    full = torch.ones(1, hq, nb, nb, dtype=torch.bool)
    part = P.make_mask(torch, 1, hq, nb, keep / nb, "const", gen)
    calls = [lambda: bwd_dense(q, k, v, do, lse, delta, dk, dv, dq_acc, scale, config=bcfg),
             lambda: dq_dense(q, k, v, do, lse, delta, dq, scale, config=qcfg)]
    names = [("attn_bwd", "dense", nb), ("attn_dq", "dense", nb)]
    for label, mask, kept in (("all kept", full, nb), ("random", part, keep)):
        tc, ti = P.lists(torch, mask.transpose(-1, -2).contiguous())
        fc, fi = P.lists(torch, mask)
        calls.append(lambda tc=tc, ti=ti: bwd(q, k, v, do, lse, delta, tc, ti, dk, dv, dq_acc,
                                              scale, config=dict(bcfg, BLK=128)))
        calls.append(lambda fc=fc, fi=fi: dqk(q, k, v, do, lse, delta, fc, fi, dq, scale,
                                              config=dict(qcfg, BLK=128)))
        names += [("attn_bwd_sparse", label, kept), ("attn_dq_sparse", label, kept)]
    for call in calls:
        call()
    for (kernel, case, kept), t in zip(names, alternating_ms(timer, calls)):
        # attn_bwd's tiles are 128 keys (BN), attn_dq's 128 queries (BM): 128 per row either way.
        emit({"part": "backward", "kernel": kernel, "case": case, "ms": round(t, 4),
              "kept_per_row": kept, "us_per_block_per_sm": round(t * 1000 / (tiles * kept / 132), 3)})


if __name__ == "__main__":
    main()
