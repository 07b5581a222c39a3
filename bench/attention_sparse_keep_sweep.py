#!/usr/bin/env python3
"""What a block-sparse attention block costs besides its kept blocks: tilejit's forward and
backward timed with every query block keeping exactly K key blocks, for several K, and a line
fitted through time = fixed + K * per_block (the fixed part: a program's start and end, the
per-block part: its loop's iterations).

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_sparse_keep_sweep.py \\
        [--n 16384] [--keeps 1,2,4,8,13,26] [--out F]

bf16 B=4 H=16 D=128, blocks of 128, not causal, the Hopper tiles; L2 flushed, CUDA events,
medians. One JSON line per K, then one with the fit ("fit": {"forward": [fixed_ms,
per_block_ms], "backward": [...]}), where fixed_ms / per_block_ms says how many kept blocks'
work a program's fixed part is worth.
"""
import sys

from attention_bench_common import random_tensors, session
from attention_kernel_breakdown import uniform_block_mask


def int_list(text):
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise SystemExit(f"--keeps: '{text}' is not a comma-separated list of integers")
    if not vals or min(vals) < 1:
        raise SystemExit(f"--keeps: '{text}': each count is at least 1")
    return vals


def fit(xs, ys):
    """Least squares y = a + b x: (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def main():
    def extra(p):
        p.add_argument("--n", type=int, default=16384)
        p.add_argument("--keeps", type=int_list, default=[1, 2, 4, 8, 13, 26])
    started = session(__doc__, "attention_sparse_keep_sweep", extra)
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H, D, n = 4, 16, 128, args.n
    nb = (n + 127) // 128
    if max(args.keeps) > nb:
        raise SystemExit(f"--keeps: {max(args.keeps)} is more than the {nb} blocks of N = {n}")
    torch.manual_seed(0)
    q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
    times = {"forward": [], "backward": []}
    for keep in args.keeps:
        mask = tilejit.ops.BlockMask(uniform_block_mask(torch, H, n, keep * 100 / nb))
        o, lse = tilejit.ops.attention_forward(q, k, v, block_mask=mask)
        fwd = timer.median_ms(lambda: tilejit.ops.attention_forward(q, k, v, block_mask=mask))
        bwd = timer.median_ms(lambda: tilejit.ops.attention_backward(q, k, v, o, lse, dout,
                                                                     block_mask=mask))
        times["forward"].append(fwd)
        times["backward"].append(bwd)
        emit({"B": B, "H": H, "N": n, "D": D, "kept_blocks": keep,
              "device": torch.cuda.get_device_name(), "fwd_ms": fwd, "bwd_ms": bwd})
    emit({"N": n, "keeps": args.keeps,
          "fit": {p: fit(args.keeps, t) for p, t in times.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
