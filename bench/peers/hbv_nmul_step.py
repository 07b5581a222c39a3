#!/usr/bin/env python3
"""hbv with nmul components per basin (WORKLOADS.md section 5: "also nmul = 16 parallel
components per basin, Q averaged"), one training step, tilejit beside the shared Triton
yardstick in one process:

    python3 bench/peers/hbv_nmul_step.py --yardstick .peers --out FILE.jsonl [--nmul 16]
        [--basins 256,1024,4096] [--days 1461] [--commit ID]

  triton          the yardstick's fused kernels on B x nmul models, as a Triton user runs
                  components: the forcings repeated per component, Q averaged, the forcings'
                  gradients summed over the components (all inside the timed step).
  tilejit_kernel  tilejit.ops.hbv(..., nmul=) through autograd: nmul = 2, 4, 8 or 16 in one
                  kernel (hbv_forward_nmul; each basin's forcings read once), the derived
                  backward in the op's untuned form for the B x nmul models.
  tilejit_kernel_ck  the same, the backward checkpointed from the training forward's states.
  tilejit_kernel_seg32  the same with the derived backward's segment form (32-day segments).
  tilejit_repeat  tilejit.ops.hbv on the repeated rows (the path other counts take), Q averaged.

Each row: ms (median step, CUDA events, L2 flushed before each), mem_mb (peak beyond the
inputs), err (the largest norm-relative error of Q and the four gradients against the Triton
step's). First run on an H200 on 2026-11-29 (bench/results/2026-11-29-hbv-nmul-h200.md).
"""
import argparse
import datetime
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yardstick", default=".peers", help="folder holding the shared hbv.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--nmul", type=int, default=16)
    ap.add_argument("--basins", default="256,1024,4096")
    ap.add_argument("--days", type=int, default=1461)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    if args.nmul < 2:
        ap.error("--nmul must be at least 2")
    basins = [int(b) for b in args.basins.split(",")]
    import torch
    sys.path.insert(0, os.path.abspath(args.yardstick))
    import hbv as y  # the shared yardstick
    import tilejit

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from flushed_timer import FlushedTimer  # the timing tilejit bench and the other peers share
    timer = FlushedTimer(torch)

    def time_ms(fn):
        return timer.median_ms(fn, n=args.reps, warmup=1)

    def peak_mb(fn):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 1e6

    def rel(a, b):
        nb = b.double().norm().item()
        return (a.double() - b.double()).norm().item() / nb if nb > 0 else 0.0

    nm, T = args.nmul, args.days
    common = {"workload": "hbv", "variant": f"fwd_bwd_nmul{nm}",
              "device": torch.cuda.get_device_name(0),
              "date": datetime.date.today().isoformat(), "commit": args.commit}
    rows = []
    for B in basins:
        shape = {"B": B, "T": T, "nmul": nm}
        P, TEMP, PET, _, dQ = y.make_inputs(B, T, device="cuda", seed=B * 7 + T)
        flat = y.make_inputs(B * nm, 1, device="cuda", seed=B + nm)[3]  # [B * nm, 12]
        params = flat.view(B, nm, 12).permute(0, 2, 1).contiguous()  # dHBV's [B, 12, nm]

        def triton_step():
            rep = [x.repeat_interleave(nm, 0) for x in (P, TEMP, PET)]
            q, S = y.hbv_triton_fwd(*rep, flat, save_states=True)
            Q = q.view(B, nm, T).mean(1)
            g = y.hbv_triton_bwd(*rep, flat, S, (dQ / nm).repeat_interleave(nm, 0))
            dpar = g[0].view(B, nm, 12).permute(0, 2, 1)
            return [Q] + [x.view(B, nm, T).sum(1) for x in g[1:]] + [dpar]

        def tilejit_step(in_kernel, segment=-1):
            leaves = [x.clone().requires_grad_() for x in (P, TEMP, PET, params)]

            def step():
                for x in leaves:
                    x.grad = None
                if in_kernel:
                    Q = tilejit.ops.hbv(*leaves, nmul=nm, segment=segment)
                else:
                    rep = [x.repeat_interleave(nm, 0) for x in leaves[:3]]
                    q = tilejit.ops.hbv(*rep, leaves[3].permute(0, 2, 1).reshape(B * nm, 12))
                    Q = q.view(B, nm, T).mean(1)
                (Q * dQ).sum().backward()
                return [Q.detach()] + [x.grad for x in leaves]
            return step

        ref = triton_step()
        impls = [("triton", triton_step), ("tilejit_kernel", tilejit_step(True)),
                 ("tilejit_kernel_ck", tilejit_step(True, 0)),
                 ("tilejit_kernel_seg32", tilejit_step(True, 32)),
                 ("tilejit_repeat", tilejit_step(False))]
        for impl, step in impls:
            try:
                got = step()
                err = max(rel(a, b) for a, b in zip(got, ref))
                rows.append(dict(common, impl=impl, shape=shape, ms=time_ms(step),
                                 mem_mb=peak_mb(step), err=err))
            except Exception as e:  # a peer that fails is a row that says so
                rows.append(dict(common, impl=impl, shape=shape, ms=None, error=repr(e)[:300]))
            print(json.dumps(rows[-1]), flush=True)
    with open(args.out, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
