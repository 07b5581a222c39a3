#!/usr/bin/env python3
"""attn_bwd with ISSUE = 0 and 1 (dv's and dk's wgmma products left running under ds's trip
through shared memory and dq: the DSL's dot(..., issue = 1)), through tilejit.ops.attention_backward
on the same inputs, dq by atomics and by attn_dq, dense and block-sparse; and attn_fwd's ISSUE
(p v left running under the row sums; rows with atomic_dq = "forward", the forward's time in the
issue*_bwd_ms fields). One JSON line per case.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_bwd_issue_time.py [--out FILE]

bf16 B=4 H=16 D=128: N = 8192 with and without causal masking, N = 16384 at 10% of the blocks
kept (a random mask per head, the diagonal kept). The backward call alone is timed (L2 flushed
before each, CUDA events: bench/peers/flushed_timer.py; ISSUE 0 and 1 alternate over 5 rounds
of 10 calls, the median of the rounds' medians: attention_bench_common.alternating_ms); each
ISSUE = 1 result is compared with ISSUE = 0's (the same sums, so they agree to rounding).
"""
import sys

from attention_bench_common import alternating_ms, random_block_mask, random_tensors, session


def main():
    started = session(__doc__, "attention_bwd_issue_time")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    B, H, D = 4, 16, 128
    torch.manual_seed(0)
    for n, causal, density in ((8192, False, None), (8192, True, None), (16384, False, 10)):
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        if mask is None:  # attn_fwd's ISSUE (p v left running under the row sums)
            row = {"B": B, "H": H, "N": n, "D": D, "causal": causal, "density_percent": None,
                   "atomic_dq": "forward", "device": torch.cuda.get_device_name()}
            calls = [lambda issue=issue: tilejit.ops.attention_forward(
                q, k, v, causal=causal, config={"ISSUE": issue}) for issue in (0, 1)]
            outs = {issue: calls[issue]() for issue in (0, 1)}
            row["issue0_bwd_ms"], row["issue1_bwd_ms"] = alternating_ms(timer, calls)
            row["max_rel_diff"] = ((outs[1][0].float() - outs[0][0].float()).norm() /
                                   outs[0][0].float().norm()).item()
            emit(row)
        for atomic_dq in ("1", "0"):
            row = {"B": B, "H": H, "N": n, "D": D, "causal": causal, "density_percent": density,
                   "atomic_dq": atomic_dq, "device": torch.cuda.get_device_name()}
            calls = [lambda issue=issue: tilejit.ops.attention_backward(
                q, k, v, o, lse, dout, causal=causal, block_mask=mask,
                config={"ATOMIC_DQ": atomic_dq, "ISSUE": issue}) for issue in (0, 1)]
            grads = {issue: calls[issue]() for issue in (0, 1)}
            row["issue0_bwd_ms"], row["issue1_bwd_ms"] = alternating_ms(timer, calls)
            row["max_rel_diff"] = max(((a.float() - b.float()).norm() / b.float().norm()).item()
                                      for a, b in zip(grads[1], grads[0]))
            emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
