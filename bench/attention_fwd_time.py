#!/usr/bin/env python3
"""The attention forward at the op's defaults (Hopper tiles), through
tilejit.ops.attention_forward: a short timing to compare two builds in one device call (run it
once per library, alternating: base, new, base, new), attention_bwd_time.py's twin. One JSON
line per shape.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_fwd_time.py [--out F] [--tag T]

bf16 B=4 H=16 D=128: N = 8192 with and without causal masking, N = 16384 at 10%, 25% and 50% of
the blocks (a random mask per head, the diagonal kept, as a BlockMask). L2 flushed, CUDA events,
medians of 30 (bench/peers/flushed_timer.py); "o_sum" shows both builds compute the same thing.
"""
from attention_bench_common import session, random_block_mask, random_tensors


def main():
    def tag(p):
        p.add_argument("--tag", default="", help="a label for the rows (the library timed)")
    started = session(__doc__, "attention_fwd_time", tag)
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H, D = 4, 16, 128
    for n, causal, density in ((8192, False, None), (8192, True, None), (16384, False, 10),
                               (16384, False, 25), (16384, False, 50)):
        torch.manual_seed(0)
        q, k, v = random_tensors(torch, 3, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None

        def fwd():
            return tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        o, lse = fwd()
        emit({"tag": args.tag, "B": B, "H": H, "N": n, "D": D, "causal": causal,
              "density_percent": density, "device": torch.cuda.get_device_name(),
              "fwd_ms": timer.median_ms(fwd), "o_sum": o.float().abs().sum().item()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
