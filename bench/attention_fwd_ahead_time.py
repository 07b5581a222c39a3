#!/usr/bin/env python3
"""attn_fwd with the next key tile's scores issued before this tile's softmax (AHEAD = 1, which
takes q through a descriptor: SA = 1) against the op's Hopper tile (SA = 0, AHEAD = 0), and
the steps between, through tilejit.ops.attention_forward on the same inputs. One JSON line per
(shape, config); "sum" must be the same for every config of a shape (the same products in the
same order: bit-equal outputs).

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_fwd_ahead_time.py [--out F]

bf16 B=4 H=16: N = 8192 D = 128 with and without causal masking, N = 8192 D = 64, N = 16384
D = 128, and N = 16384 D = 128 block-sparse at 10 / 25 / 50% (attn_fwd_sparse, the mask as a
tilejit.ops.BlockMask). L2 flushed, CUDA events, medians of 30 (bench/peers/flushed_timer.py).
"""
import argparse
import sys

from attention_bench_common import Rows, random_block_mask, random_tensors

CONFIGS = [  # over the op's Hopper tile (its fallback fills in the rest)
    {"SA": 0, "AHEAD": 0, "ISSUE": 0},  # q in registers, scores after the copies
    {"SA": 1},
    {"SA": 1, "AHEAD": 1},
    {"SA": 1, "AHEAD": 1, "ISSUE": 1},
    {"SA": 1, "AHEAD": 1, "STAGES": 3},
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also append the JSON lines to this file")
    args = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("attention_fwd_ahead_time: no CUDA device; nothing to time", file=sys.stderr)
        return 0
    import tilejit
    from flushed_timer import FlushedTimer
    timer = FlushedTimer(torch)
    emit = Rows(args.out).emit
    B, H = 4, 16
    for n, d, causal, density in ((8192, 128, False, None), (8192, 128, True, None),
                                  (8192, 64, False, None), (16384, 128, False, None),
                                  (16384, 128, False, 10), (16384, 128, False, 25),
                                  (16384, 128, False, 50)):
        torch.manual_seed(0)
        q, k, v = random_tensors(torch, 3, (B, H, n, d), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        for config in CONFIGS:
            if mask is not None and ("ISSUE" in config or "STAGES" in config):
                continue  # attn_fwd_sparse has no ISSUE; 3 stages do not fit at width 128
            config = dict(config)

            def fwd():
                return tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask,
                                                     config=config)
            row = {"B": B, "H": H, "N": n, "D": d, "causal": causal,
                   "density_percent": density, "config": config,
                   "device": torch.cuda.get_device_name()}
            try:
                row["sum"] = fwd()[0].float().abs().sum().item()
                row["ms"] = timer.median_ms(fwd)
            except Exception as e:  # a tile that does not fit is reported, not fatal
                row["error"] = str(e)[:200]
            emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
