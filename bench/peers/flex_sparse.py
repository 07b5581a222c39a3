"""Block-sparse attention through torch.compile(flex_attention), timed the way `tilejit bench` times.

    python3 bench/peers/flex_sparse.py [--out FILE.jsonl] [--n 8192,16384] [--densities 10,25,50]

bf16, B=4 H=16 D=128, blocks of 128, not causal: for each N and density (percent) a random block
mask per head in which each query block keeps max(1, round(density * nb)) key blocks, its
diagonal block among them (as the shared yardstick and `tilejit bench --shape ...,DENSITY=`
build theirs), given to flex as a BlockMask of full blocks (BlockMask.from_kv_blocks). Times the
forward (inputs requiring grad, as the yardstick does: one compile) and the forward + backward
(autograd.grad of the output against a random do). L2 flushed before each call, CUDA events,
median of 30 after 3 warm-ups. One JSON line per (N, density) on stdout (and FILE when given).
Head (0, 0)'s o is checked against a float64 reference; the relative error goes in the row.
With --tilejit, tilejit.ops.attention (the op users call, autograd for the backward) is timed
the same way on the same inputs and mask, beside flex in the same process
(`tilejit_fwd_ms`, `tilejit_fwdbwd_ms`, its o's relative difference from flex's), and again
with the mask's lists built once (`tilejit.ops.BlockMask`, as flex's BlockMask is built once):
`tilejit_blockmask_fwd_ms`, `tilejit_blockmask_fwdbwd_ms`; then flex and the two tilejit calls
are timed in turn (5 rounds of 10 calls, the median of the rounds' medians: the H200's clock
drifts during a run, and timing one after the other had put a 25% forward 14% apart between
two calls of the same kernel).
"""
import argparse
import json
import sys


def int_list(text, name, lo, hi):
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} '{text}' is not a comma-separated list of integers")
    bad = [v for v in vals if not lo <= v <= hi]
    if bad:
        raise argparse.ArgumentTypeError(f"{name} {bad[0]} is outside {lo}..{hi}")
    return vals


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also append the JSON lines to this file")
    p.add_argument("--n", default="8192,16384",
                   type=lambda s: int_list(s, "--n", 128, 1 << 20), help="sequence lengths")
    p.add_argument("--densities", default="10,25,50",
                   type=lambda s: int_list(s, "--densities", 1, 100), help="percent kept")
    p.add_argument("--tilejit", action="store_true",
                   help="also time tilejit.ops.attention on the same inputs and mask")
    args = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("flex_sparse: no CUDA device; nothing to time", file=sys.stderr)
        return 0
    from torch.nn.attention.flex_attention import BlockMask, flex_attention

    from flushed_timer import FlushedTimer
    timer = FlushedTimer(torch)
    flex = torch.compile(flex_attention, dynamic=False)
    out = open(args.out, "a") if args.out else None
    B, H, D, BLK = 4, 16, 128, 128
    gen = torch.Generator().manual_seed(0)
    for N in args.n:
        nb = (N + BLK - 1) // BLK
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        do = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
        for dens in args.densities:
            keep = max(1, min(nb, round(dens / 100 * nb)))
            scores = torch.rand(H, nb, nb, generator=gen)
            ar = torch.arange(nb)
            scores[:, ar, ar] = 2.0  # the diagonal block always kept
            kept = torch.topk(scores, keep, dim=-1).indices.sort(dim=-1).values
            idx = torch.zeros(1, H, nb, nb, dtype=torch.int32)
            idx[0, :, :, :keep] = kept.to(torch.int32)
            cnt = torch.full((1, H, nb), keep, dtype=torch.int32)
            idx, cnt = idx.cuda(), cnt.cuda()
            bm = BlockMask.from_kv_blocks(torch.zeros_like(cnt), idx, cnt, idx, BLOCK_SIZE=BLK,
                                          seq_lengths=(N, N))
            row = {"B": B, "H": H, "N": N, "D": D, "block": BLK, "density_percent": dens,
                   "kept_blocks": keep, "device": torch.cuda.get_device_name()}
            o = flex(q, k, v, block_mask=bm)
            # Head (0, 0) in float64: scores outside the kept blocks are -inf.
            keep_el = torch.zeros(nb, nb, dtype=torch.bool)
            keep_el[ar.unsqueeze(1).expand(nb, keep), kept[0]] = True
            el = keep_el.repeat_interleave(BLK, 0).repeat_interleave(BLK, 1)[:N, :N].cuda()
            s = (q[0, 0].double() @ k[0, 0].double().T) / D ** 0.5
            ref = torch.softmax(s.masked_fill(~el, float("-inf")), -1) @ v[0, 0].double()
            row["rel_err_o"] = ((o[0, 0].double() - ref).norm() / ref.norm()).item()
            del s, ref, el, o
            flex_fwd = lambda: flex(q, k, v, block_mask=bm)
            flex_fwdbwd = lambda: torch.autograd.grad(flex(q, k, v, block_mask=bm), (q, k, v), do)
            if not args.tilejit:
                row["flex_fwd_ms"] = timer.median_ms(flex_fwd)
                row["flex_fwdbwd_ms"] = timer.median_ms(flex_fwdbwd)
            else:
                import tilejit
                mask = torch.zeros(1, H, nb, nb, dtype=torch.bool, device="cuda")
                mask.scatter_(-1, idx[..., :keep].long(), True)
                ours = tilejit.ops.attention(q, k, v, block_mask=mask)
                theirs = flex(q, k, v, block_mask=bm)
                row["tilejit_vs_flex_rel_o"] = ((ours.double() - theirs.double()).norm() /
                                                theirs.double().norm()).item()
                del ours, theirs
                # The lists built once (tilejit.ops.BlockMask), as flex's BlockMask is.
                bm_t = tilejit.ops.BlockMask(mask)
                op = lambda m: lambda: tilejit.ops.attention(q, k, v, block_mask=m)
                op_grad = lambda m: lambda: torch.autograd.grad(
                    tilejit.ops.attention(q, k, v, block_mask=m), (q, k, v), do)
                # flex and tilejit timed in turn (5 rounds of 10 calls each, the median of the
                # rounds' medians), so that the clock's drift during the run weighs on both.
                (row["flex_fwd_ms"], row["tilejit_fwd_ms"],
                 row["tilejit_blockmask_fwd_ms"]) = timer.alternating_ms(
                     [flex_fwd, op(mask), op(bm_t)])
                (row["flex_fwdbwd_ms"], row["tilejit_fwdbwd_ms"],
                 row["tilejit_blockmask_fwdbwd_ms"]) = timer.alternating_ms(
                     [flex_fwdbwd, op_grad(mask), op_grad(bm_t)])
                row["timing"] = "alternating, 5 rounds of 10 calls"
            line = json.dumps(row)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
