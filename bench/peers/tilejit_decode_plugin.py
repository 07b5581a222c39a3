"""tilejit's backends for dequant_decode_step.py (--plugin bench/peers/tilejit_decode_plugin.py).

  tilejit_int4  GPTQ int4, groups of 128: kernels_src/workloads/dequant_gemm.tile's w4_repack
                once per layer (timed apart, like a model load), then w4a16_tc per call.
  tilejit_int8  int8 weight-only with per-row scales: w8a16_mma.

Each (N, K) is tuned once, before capture (Kernel.tune, TILEJIT_DECODE_TUNE_S seconds, default
8), into TILEJIT_DECODE_DB (default /tmp/tilejit-decode.db); every layer of that shape then
launches with the winner, forced, so the graph holds exactly the tuned kernels. The module
needs the tilejit package (python/) and its library (TILEJIT_LIBRARY or the installed one).
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import tilejit  # noqa: E402

SOURCE = "embedded:workloads/dequant_gemm.tile"
GROUP = 128
DB = os.environ.get("TILEJIT_DECODE_DB", "/tmp/tilejit-decode.db")
TUNE_S = float(os.environ.get("TILEJIT_DECODE_TUNE_S", "8"))
_kernels = {}
_tuned = {}  # (kernel, N, K, M) -> config


def _kernel(name):
    if name not in _kernels:
        _kernels[name] = tilejit.load(SOURCE, name)
    return _kernels[name]


def _config(name, key, args, base):
    """The tuned configuration for this shape (tuned on first use), with `base` forced."""
    if key not in _tuned:
        _tuned[key] = _kernel(name).tune(*args, config=base, database=DB, trials=64,
                                         seconds=TUNE_S)["config"]
    return _tuned[key]


def _nibbles(words, axis):
    shifts = 4 * torch.arange(8, device=words.device, dtype=torch.int32)
    w = words.unsqueeze(axis + 1)
    shape = [1] * w.dim()
    shape[axis + 1] = 8
    out = list(words.shape)
    out[axis] *= 8
    return ((w >> shifts.view(shape)) & 15).reshape(out)


def make_int4(kind, N, K, M=1):
    dev = "cuda"
    qweight = torch.randint(-2**31, 2**31 - 1, (K // 8, N), dtype=torch.int32, device=dev)
    scales = (torch.rand(K // GROUP, N, device=dev) * 0.02 + 0.001).half()
    qzeros = torch.randint(-2**31, 2**31 - 1, (K // GROUP, (N + 7) // 8), dtype=torch.int32,
                           device=dev)
    perm = torch.arange(K, dtype=torch.int32, device=dev)
    packed = torch.empty(N, K // 8, dtype=torch.int32, device=dev)
    _kernel("w4_repack")(qweight, perm, packed)
    y = torch.empty(M, N, dtype=torch.float16, device=dev)
    probe = torch.randn(M, K, dtype=torch.float16, device=dev)
    cfg = _config("w4a16_tc", ("w4a16_tc", N, K, M), (probe, packed, scales, qzeros, perm, y),
                  {"G": GROUP, "ACT": 0})
    k = _kernel("w4a16_tc")

    def linear(x):
        k(x, packed, scales, qzeros, perm, y, config=cfg)
        return y

    def weight64():
        q = _nibbles(qweight, 0).double()  # [K, N]
        z = _nibbles(qzeros, 1)[:, :N].double().repeat_interleave(GROUP, dim=0)[:K]
        s = scales.double().repeat_interleave(GROUP, dim=0)[:K]
        return ((q - z) * s).t().contiguous()

    linear.act_dtype = torch.float16
    linear.weight64 = weight64
    return linear


def make_int8(kind, N, K, M=1):
    dev = "cuda"
    w8 = torch.randint(-128, 128, (N, K), dtype=torch.int8, device=dev)
    s8 = (torch.rand(N, device=dev) * 0.02 + 0.001).half()
    y = torch.empty(M, N, dtype=torch.float16, device=dev)
    probe = torch.randn(M, K, dtype=torch.float16, device=dev)
    cfg = _config("w8a16_mma", ("w8a16_mma", N, K, M), (probe, w8, s8, y), None)
    k = _kernel("w8a16_mma")

    def linear(x):
        k(x, w8, s8, y, config=cfg)
        return y

    linear.act_dtype = torch.float16
    linear.weight64 = lambda: w8.double() * s8.double()[:, None]
    return linear


def register(register_backend):
    register_backend("tilejit_int4", make_int4, "int4", "tilejit w4_repack + w4a16_tc")
    register_backend("tilejit_int8", make_int8, "int8", "tilejit w8a16_mma")
