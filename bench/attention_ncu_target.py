#!/usr/bin/env python3
"""One forward and one backward of tilejit's attention, for a profiler to read (ncu): nothing timed.

    PYTHONPATH=python TILEJIT_LIBRARY=... ncu ... python3 bench/attention_ncu_target.py [--issue 0|1]

bf16 B=4 H=16 D=128, the Hopper tiles' plans: N = 8192 dense (not causal), then N = 16384 with
10% of the blocks kept (a random mask per head, the diagonal kept). The kernels run once each
after one untimed warm-up pass (so that modules are compiled and loaded before the profiler
looks: filter with --launch-skip / -k). Without options the kernels run as the ops launch them
(their Hopper tiles, ISSUE included). --issue sets the kernels' ISSUE generic (the dots left
running: attn_fwd's p v (dense only), the backward kernels' score products and dv / dk).
"""
import argparse
import sys

from attention_bench_common import random_block_mask, random_tensors


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--issue", type=int, choices=(0, 1), default=None,
                   help="the kernels' ISSUE generic (default: the ops' own choice)")
    p.add_argument("--atomic-dq", type=int, choices=(0, 1),
                   help="the backward's ATOMIC_DQ (default: the op's choice, attn_dq on Hopper)")
    p.add_argument("--dense-only", action="store_true", help="only the dense case")
    p.add_argument("--config", default="",
                   help="more of the backward's generics, 'NAME=VALUE,...' (e.g. BULK=1,PRODUCER=1)")
    args = p.parse_args()
    # Nothing forced by default: a profile of "the op's" kernels is of what the op launches (a
    # default of ISSUE = 0 once made a block-sparse backward profile compare the wrong builds).
    config = {} if args.issue is None else {"ISSUE": args.issue}
    bwd_config = dict(config)
    if args.atomic_dq is not None:
        bwd_config["ATOMIC_DQ"] = args.atomic_dq
    for item in filter(None, args.config.split(",")):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            p.error(f"--config: '{item}' is not NAME=VALUE (a whole number)")
        bwd_config[name.strip()] = int(value)
    import torch
    if not torch.cuda.is_available():
        print("attention_ncu_target: no CUDA device", file=sys.stderr)
        return 0
    import tilejit
    B, H, D = 4, 16, 128
    torch.manual_seed(0)
    for n, density in ((8192, None),) if args.dense_only else ((8192, None), (16384, 10)):
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        for _ in range(2):  # the first pass compiles and loads
            o, lse = tilejit.ops.attention_forward(  # attn_fwd_sparse has no ISSUE
                q, k, v, block_mask=mask, config=None if mask is not None or not config else config)
            tilejit.ops.attention_backward(q, k, v, o, lse, dout, block_mask=mask,
                                           config=bwd_config or None)
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
