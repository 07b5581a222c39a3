#!/usr/bin/env python3
"""attn_fwd with the next key tile's scores issued before this tile's softmax (AHEAD = 1, which
takes q through a descriptor: SA = 1) against the op's Hopper tile (SA = 0, AHEAD = 0), and
the steps between, through tilejit.ops.attention_forward on the same inputs. One JSON line per
(shape, config); "sum" must be the same for every config of a shape (the same products in the
same order: bit-equal outputs).

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_fwd_ahead_time.py [--out F]

bf16 B=4 H=16: N = 8192 D = 128 with and without causal masking, N = 8192 D = 64, N = 16384
D = 128, and N = 16384 D = 128 block-sparse at 10 / 25 / 50% (attn_fwd_sparse, the mask as a
tilejit.ops.BlockMask). L2 flushed, CUDA events (bench/peers/flushed_timer.py): the
configurations of a shape alternate for 5 rounds of 10 calls each (a clock that drifts during
the run then weighs on all alike; timed one after another they differed by up to 7% for the
same configuration), and each row gives the median of its rounds' medians.
"""
import sys

from attention_bench_common import alternating_ms, random_block_mask, random_tensors, session

# Full configurations (the op's fallback would fill in the rest, and now holds AHEAD itself).
BASE = {"SA": 0, "AHEAD": 0, "ISSUE": 0}  # q in registers, scores after the copies
CONFIGS = [BASE, {"SA": 1, "AHEAD": 1, "ISSUE": 1}, {"SA": 1, "AHEAD": 1, "ISSUE": 0}]
SPARSE = [{"SA": 0, "AHEAD": 0}, {"SA": 1, "AHEAD": 1}]
ROUNDS = 5  # the configurations alternate, round after round: clock drift hits them alike


def main():
    started = session(__doc__, "attention_fwd_ahead_time")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H = 4, 16
    for n, d, causal, density in ((8192, 128, False, None), (8192, 128, True, None),
                                  (8192, 64, False, None), (16384, 128, False, None),
                                  (16384, 128, False, 10), (16384, 128, False, 25),
                                  (16384, 128, False, 50)):
        torch.manual_seed(0)
        q, k, v = random_tensors(torch, 3, (B, H, n, d), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        configs = SPARSE if mask is not None else CONFIGS
        calls = [lambda config=config: tilejit.ops.attention_forward(
            q, k, v, causal=causal, block_mask=mask, config=config) for config in configs]
        sums = [call()[0].float().abs().sum().item() for call in calls]
        for config, s, ms in zip(configs, sums, alternating_ms(timer, calls, rounds=ROUNDS)):
            emit({"B": B, "H": H, "N": n, "D": d, "causal": causal, "density_percent": density,
                  "config": config, "device": torch.cuda.get_device_name(), "sum": s, "ms": ms})
    return 0


if __name__ == "__main__":
    sys.exit(main())
