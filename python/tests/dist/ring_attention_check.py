"""Ring attention across real processes and GPUs (run under torchrun, one process per GPU):
tilejit.ops.ring_attention_forward/backward and the autograd op against the float64 attention
of the whole sequence, every rank checking its own positions, outputs poisoned with NaN first.
Odd chunk lengths, GQA, head dims not a multiple of 16, causal and not, f16/bf16/f32.

    torchrun --nproc-per-node 2 python/tests/dist/ring_attention_check.py

Exits non-zero on any rank's failure (every rank prints its own lines; rank 0 a summary)."""

import math
import os
import sys

import torch
import torch.distributed as dist

import tilejit

CASES = [  # dtype, B, Hq, Hkv, chunk, D, causal
    (torch.bfloat16, 2, 4, 2, 67, 64, True),
    (torch.float16, 1, 3, 3, 40, 72, False),
    (torch.bfloat16, 1, 8, 1, 256, 128, True),
    (torch.bfloat16, 1, 2, 2, 129, 128, False),
    (torch.float32, 1, 2, 1, 33, 32, True),
]


def reference(q, k, v, dout, causal, scale):
    """o, lse and the gradients of sum(dout * o), float64, the whole sequence."""
    q, k, v = (t.double().detach().requires_grad_() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ ke.transpose(-1, -2) * scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ ve
    o.backward(dout.double())
    return o.detach(), lse.detach(), q.grad, k.grad, v.grad


def worst(got, want):
    """Largest error relative to the reference's largest magnitude (NaN counts as infinite)."""
    e = (got.double() - want).abs().max().item()
    return math.inf if math.isnan(e) else e / max(want.abs().max().item(), 1e-30)


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    ring = tilejit.ops.ring_group()
    failures = 0
    for i, (dtype, b, hq, hkv, chunk, d, causal) in enumerate(CASES):
        torch.manual_seed(1000 + i)  # the same whole tensors on every rank
        n = 2 * world * chunk
        q = torch.randn(b, hq, n, d, device="cuda").to(dtype)
        k = torch.randn(b, hkv, n, d, device="cuda").to(dtype)
        v = torch.randn(b, hkv, n, d, device="cuda").to(dtype)
        dout = torch.randn(b, hq, n, d, device="cuda").to(dtype)
        scale = 1 / math.sqrt(d)
        ref = reference(q, k, v, dout, causal, scale)
        local = [tilejit.ops.ring_shard(t, world, rank) for t in (q, k, v, dout)]
        ql, kl, vl, dl = local
        o = torch.full_like(ql, math.nan)
        lse = torch.full(ql.shape[:3], math.nan, device="cuda")
        tilejit.ops.ring_attention_forward(ql, kl, vl, ring=ring, causal=causal, out=o, lse=lse)
        grads = [torch.full_like(t, math.nan) for t in (ql, kl, vl)]
        tilejit.ops.ring_attention_backward(ql, kl, vl, o, lse, dl, ring=ring, causal=causal,
                                            dq=grads[0], dk=grads[1], dv=grads[2])
        # The autograd op: the same gradients through torch.
        qa, ka, va = (t.clone().requires_grad_() for t in (ql, kl, vl))
        oa = tilejit.ops.ring_attention(qa, ka, va, causal=causal, ring=ring)
        oa.backward(dl)
        torch.cuda.synchronize()
        want = [tilejit.ops.ring_shard(t, world, rank) for t in ref]
        wide = dtype != torch.float32
        tol = {"o": 1e-2 if wide else 2e-3, "lse": 2e-3, "dq": 3e-2 if wide else 5e-3}
        errs = {"o": worst(o, want[0]), "lse": (lse.double() - want[1]).abs().max().item(),
                "dq": worst(grads[0], want[2]), "dk": worst(grads[1], want[3]),
                "dv": worst(grads[2], want[4]), "autograd o": worst(oa, want[0]),
                "autograd dq": worst(qa.grad, want[2]), "autograd dk": worst(ka.grad, want[3]),
                "autograd dv": worst(va.grad, want[4])}
        bad = [name for name, e in errs.items()
               if not e <= tol.get(name.split()[-1], tol["dq"])]
        failures += bool(bad)
        print(f"rank {rank}/{world} case {i} {str(dtype)[6:]} B={b} Hq={hq} Hkv={hkv} "
              f"N={n} D={d}{' causal' if causal else ''}: "
              + ", ".join(f"{k_} {e:.1e}" for k_, e in errs.items())
              + (f"  FAILED {bad}" if bad else "  ok"), flush=True)
    total = torch.tensor([failures], device="cuda")
    dist.all_reduce(total)
    if rank == 0:
        print(f"ring attention check, world {world}: {len(CASES)} cases per rank, "
              f"{int(total.item())} failed", flush=True)
    dist.destroy_process_group()
    sys.exit(1 if total.item() else 0)


if __name__ == "__main__":
    main()
