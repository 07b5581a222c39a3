#!/usr/bin/env python3
"""The pipelines' slot release compared: the attention kernels compiled with the block barrier at
every iteration's top (TILEJIT_PIPELINE_RELEASE=barrier) and with per-slot mbarriers (the
default), each timed through tilejit.ops in this process. Run it once per setting (the setting
is read when a kernel compiles); each JSON line names the one it ran with.

    PYTHONPATH=python TILEJIT_LIBRARY=... TILEJIT_PIPELINE_RELEASE=barrier \\
        python3 bench/attention_release_time.py --out FILE

bf16 B=4 H=16: N = 8192 (D = 128 causal and not, D = 64 not causal) and N = 16384 D = 128 at
10% of the blocks kept (a random mask per head, the diagonal kept, seed 0); forward and backward
with the Hopper tiles' plans, and the backward at STAGES = 3 besides (a third ring slot lets the
warpgroups drift further apart). L2 flushed before each call, CUDA events, median of 30 after 3
warm-ups (bench/peers/flushed_timer.py).
"""
import os
import sys

from attention_bench_common import session, random_block_mask, random_tensors


def main():
    started = session(__doc__, "attention_release_time")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    release = os.environ.get("TILEJIT_PIPELINE_RELEASE") or "mbarrier"
    B, H = 4, 16
    for n, d, causal, density in ((8192, 128, False, None), (8192, 128, True, None),
                                  (8192, 64, False, None), (16384, 128, False, 10)):
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, d), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None

        def fwd():
            return tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        o, lse = fwd()
        row = {"B": B, "H": H, "N": n, "D": d, "causal": causal, "density_percent": density,
               "release": release, "device": torch.cuda.get_device_name(),
               "fwd_ms": timer.median_ms(fwd), "o_sum": o.float().abs().sum().item()}
        for name, config in (("bwd_ms", None), ("bwd_stages3_ms", {"STAGES": 3})):
            def bwd():
                return tilejit.ops.attention_backward(q, k, v, o, lse, dout, causal=causal,
                                                      block_mask=mask, config=config)
            try:
                g = bwd()
                row[name] = timer.median_ms(bwd)
                row[name.replace("_ms", "_grad_sum")] = sum(t.float().abs().sum().item() for t in g)
            except Exception as e:  # a tile that does not fit is reported, not fatal
                row[name] = None
                row[name.replace("_ms", "_error")] = str(e)[:200]
        emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
