"""What the attention timing scripts in bench/ share: their inputs (random q, k, v, do; a random
block mask per head with its diagonal kept, as a tilejit.ops.BlockMask) and their JSON rows
(printed, and appended to --out's file)."""
import argparse
import json
import os
import sys

# flushed_timer lives beside the peers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))


def random_tensors(torch, count, shape, dtype):
    """`count` tensors of standard normal values on the GPU."""
    return [torch.randn(*shape, device="cuda", dtype=dtype) for _ in range(count)]


def random_block_mask(torch, tilejit, heads, n, density_percent, block=128):
    """A [1, heads, nb, nb] mask keeping about density_percent of the blocks (each drawn
    independently, the diagonal always), as tilejit.ops.BlockMask."""
    nb = (n + block - 1) // block
    m = torch.rand(1, heads, nb, nb, device="cuda") < density_percent / 100
    m |= torch.eye(nb, dtype=torch.bool, device="cuda")
    return tilejit.ops.BlockMask(m)


def bwd_kernel_call(rt, path, config, q, k, v, dout, lse, delta, dk, dv, dq_acc, scale,
                    mask=None):
    """A call of attn_bwd (dense) or attn_bwd_sparse (with a tilejit.ops.BlockMask of blocks
    of 128) compiled from the .tile file at `path`, under `config` (a dict; BLK added for the
    block-sparse kernel): the kernel alone, for scripts that time rewrites of its source."""
    config = dict(config)
    if mask is None:
        kern = rt.load(path, "attn_bwd")
        args = (q, k, v, dout, lse, delta, dk, dv, dq_acc, scale)
    else:
        kern = rt.load(path, "attn_bwd_sparse")
        config["BLK"] = 128
        _, counts, indices = mask.lists("attention_backward", q, True)
        args = (q, k, v, dout, lse, delta, counts, indices, dk, dv, dq_acc, scale)
    return lambda: kern(*args, config=config)


class Rows:
    """Emits one JSON line per row on stdout and, with a path, appends it to that file."""

    def __init__(self, path=None):
        self.out = open(path, "a") if path else None

    def emit(self, row):
        line = json.dumps(row)
        print(line, flush=True)
        if self.out:
            self.out.write(line + "\n")
            self.out.flush()


def session(doc, name, extra_args=None):
    """What every timing script starts with: its --out (and extra_args(parser)'s) arguments, then
    torch, tilejit, a FlushedTimer and a Rows emitter; None (after saying so) without a GPU."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", help="also append the JSON lines to this file")
    if extra_args:
        extra_args(p)
    args = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        print(f"{name}: no CUDA device; nothing to time", file=sys.stderr)
        return None
    import tilejit
    from flushed_timer import FlushedTimer
    return args, torch, tilejit, FlushedTimer(torch), Rows(args.out).emit


def alternating_ms(timer, calls, rounds=5, n=10):
    """FlushedTimer.alternating_ms: the calls timed in turn, so that the clock's drift weighs on
    all alike."""
    return timer.alternating_ms(calls, rounds=rounds, n=n)
