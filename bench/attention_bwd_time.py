#!/usr/bin/env python3
"""The attention backward (--forward: the forward) at the op's defaults (Hopper tiles, dq by
attn_dq), through tilejit.ops.attention_backward (attention_forward): a short timing to compare
two builds in one device call (run it once per library, alternating: base, new, base, new). One
JSON line per shape.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_bwd_time.py [--forward] \\
        [--out F] [--tag T]

bf16 B=4 H=16 D=128: N = 8192 with and without causal masking, N = 16384 at 10% and 25% of the
blocks (the forward also 50%; a random mask per head, the diagonal kept, as a BlockMask). L2
flushed, CUDA events, medians of 30 (bench/peers/flushed_timer.py); "grad_sum" ("o_sum") shows
both builds compute the same thing.
"""
import sys

from attention_bench_common import session, random_block_mask, random_tensors


def main():
    def options(p):
        p.add_argument("--tag", default="", help="a label for the rows (the library timed)")
        p.add_argument("--forward", action="store_true", help="time the forward instead")
    started = session(__doc__, "attention_bwd_time", options)
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H, D = 4, 16, 128
    densities = (10, 25, 50) if args.forward else (10, 25)
    shapes = [(8192, False, None), (8192, True, None)] + [(16384, False, d) for d in densities]
    for n, causal, density in shapes:
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        row = {"tag": args.tag, "B": B, "H": H, "N": n, "D": D, "causal": causal,
               "density_percent": density, "device": torch.cuda.get_device_name()}
        if args.forward:
            def fwd():
                return tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
            row.update(fwd_ms=timer.median_ms(fwd), o_sum=o.float().abs().sum().item())
        else:
            def bwd():
                return tilejit.ops.attention_backward(q, k, v, o, lse, dout, causal=causal,
                                                      block_mask=mask)
            g = bwd()
            row.update(bwd_ms=timer.median_ms(bwd),
                       grad_sum=sum(t.float().abs().sum().item() for t in g))
        emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
