#!/usr/bin/env python3
"""tilejit's own peer for `hbv` (WORKLOADS.md section 5), run beside `tilejit bench --workload hbv`.

    python3 bench/peers/hbv_peer.py --yardstick .peers --out FILE.jsonl [--quick | --grid] [--commit ID]

What it times, per shape (B in {1024, 16384}, T = 1461; --quick: B = 1024 only), one training
step = the forward as training runs it + the backward of sum(dQ * Q), on the same inputs:

  triton        the shared yardstick's fused Triton kernels (../shared/peers/hbv.py, imported
                from --yardstick, never copied here): one forward launch saving the five states
                per day, one reverse-time launch.
  torch_eager   the PyTorch loop over days (the yardstick's hbv_torch) with autograd.
  torch_compile the same day step under torch.compile (one compiled step, the days looped in
                Python: compiling the whole 1461-day loop unrolled does not finish), autograd.

--grid: the Triton kernels alone on every WORKLOADS.md shape (B in {32, 256, 1024, 4096, 16384}
x T in {100, 365, 730, 1461}), beside `tilejit bench --workload hbv` with no --shape.

The eager and compiled loops launch thousands of small kernels per step: they run at B = 1024
only, with few repetitions. Timing: CUDA events around the step, the L2 flushed (256 MB zeroed)
before each, median. Each row's gradients are compared with the Triton peer's (err: the largest
norm-relative error over the 15 gradient groups). mem_mb: peak memory of one step beyond the
inputs (torch.cuda.max_memory_allocated).

Rows (JSON lines): {workload: "hbv", variant: "fwd_bwd", impl, shape: {B, T}, ms, fwd_ms, bwd_ms,
mem_mb, err, device, date, commit}, pairing with tilejit bench's rows by shape.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

T_DAYS = 1461
GRID = [(b, t) for t in (100, 365, 730, 1461) for b in (32, 256, 1024, 4096, 16384)]


def flush_l2(_buf=[]):
    if not _buf:
        _buf.append(torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda"))
    _buf[0].zero_()


def time_ms(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush_l2()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def peak_mb(fn):
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 1e6


def max_group_err(g, ref):
    """The largest ||g - ref|| / ||ref|| over the 12 parameter columns and P, TEMP, PET."""
    dpar, dp, dt, de = g
    rpar, rp, rt, re_ = ref
    groups = [(dpar[:, i], rpar[:, i]) for i in range(12)] + [(dp, rp), (dt, rt), (de, re_)]
    errs = []
    for a, b in groups:
        nb = b.double().norm().item()
        errs.append((a.double() - b.double()).norm().item() / nb if nb > 0 else 0.0)
    return max(errs)


def compiled_step(y):
    """One day of the yardstick's hbv_torch as a function of the states, compiled once."""
    def step(states, p, tmp, pet, par):
        sp, mw, sm, suz, slz = states
        BETA, FC, K0, K1, K2, LP, PERC, UZL, TT, CFMAX, CFR, CWH = par.unbind(1)
        zero = torch.zeros_like(p)
        rain = torch.where(tmp >= TT, p, zero)
        sp = sp + (p - rain)
        melt = y._min1(torch.clamp(CFMAX * (tmp - TT), min=0.0), sp)
        mw = mw + melt
        sp = sp - melt
        refr = y._min1(torch.clamp(CFR * CFMAX * (TT - tmp), min=0.0), mw)
        sp = sp + refr
        mw = mw - refr
        tosoil = torch.clamp(mw - CWH * sp, min=0.0)
        mw = mw - tosoil
        wet = torch.clamp((sm / FC) ** BETA, 0.0, 1.0)
        recharge = (rain + tosoil) * wet
        sm = sm + (rain + tosoil - recharge)
        excess = torch.clamp(sm - FC, min=0.0)
        sm = sm - excess
        ef = torch.clamp(sm / (LP * FC), 0.0, 1.0)
        et = y._min1(sm, pet * ef)
        sm = torch.clamp(sm - et, min=1e-5)
        suz = suz + (recharge + excess)
        perc = y._min1(suz, PERC.expand_as(suz))
        suz = suz - perc
        q0 = K0 * torch.clamp(suz - UZL, min=0.0)
        suz = suz - q0
        q1 = K1 * suz
        suz = suz - q1
        slz = slz + perc
        q2 = K2 * slz
        slz = slz - q2
        return (sp, mw, sm, suz, slz), q0 + q1 + q2

    fn = torch.compile(step, dynamic=False)

    def run(P, TEMP, PET, par):
        B, T = P.shape
        states = tuple(torch.full([B], 0.001, dtype=P.dtype, device=P.device) for _ in range(5))
        qs = []
        for t in range(T):
            states, q = fn(states, P[:, t], TEMP[:, t], PET[:, t], par)
            qs.append(q)
        return torch.stack(qs, dim=1)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yardstick", default=".peers", help="folder holding the shared hbv.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--grid", action="store_true",
                    help="Triton alone on every WORKLOADS.md shape (B x T)")
    ap.add_argument("--commit", default="")
    ap.add_argument("--slow-reps", type=int, default=2)
    args = ap.parse_args()
    if args.quick and args.grid:
        ap.error("--quick and --grid pick different shapes: give one")
    global torch
    import torch  # after the arguments: a bad one is refused without torch or a GPU
    sys.path.insert(0, os.path.abspath(args.yardstick))
    import hbv as y  # the shared yardstick

    dev = torch.cuda.get_device_name(0)
    common = {"workload": "hbv", "variant": "fwd_bwd", "device": dev,
              "date": datetime.date.today().isoformat(), "commit": args.commit}
    rows = []
    shapes = GRID if args.grid else [(1024, T_DAYS)] if args.quick else [(1024, T_DAYS),
                                                                         (16384, T_DAYS)]
    for B, T in shapes:
        shape = {"B": B, "T": T}
        P, TEMP, PET, par, dQ = y.make_inputs(B, T, device="cuda", seed=B * 7 + T)

        def triton_step():
            _, S = y.hbv_triton_fwd(P, TEMP, PET, par, save_states=True)
            return y.hbv_triton_bwd(P, TEMP, PET, par, S, dQ)
        ref = triton_step()
        t_fwd = time_ms(lambda: y.hbv_triton_fwd(P, TEMP, PET, par, save_states=True), 20)
        t_all = time_ms(triton_step, 20)
        rows.append(dict(common, impl="triton", shape=shape, ms=t_all, fwd_ms=t_fwd,
                         bwd_ms=t_all - t_fwd, mem_mb=peak_mb(triton_step), err=0.0))
        print(json.dumps(rows[-1]), flush=True)
        if B != 1024 or T != T_DAYS or args.grid:
            continue
        for impl, fwd in (("torch_eager", y.hbv_torch), ("torch_compile", compiled_step(y))):
            xs = [x.clone().requires_grad_(True) for x in (P, TEMP, PET, par)]

            def step():
                Q = fwd(*xs)
                return torch.autograd.grad(Q, xs, dQ)
            try:
                g = step()  # compiles the step (torch_compile) before timing
                err = max_group_err((g[3], g[0], g[1], g[2]), ref)
                t_all = time_ms(step, args.slow_reps)
                t_fwd = time_ms(lambda: fwd(*xs), args.slow_reps)
                rows.append(dict(common, impl=impl, shape=shape, ms=t_all, fwd_ms=t_fwd,
                                 bwd_ms=t_all - t_fwd, mem_mb=peak_mb(step), err=err))
            except Exception as e:  # a peer that fails is a row that says so
                rows.append(dict(common, impl=impl, shape=shape, ms=None, error=repr(e)[:300]))
            print(json.dumps(rows[-1]), flush=True)
    with open(args.out, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
