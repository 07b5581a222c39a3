"""A first look at dequant_gemm on the GPU (issue 15, not its benchmark yet): tilejit's int4
kernels (kernels_src/workloads/dequant_gemm.tile: w4a16_mma on tensor cores, and the act-order
w4a16_gemv; tuned per shape with Kernel.tune) against fp16
cuBLAS (torch.nn.functional.linear) at M = 1, 4, 16 on Qwen3-4B's linears, L2 flushed before
every call, medians of CUDA-event times. Prints a table and writes JSON lines.

    python bench/dequant_first_look.py [--json FILE] [--db FILE]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import tilejit  # noqa: E402

SHAPES = {"qkv": (6144, 2560), "o": (2560, 4096), "gate_up": (19456, 2560), "down": (2560, 9728)}
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--db", default="/tmp/dequant-first-look.db")
    a = p.parse_args()
    k4 = tilejit.load("embedded:workloads/dequant_gemm.tile", "w4a16_gemv")
    k4mma = tilejit.load("embedded:workloads/dequant_gemm.tile", "w4a16_mma")
    k8 = tilejit.load("embedded:workloads/dequant_gemm.tile", "w8a16_mma")
    rows = []
    for name, (n, kdim) in SHAPES.items():
        w16 = torch.randn(n, kdim, device="cuda", dtype=torch.float16) * 0.02
        q, s, z, g = gptq(n, kdim)
        w8 = torch.randint(-128, 128, (n, kdim), dtype=torch.int8, device="cuda")
        s8 = (torch.rand(n, device="cuda") * 0.02 + 0.001).half()
        for m in (1, 4, 16):
            x = torch.randn(m, kdim, device="cuda", dtype=torch.float16)
            y = torch.empty(m, n, device="cuda", dtype=torch.float16)
            tuned = k4.tune(x, q, s, z, g, y, database=a.db, trials=24, seconds=30)
            tuned_mma = k4mma.tune(x, q, s, z, y, config={"G": 128}, database=a.db, trials=48,
                                   seconds=30)
            tuned8 = k8.tune(x, w8, s8, y, database=a.db, trials=48, seconds=30)
            fp16 = median_us(lambda: torch.nn.functional.linear(x, w16))
            int8 = median_us(lambda: k8(x, w8, s8, y))
            int4_gemv = median_us(lambda: k4(x, q, s, z, g, y))
            int4 = median_us(lambda: k4mma(x, q, s, z, y, config={"G": 128}))
            floor_bytes = q.numel() * 4 + s.numel() * 2 + z.numel() * 4 + g.numel() * 4 + x.numel() * 2 + y.numel() * 2
            row = {"shape": name, "N": n, "K": kdim, "M": m, "fp16_cublas_us": fp16,
                   "tilejit_int4_us": int4, "tilejit_int4_gemv_us": int4_gemv,
                   "tilejit_int8_us": int8, "int8_speedup_vs_fp16": fp16 / int8,
                   "config_int8": tuned8["config"],
                   "speedup_vs_fp16": fp16 / int4, "config_gemv": tuned["config"],
                   "int4_bytes": floor_bytes, "int4_gbps": floor_bytes / int4 / 1e3,
                   "config": tuned_mma["config"], "device": torch.cuda.get_device_name(),
                   "tilejit": tilejit.version()}
            rows.append(row)
            print(f"{name:8} M={m:<3} fp16 {fp16:7.1f} us  int4 mma {int4:7.1f} us "
                  f"{fp16 / int4:5.2f}x {row['int4_gbps']:6.0f} GB/s  int8 {int8:7.1f} us "
                  f"{fp16 / int8:5.2f}x  (gemv {int4_gemv:7.1f} us)  "
                  f"{','.join(f'{k}={v}' for k, v in tuned_mma['config'].items() if k not in 'TG')}")
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
