"""A first look at dequant_gemm on the GPU (issue 15, not its benchmark yet): tilejit's int4
packed path (kernels_src/workloads/dequant_gemm.tile: w4_repack once, then w4a16_tc per call,
tuned per shape with Kernel.tune) and optionally int8 (w8a16_mma) against fp16 cuBLAS
(torch.nn.functional.linear) on Qwen3-4B's linears, L2 flushed before every call, medians of
CUDA-event times; every int4 output checked against x @ W^T in f32. Prints a table and writes
JSON lines.

    python bench/dequant_first_look.py [--json FILE] [--db FILE] [--m 1,4,16] [--shapes qkv,o]
        [--seconds S] [--int8]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import tilejit  # noqa: E402

SHAPES = {"qkv": (6144, 2560), "o": (2560, 4096), "gate_up": (19456, 2560), "down": (2560, 9728),
          "lm_head": (151936, 2560)}
FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def median_us(f, reps=50):
    times = []
    for _ in range(reps):
        FLUSH.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def gptq(n, k, group=128):
    q = torch.randint(0, 2**31 - 1, (k // 8, n), dtype=torch.int32, device="cuda")
    scales = (torch.rand(k // group, n, device="cuda") * 0.02 + 0.001).half()
    zeros = torch.randint(0, 2**31 - 1, (k // group, (n + 7) // 8), dtype=torch.int32, device="cuda")
    g_idx = (torch.arange(k, device="cuda", dtype=torch.int32) // group)
    return q, scales, zeros, g_idx


def nibbles(words, axis):
    """The eight 4-bit fields of each int32 along `axis` (field i = bits 4i..4i+3), expanded."""
    shifts = 4 * torch.arange(8, device=words.device, dtype=torch.int32)
    w = words.unsqueeze(axis + 1) if axis >= 0 else words.unsqueeze(-1)
    shape = [1] * w.dim()
    shape[axis + 1 if axis >= 0 else -1] = 8
    f = (w >> shifts.view(shape)) & 15
    out_shape = list(words.shape)
    out_shape[axis] *= 8
    return f.reshape(out_shape)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--db", default="/tmp/dequant-first-look.db")
    p.add_argument("--m", default="1,4,16,64,256")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--int8", action="store_true", help="also tune and time w8a16_mma")
    a = p.parse_args()
    k8 = tilejit.load("embedded:workloads/dequant_gemm.tile", "w8a16_mma")
    repack = tilejit.load("embedded:workloads/dequant_gemm.tile", "w4_repack")
    k4tc = tilejit.load("embedded:workloads/dequant_gemm.tile", "w4a16_tc")
    cfg = {"G": 128, "ACT": 0}
    rows = []
    for name in a.shapes.split(","):
        n, kdim = SHAPES[name]
        w16 = torch.randn(n, kdim, device="cuda", dtype=torch.float16) * 0.02
        q, s, z, g = gptq(n, kdim)
        # The one-time repack (identity permutation: no act-order), timed apart and checked.
        perm = torch.arange(kdim, device="cuda", dtype=torch.int32)
        qt = torch.empty(n, kdim // 8, device="cuda", dtype=torch.int32)
        repack(q, perm, qt)
        repack_us = median_us(lambda: repack(q, perm, qt), reps=5)
        qk = nibbles(q, 0)  # [K, N]
        packed_ok = torch.equal(nibbles(qt, 1), qk.t())
        zf = nibbles(z, 1)[:, :n].repeat_interleave(128, dim=0)[:kdim]  # [K, N]
        sf = s.float().repeat_interleave(128, dim=0)[:kdim]
        w_deq = ((qk - zf).float() * sf).t()  # [N, K]
        if a.int8:
            w8 = torch.randint(-128, 128, (n, kdim), dtype=torch.int8, device="cuda")
            s8 = (torch.rand(n, device="cuda") * 0.02 + 0.001).half()
        for m in [int(v) for v in a.m.split(",")]:
            x = torch.randn(m, kdim, device="cuda", dtype=torch.float16)
            y = torch.empty(m, n, device="cuda", dtype=torch.float16)
            fp16 = median_us(lambda: torch.nn.functional.linear(x, w16))
            tuned = k4tc.tune(x, qt, s, z, perm, y, config=cfg, database=a.db, trials=64,
                              seconds=a.seconds)
            int4 = median_us(lambda: k4tc(x, qt, s, z, perm, y, config=cfg))
            y.fill_(float("nan"))
            k4tc(x, qt, s, z, perm, y, config=cfg)
            y_ref = x.float() @ w_deq.t()
            err = ((y.float() - y_ref).norm() / y_ref.norm()).item()
            floor_bytes = qt.numel() * 4 + s.numel() * 2 + z.numel() * 4 + x.numel() * 2 + y.numel() * 2
            row = {"shape": name, "N": n, "K": kdim, "M": m, "fp16_cublas_us": fp16,
                   "tilejit_int4_us": int4, "speedup_vs_fp16": fp16 / int4, "rel_err": err,
                   "config": tuned["config"], "repack_us": repack_us, "repack_ok": packed_ok,
                   "int4_bytes": floor_bytes, "int4_gbps": floor_bytes / int4 / 1e3,
                   "kernel": "w4a16_tc", "device": torch.cuda.get_device_name(),
                   "tilejit": tilejit.version()}
            line = (f"{name:8} M={m:<4} fp16 {fp16:7.1f} us  int4 {int4:7.1f} us {fp16 / int4:5.2f}x "
                    f"{floor_bytes / int4 / 1e3:5.0f} GB/s err {err:.0e} ")
            if a.int8:
                tuned8 = k8.tune(x, w8, s8, y, database=a.db, trials=48, seconds=a.seconds)
                int8 = median_us(lambda: k8(x, w8, s8, y))
                row.update({"tilejit_int8_us": int8, "int8_speedup_vs_fp16": fp16 / int8,
                            "config_int8": tuned8["config"]})
                line += f" int8 {int8:7.1f} us {fp16 / int8:5.2f}x "
            rows.append(row)
            print(line + f"repack {repack_us:5.0f} us ok={packed_ok} "
                  + ",".join(f"{k}={v}" for k, v in tuned["config"].items() if k not in ("T", "G", "ACT")),
                  flush=True)
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
