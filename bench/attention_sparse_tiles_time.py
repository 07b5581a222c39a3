#!/usr/bin/env python3
"""Block-sparse attention's tiles at each density: attn_fwd_sparse and attn_bwd_sparse timed
with several configurations through tilejit.ops on the same inputs, to find what the Hopper
tiles (workloads/attention_tiles.cpp) should be per density. Short rows (10%: about 13 kept
blocks of 128 per query block) weigh each block's setup more, where two blocks per
multiprocessor (BM = 64 on one warpgroup) could overlap one block's setup with another's work.
One JSON line per (density, kernel, config); "sum" checks each config computes the same thing.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_sparse_tiles_time.py [--out F]

bf16 B=4 H=16 N=16384 D=128 (issue 16's block-sparse shape), not causal, a random mask per head
with the diagonal kept, as a tilejit.ops.BlockMask (its lists built once, as flex's); dense
N = 8192 too for the forward's two-blocks-per-SM tiles. L2 flushed, CUDA events, medians of 30.
"""
import sys

from attention_bench_common import session, random_block_mask, random_tensors

FORWARD = [
    None,  # the op's Hopper tile (BM 128, BN 128, 8 warps, 2 stages)
    {"BM": 64, "BN": 64, "WARPS": 4, "STAGES": 2},
    {"BM": 64, "BN": 128, "WARPS": 4, "STAGES": 2},
    {"BM": 64, "BN": 64, "WARPS": 4, "STAGES": 3},
    {"BM": 128, "BN": 64, "WARPS": 8, "STAGES": 2},
    {"BM": 128, "BN": 64, "WARPS": 8, "STAGES": 3},
]
BACKWARD = [
    None,  # TR 1, BN 128, BM 64, 8 warps, 2 stages, ISSUE 1
    {"TR": 1, "BN": 128, "BM": 64, "WARPS": 8, "STAGES": 3, "ISSUE": 1},
    {"TR": 1, "BN": 64, "BM": 64, "WARPS": 4, "STAGES": 2, "ISSUE": 1},
    {"TR": 1, "BN": 64, "BM": 64, "WARPS": 4, "STAGES": 3, "ISSUE": 1},
    {"TR": 1, "BN": 64, "BM": 64, "WARPS": 4, "STAGES": 2, "ISSUE": 0},
]


def main():
    started = session(__doc__, "attention_sparse_tiles_time")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H, D = 4, 16, 128
    for n, density in ((16384, 10), (16384, 25), (16384, 50), (8192, None)):
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, block_mask=mask)
        base = {"B": B, "H": H, "N": n, "D": D, "density_percent": density,
                "device": torch.cuda.get_device_name()}
        for config in FORWARD:
            def fwd():
                return tilejit.ops.attention_forward(q, k, v, block_mask=mask, config=config)
            row = dict(base, kernel="forward", config=config)
            try:
                row["sum"] = fwd()[0].float().abs().sum().item()
                row["ms"] = timer.median_ms(fwd)
            except Exception as e:  # a tile that does not fit is reported, not fatal
                row["error"] = str(e)[:200]
            emit(row)
        if mask is None:
            continue
        for config in BACKWARD:
            def bwd():
                return tilejit.ops.attention_backward(q, k, v, o, lse, dout, block_mask=mask,
                                                      config=config)
            row = dict(base, kernel="backward", config=config)
            try:
                row["sum"] = sum(t.float().abs().sum().item() for t in bwd())
                row["ms"] = timer.median_ms(bwd)
            except Exception as e:
                row["error"] = str(e)[:200]
            emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
