"""Ring attention timed beside one GPU and PyTorch's own context parallelism, in one run
(torchrun, one process per GPU; WORKLOADS.md / issue 20's shape by default):

    torchrun --nproc-per-node 2 bench/ring_attention_bench.py --seqlen 131072 --out ring.jsonl

Per call: CUDA events on every rank around the call (all ranks start together after a
barrier), the slowest rank's time, the median over --reps. One GPU: tilejit's attention on
the whole sequence (rank 0's GPU while the others wait). PyTorch: context_parallel over a
DeviceMesh of the same ranks with SDPA on each backend in --backends (cuDNN and
FlashAttention-2 by default), load-balanced causal."""

import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import tilejit


def timed(fn, reps, warmup=1, every_rank=True):
    """Median over reps of the slowest rank's event time (ms) of fn()."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        t = torch.tensor([s.elapsed_time(e)], device="cuda")
        if every_rank:
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seqlen", type=int, default=131072)
    p.add_argument("--headdim", type=int, default=128)
    p.add_argument("--causal", type=int, default=1)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--skip", default="", help="comma list of: one, torch")
    p.add_argument("--backends", default="cudnn,flash",
                   help="SDPA backends for torch's context_parallel, each timed")
    p.add_argument("--out", default="")
    a = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    causal = bool(a.causal)
    flops = 4 * a.batch * a.heads * a.seqlen * a.seqlen * a.headdim * (0.5 if causal else 1.0)
    torch.manual_seed(0)
    shape = (a.batch, a.heads, a.seqlen, a.headdim)
    q, k, v, dout = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    rows = []

    def report(impl, step, ms, extra=None):
        row = {"impl": impl, "step": step, "ms": round(ms, 3), "world": world,
               "shape": f"B={a.batch} H={a.heads} N={a.seqlen} D={a.headdim}{' causal' if causal else ''}",
               "tflops": round(flops * (2.5 if step == "backward" else 1) / ms / 1e9, 1)}
        row.update(extra or {})
        rows.append(row)
        if rank == 0:
            print(json.dumps(row), flush=True)

    # tilejit ring.
    ring = tilejit.ops.ring_group()
    ql, kl, vl, dl = (tilejit.ops.ring_shard(t, world, rank) for t in (q, k, v, dout))
    o, lse = tilejit.ops.ring_attention_forward(ql, kl, vl, ring=ring, causal=causal)
    report("tilejit ring", "forward", timed(
        lambda: tilejit.ops.ring_attention_forward(ql, kl, vl, ring=ring, causal=causal,
                                                   out=o, lse=lse), a.reps))
    grads = [torch.empty_like(t) for t in (ql, kl, vl)]
    report("tilejit ring", "backward", timed(
        lambda: tilejit.ops.ring_attention_backward(ql, kl, vl, o, lse, dl, ring=ring,
                                                    causal=causal, dq=grads[0], dk=grads[1],
                                                    dv=grads[2]), a.reps))
    mem = torch.cuda.max_memory_allocated() / 2**30
    if rank == 0:
        print(f"rank 0 peak memory so far {mem:.2f} GiB", flush=True)

    # One GPU, the whole sequence (rank 0; the others wait at the barrier).
    if "one" not in a.skip.split(","):
        if rank == 0:
            of, lf = tilejit.ops.attention_forward(q, k, v, causal=causal)
        one = {"forward": lambda: tilejit.ops.attention_forward(q, k, v, causal=causal, out=of,
                                                                lse=lf),
               "backward": lambda: tilejit.ops.attention_backward(q, k, v, of, lf, dout,
                                                                  causal=causal)}
        for step, fn in one.items():
            ms = timed(fn if rank == 0 else (lambda: None), a.reps, every_rank=False)
            report("tilejit one GPU", step, ms)

    # PyTorch's context parallelism (SDPA over a DeviceMesh), forward and backward.
    if "torch" not in a.skip.split(","):
        try:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.tensor.experimental import context_parallel
            from torch.nn.attention import SDPBackend, sdpa_kernel
            mesh = init_device_mesh("cuda", (world,))
            names = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                     "efficient": SDPBackend.EFFICIENT_ATTENTION}
            for backend in (names[x] for x in a.backends.split(",") if x):
                try:
                    bufs = [t.clone() for t in (q, k, v, dout)]
                    with sdpa_kernel(backend), context_parallel(
                            mesh, buffers=bufs, buffer_seq_dims=[2, 2, 2, 2]):
                        qc, kc, vc, dc = (t.detach().requires_grad_(i < 3)
                                          for i, t in enumerate(bufs))
                        out = {}

                        def f():
                            out["o"] = F.scaled_dot_product_attention(qc, kc, vc,
                                                                      is_causal=causal)
                        fwd = timed(f, a.reps)

                        def b():
                            qc.grad = kc.grad = vc.grad = None
                            out["o"].backward(dc, retain_graph=True)
                        f()
                        bwd = timed(b, a.reps)
                    report("torch context_parallel", "forward", fwd, {"backend": backend.name})
                    report("torch context_parallel", "backward", bwd, {"backend": backend.name})
                except Exception as e:  # the next backend
                    if rank == 0:
                        print(f"torch context_parallel with {backend.name}: "
                              f"{type(e).__name__}: {str(e)[:300]}", flush=True)
        except Exception as e:
            if rank == 0:
                print(f"torch context_parallel unavailable: {type(e).__name__}: {e}", flush=True)
    if rank == 0 and a.out:
        with open(a.out, "a") as fh:
            for r in rows:
                r["date"] = time.strftime("%Y-%m-%d")
                r["gpu"] = torch.cuda.get_device_name()
                fh.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
