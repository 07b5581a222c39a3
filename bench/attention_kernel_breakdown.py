#!/usr/bin/env python3
"""Where an attention call's GPU time goes, kernel by kernel: tilejit.ops.attention_forward and
attention_backward (and, with --flex, compiled flex_attention's forward and forward + backward on
the same inputs and mask) under torch.profiler, each kernel's time per call.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_kernel_breakdown.py \\
        [--shapes 8192:128,16384:128:10] [--calls 10] [--flex] [--out F]

Shapes are N:D[:causal|:DENSITY%] at bf16 B=4 H=16; a density keeps the same number of key
blocks (of 128) in every query block, the diagonal among them (as bench/peers/flex_sparse.py).
The L2 is not flushed between calls (the profiler's per-kernel times are what is compared).
One JSON line per (shape, pass): {"pass", "kernels": {name: ms per call}, "total_ms"}.
"""
import sys

from attention_bench_common import random_tensors, session
from attention_bwd_configs_time import parse_shape


def uniform_block_mask(torch, heads, n, density_percent, block=128):
    """[1, heads, nb, nb] bool: each query block keeps round(density * nb) key blocks (at least
    one), its diagonal block among them."""
    nb = (n + block - 1) // block
    keep = max(1, min(nb, round(density_percent / 100 * nb)))
    scores = torch.rand(heads, nb, nb, device="cuda")
    ar = torch.arange(nb, device="cuda")
    scores[:, ar, ar] = 2.0
    kept = torch.topk(scores, keep, dim=-1).indices
    mask = torch.zeros(1, heads, nb, nb, dtype=torch.bool, device="cuda")
    mask[0].scatter_(-1, kept, True)
    return mask


def flex_block_mask(torch, mask, n, block=128):
    """The same mask as flex_attention's BlockMask of full blocks."""
    from torch.nn.attention.flex_attention import BlockMask
    cnt = mask.sum(-1).to(torch.int32)
    idx = torch.sort(mask.to(torch.int8), dim=-1, descending=True, stable=True).indices
    idx = idx.to(torch.int32).contiguous()
    return BlockMask.from_kv_blocks(torch.zeros_like(cnt), idx, cnt, idx, BLOCK_SIZE=block,
                                    seq_lengths=(n, n))


def profile(torch, call, calls):
    """{kernel name: ms per call} and their sum, over `calls` calls after two warm-ups."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    for _ in range(2):
        call()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us > 0:
            kernels[e.key[:80]] = us / 1000 / calls
    return dict(sorted(kernels.items(), key=lambda kv: -kv[1])), sum(kernels.values())


def main():
    def extra(p):
        p.add_argument("--shapes", default="8192:128,16384:128:10,16384:128:50",
                       type=lambda text: [parse_shape(s) for s in text.split(",")])
        p.add_argument("--calls", type=int, default=10)
        p.add_argument("--flex", action="store_true", help="also compiled flex_attention")
    started = session(__doc__, "attention_kernel_breakdown", extra)
    if started is None:
        return 0
    args, torch, tilejit, _, emit = started
    B, H = 4, 16
    flex = None
    if args.flex:
        from torch.nn.attention.flex_attention import flex_attention
        flex = torch.compile(flex_attention, dynamic=False)
    for n, d, causal, density in args.shapes:
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, d), torch.bfloat16)
        dense_mask = uniform_block_mask(torch, H, n, density) if density else None
        mask = tilejit.ops.BlockMask(dense_mask) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        passes = {
            "tilejit forward": lambda: tilejit.ops.attention_forward(
                q, k, v, causal=causal, block_mask=mask),
            "tilejit backward": lambda: tilejit.ops.attention_backward(
                q, k, v, o, lse, dout, causal=causal, block_mask=mask),
        }
        if flex is not None and not causal:
            bm = flex_block_mask(torch, dense_mask, n) if density else None
            qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
            passes["flex forward"] = lambda: flex(qg, kg, vg, block_mask=bm)

            def flex_fwd_bwd():
                out = flex(qg, kg, vg, block_mask=bm)
                torch.autograd.grad(out, (qg, kg, vg), dout)
            passes["flex forward+backward"] = flex_fwd_bwd
        for name, call in passes.items():
            kernels, total = profile(torch, call, args.calls)
            emit({"B": B, "H": H, "N": n, "D": d, "causal": causal, "density_percent": density,
                  "device": torch.cuda.get_device_name(), "pass": name,
                  "total_ms": total, "kernels": kernels})
    return 0


if __name__ == "__main__":
    sys.exit(main())
