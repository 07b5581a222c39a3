"""Host time per call of paged_sparse from Python, against the same launch without Python.

Rows (each: median over 200 batches of the mean host time per call, 16 calls per batch,
synchronised between batches: few enough launches that the queue never fills, so the host
never waits for the GPU, whose time per kernel is printed beside for context):
  paged c_abi     ctypes call of tj_paged_sparse_decode on arguments packed once: the C++ op
                  (checks, prepared-launch lookup, cuLaunchKernel) plus one ctypes call
  paged c_abi x1  the same, one call per batch (nothing queued before it)
  paged check     the same call with check_only: the C++ checks and one ctypes call, no launch
  paged ops       tilejit.ops.paged_sparse_decode(..., out=o, lse=lse): what a user calls
  paged torch_op  torch.ops.tilejit.paged_sparse_decode(...): through the PyTorch dispatcher,
                  outputs allocated by torch
  paged graph     one replay of a CUDA graph that captured ten op calls, per call: what a
                  decode loop pays when it captures the step (torch.cuda.graph)
  softmax c_abi   tj_launch on arguments packed once (the C++ launch bench's kernel)
  softmax kernel  tilejit.load(...)(x, y): the generic launch from Python
The Python overhead over the C++ launch is ops - c_abi (the goal: <= 5 us).

    python bench/python_overhead.py [--json FILE]
"""

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import tilejit  # noqa: E402
import tilejit._fastpath  # noqa: E402
from tilejit._args import as_int64_array, pack_tensor  # noqa: E402
from tilejit._native import lib  # noqa: E402


def small_problem():
    """A decode step small enough that the GPU keeps up with the host: B=1, Hq=8, Hkv=2,
    D=128, page 16, 512 tokens, 32 kept per kv head."""
    B, HQ, HKV, D, PS, S, K = 1, 8, 2, 128, 16, 512, 32
    q = torch.randn(B, HQ, D, device="cuda", dtype=torch.float16)
    k = torch.randn(S // PS, PS, HKV, D, device="cuda", dtype=torch.float16)
    v = torch.randn_like(k)
    table = torch.arange(S // PS, device="cuda", dtype=torch.int32)[None]
    lens = torch.tensor([S], device="cuda", dtype=torch.int32)
    kept = torch.arange(0, S, S // K, device="cuda", dtype=torch.int32)[None, None].repeat(B, HKV, 1)
    kept_len = torch.full((B, HKV), K, device="cuda", dtype=torch.int32)
    return q, k, v, table, lens, kept, kept_len


def per_call_us(f, calls=16, batches=200):
    f()
    torch.cuda.synchronize()
    means = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            f()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        means.append((t1 - t0) / calls / 1e3)
    return statistics.median(means)


def gpu_us(f, calls=200):
    """GPU time per kernel of back-to-back launches (events around the batch)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    f()
    start.record()
    for _ in range(calls):
        f()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="append the rows to this JSON-lines file")
    a = p.parse_args()
    args = small_problem()
    o = torch.empty_like(args[0])
    lse = torch.empty(args[0].shape[:2], device="cuda", dtype=torch.float32)
    rt = tilejit.runtime()
    packed = []
    for t, name in zip(args + (o, lse), ["q", "k", "v", "bt", "sl", "ki", "kl", "o", "lse"]):
        pack_tensor(packed, t, name)
    buf, address = as_int64_array(packed)
    stream = torch.cuda.current_stream().cuda_stream

    def c_abi():
        lib.tj_paged_sparse_decode(rt._handle, address, len(packed), math.nan, None, stream, 0)

    def c_abi_check():
        lib.tj_paged_sparse_decode(rt._handle, address, len(packed), math.nan, None, stream, 1)

    def ops():
        tilejit.ops.paged_sparse_decode(*args, out=o, lse=lse)

    def torch_op():
        torch.ops.tilejit.paged_sparse_decode(*args)

    capture = torch.cuda.Stream()  # its scratch is allocated by a launch before the capture
    capture.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture):
        ops()
    torch.cuda.current_stream().wait_stream(capture)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture):
        for _ in range(10):
            ops()

    def graph_replay():
        graph.replay()

    softmax = tilejit.load("embedded:examples/softmax.tile")
    x = torch.randn(8, 64, device="cuda")
    y = torch.empty_like(x)
    sm_packed = []
    for t in (x, y):
        pack_tensor(sm_packed, t, "t")
    sm_buf, sm_address = as_int64_array(sm_packed)

    def softmax_c_abi():
        lib.tj_launch(rt._handle, softmax._handle, sm_address, len(sm_packed), None, stream, 0)

    def softmax_kernel():
        softmax(x, y)

    rows = {"paged c_abi": per_call_us(c_abi), "paged c_abi x1": per_call_us(c_abi, 1, 1000),
            "paged check": per_call_us(c_abi_check), "paged ops": per_call_us(ops),
            "paged torch_op": per_call_us(torch_op),
            "paged graph": per_call_us(graph_replay) / 10, "softmax c_abi": per_call_us(softmax_c_abi),
            "softmax kernel": per_call_us(softmax_kernel)}
    gpu = {"paged": gpu_us(c_abi), "softmax": gpu_us(softmax_c_abi)}
    device = torch.cuda.get_device_name()
    fast = tilejit._fastpath.fast is not None  # the C launch path (tilejit._fast) in use
    print(f"launch path from Python: {'C (tilejit._fast)' if fast else 'pure Python'}")
    print(f"{'path':16} {'host us/call':>12}   (GPU per kernel: paged {gpu['paged']:.1f} us, "
          f"softmax {gpu['softmax']:.1f} us)")
    for name, us in rows.items():
        print(f"{name:16} {us:12.2f}")
    print(f"python overhead over the C ABI call: paged ops {rows['paged ops'] - rows['paged c_abi']:.2f}"
          f" us, softmax kernel {rows['softmax kernel'] - rows['softmax c_abi']:.2f} us")
    if a.json:
        with open(a.json, "a") as f:
            for name, us in rows.items():
                f.write(json.dumps({"bench": "python_overhead", "path": name, "us_per_call": us,
                                    "python_path": "c" if fast else "python",
                                    "device": device, "tilejit": tilejit.version(),
                                    "torch": torch.__version__,
                                    "python": sys.version.split()[0]}) + "\n")


if __name__ == "__main__":
    main()
