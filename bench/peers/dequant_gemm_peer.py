#!/usr/bin/env python3
"""tilejit's peers for `dequant_gemm` (WORKLOADS.md section 2), run beside `tilejit bench`.

    python3 bench/peers/dequant_gemm_peer.py --out FILE.jsonl [--m 1,4,16] [--shapes qkv,o,...]
        [--grid "1,4,16@all;64,256,2048@qkv,gate_up"] [--quick] [--group 128] [--budget SECONDS]
        [--peers all|cublas_fp16,marlin,...] [--isolate marlin,tinygemm|none]
        [--marlin-dir .peers/marlin] [--marlin-build-dir DIR] [--no-marlin] [--yardstick-dir .peers]
        [--append] [--commit ID] [--seed N]

y[M, N] = x[M, K] @ W[N, K]^T, x fp16, fp32 accumulation, y fp16, on Qwen3-4B's linears (N x K):
qkv 6144x2560, o 2560x4096, gate_up 19456x2560, down 2560x9728, lm_head 151936x2560, and
M in {1, 4, 16, 64, 256, 2048} (`--shapes` also takes NxK). What it times, per (shape, M):

  fp16/cublas_fp16          F.linear(x, W16), W16 the GPTQ weight dequantized to fp16 ahead.
  int4/marlin               Marlin (IST-DASLab/marlin), the fastest public FP16xINT4 kernel at
                            small M: built on the device from the staged source
                            (bench/peers/stage_marlin.sh) with torch.utils.cpp_extension.load.
                            Symmetric int4, W = (q - 8) * s, groups of 128 along K (or one per
                            column), packed by Marlin's own Layer.pack; its tile shapes
                            (thread_k x thread_n) and, at M > 1024, its max_par are searched.
  int4/tinygemm             torch._weight_int4pack_mm (bf16 x): the GPTQ weights converted the
                            shared yardstick's way (zeros folded into tinygemm's (q - 8) * s + z
                            form, nibble order probed); inner_k_tiles 8, 4, 2 searched.
  int4/triton_gptq_wide     the shared yardstick's fused Triton GPTQ kernel, imported from
                            --yardstick-dir at run time (never copied here), searched over its own
                            configs plus more tiles and split-K factors (a superset: at least as
                            strong as the yardstick's search).
  int8/weight_int8pack_mm   torch._weight_int8pack_mm(x, w8, s8) (fp16 x, else bf16).
  int8/torch_naive          x @ (w8.to(fp16) * s8[:, None]).T: dequantize, then cuBLAS.

Formats (WORKLOADS.md): GPTQ qweight [K/8, N] int32 (nibble i = k 8r+i), scales [K/G, N] fp16,
qzeros [K/G, N/8] int32, W[n, k] = (q[k, n] - z[g, n]) * s[g, n]; int8 w8 [N, K], s8 [N] fp16.
Every peer's output is compared with x @ W^T computed in float64 from the exactly dequantized
weights of its own format (`err` = ||y - ref|| / ||ref||, at most 1e-2); outputs are poisoned
first. A one-time repack (Marlin, tinygemm) is done before timing, like a model load.

Isolation: a kernel that faults (an illegal instruction, a trap) poisons its process's CUDA
context, and every later call there fails. So the peers named by `--isolate` (default Marlin and
tinygemm, the ones built or dispatched outside torch's tested paths) each run in a child process
(this script with --child) that times that peer over the whole grid and writes its rows to a
temporary JSON lines file; the parent copies them (adding speedup_vs_fp16) and writes an ERROR
row, with the child's last output, for every case a crashed or stopped child left without one.
The other peers run here, after which each child gets what is left of --budget. `--peers` runs a
subset (e.g. cublas_fp16,marlin). In either process, once the context is lost the remaining
cases get ERROR rows at once instead of failing one by one.

Timing (WORKLOADS.md, as the shared peers' common.py): CUDA events around the call alone, the L2
flushed before every call (256 MB zeroed), median of 30 calls after a warm-up (p10/p90 kept).
As in paged_sparse_peer.py, a GPU spin is queued first so that the events see the device's time
and not Python's launch cost; `ms_direct` is the plain loop (triton.testing.do_bench's way).

Rows (JSON lines, pairing with the yardstick's by shape {M, N, K, G}): {workload:
"dequant_gemm", variant: fp16|int4|int8, peer, shape, layer, ms, p10_ms, p90_ms, reps,
ms_direct, err, correct, gbps (weight bytes / time), tflops, floor_ms (max(all bytes / copy
bandwidth, 2MNK / bf16 matmul peak), both measured at the start), pct_floor, speedup_vs_fp16,
config, tried, note, device, date, commit, ...}. Rows that could not run carry `error` or
`skipped` with the reason (e.g. Marlin failed to build). Exit status 1 if a timed row is wrong.

CPU dry run (bench/tests/test_dequant_peers.py): set DEV = "cpu" (and HALF) on the module; the
math, the rows and the table run, the GPU-only peers record why they did not.
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections import deque, namedtuple

try:  # the module must import without torch (CI has none: the tests skip)
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
WORKLOAD = "dequant_gemm"
DEV = "cuda"                                              # module globals: a CPU dry run swaps them
HALF = torch.float16 if torch is not None else None       # activations and the fp16 baseline
LAYERS = {"qkv": (6144, 2560), "o": (2560, 4096), "gate_up": (19456, 2560), "down": (2560, 9728),
          "lm_head": (151936, 2560)}                      # Qwen3-4B, N x K
M_VALUES = (1, 4, 16, 64, 256, 2048)
QUICK_GRID = "1,16,2048@qkv,down"                         # the yardstick's --quick shapes
TOL = 1e-2
FLUSH_BYTES = 256 * 1024 * 1024
COPY_BYTES = 1 << 30
MM_N = 8192
SLEEP_CYCLES_PER_S = 2.0e9      # SM clock ~1.7-2 GHz: a longer spin than needed is harmless
QUICK_REPS, RETIME_REPS, RETIME_TOP, FINAL_REPS, DIRECT_REPS = 8, 15, 3, 30, 20
SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)
CPU_CEILINGS = {"hbm_gbps": 3000.0, "bf16_tflops": 700.0}   # only for the CPU dry run's floors
PEERS = (("fp16", "cublas_fp16"), ("int4", "marlin"), ("int4", "tinygemm"), ("int4", "triton_gptq_wide"),
         ("int8", "weight_int8pack_mm"), ("int8", "torch_naive"))   # (variant, peer), in table order
ISOLATED = ("marlin", "tinygemm")              # --isolate's default: each in its own process
CHILD_RESERVE_S = {"marlin": 60.0, "tinygemm": 25.0}   # of --budget, kept for each isolated peer
CHILD_STOP_S = 15.0     # an isolated peer's process gets a --budget ending this long before its share
CHILD_KILL_S = 25.0     # and is killed this long after that --budget ends


# --------------------------------------------------------------------------------------------
# Shapes (plain Python: tested without a GPU)
# --------------------------------------------------------------------------------------------
def parse_int_list(text):
    """'1,4,16' -> (1, 4, 16)."""
    try:
        out = tuple(int(t) for t in str(text).split(",") if t.strip())
    except ValueError:
        raise ValueError(f"bad list '{text}': expected integers like 1,4,16") from None
    if not out or any(v <= 0 for v in out):
        raise ValueError(f"bad list '{text}': expected positive integers")
    return out


def parse_shapes(text):
    """'qkv,o' or 'all' or '256x128' -> [(name, N, K)] (names of LAYERS, or NxK spelled out)."""
    out = []
    for t in str(text).split(","):
        t = t.strip()
        if not t:
            continue
        if t == "all":
            out.extend((n, *nk) for n, nk in LAYERS.items())
        elif t in LAYERS:
            out.append((t, *LAYERS[t]))
        else:
            try:
                n, k = (int(v) for v in t.lower().split("x"))
            except ValueError:
                raise ValueError(f"bad shape '{t}': expected one of {', '.join(LAYERS)}, all, or NxK") from None
            if n <= 0 or k <= 0 or n % 8 or k % 8:
                raise ValueError(f"bad shape '{t}': N and K must be positive multiples of 8")
            out.append((f"{n}x{k}", n, k))
    seen, uniq = set(), []
    for s in out:
        if s[0] not in seen:
            seen.add(s[0])
            uniq.append(s)
    if not uniq:
        raise ValueError(f"no shapes in '{text}'")
    return uniq


def parse_grid(text):
    """'1,4,16@all;64,256,2048@qkv,gate_up' -> [(name, N, K, (M, ...))], shapes in first-mention
    order, each with its sorted M values."""
    by_name, order = {}, []
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        if "@" not in part:
            raise ValueError(f"bad grid part '{part}': expected M-list@shape-list, e.g. 1,4,16@qkv,o")
        ms, shapes = part.split("@", 1)
        mlist = parse_int_list(ms)
        for name, n, k in parse_shapes(shapes):
            if name not in by_name:
                by_name[name] = (n, k, set())
                order.append(name)
            by_name[name][2].update(mlist)
    if not order:
        raise ValueError(f"empty grid '{text}'")
    return [(name, by_name[name][0], by_name[name][1], tuple(sorted(by_name[name][2]))) for name in order]


def parse_peer_list(text, allow_none=False):
    """'cublas_fp16,marlin' or 'all' (or 'none' where allowed) -> those peers, in table order."""
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    known = [p for _, p in PEERS]
    if names == ["all"]:
        return tuple(known)
    if allow_none and names == ["none"]:
        return ()
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ValueError(f"unknown peers {', '.join(bad) or repr(text)}: expected all"
                         f"{', none' if allow_none else ''} or a comma list of {', '.join(known)}")
    return tuple(p for p in known if p in names)


def peer_variant(peer):
    return dict((p, v) for v, p in PEERS)[peer]


def grid_text(grid):
    """The inverse of parse_grid: [(name, N, K, (M, ...))] -> 'M,M@name;...' (custom shapes are
    named NxK already)."""
    return ";".join(f"{','.join(str(m) for m in ms)}@{name}" for (name, _, _, ms) in grid)


def shape_dict(M, N, K, G):
    """The row's shape, the keys the shared yardstick uses, so rows pair by shape."""
    return {"M": int(M), "N": int(N), "K": int(K), "G": int(G)}


def group_rows(K, G):
    """Rows of K per quantization group (G = -1: one group)."""
    return K if G in (-1, 0, None) else G


# --------------------------------------------------------------------------------------------
# Weight formats (torch; run on the CPU too)
# --------------------------------------------------------------------------------------------
def _to_int32_bits(x64):
    """int64 holding uint32 bit patterns -> int32 with the same bits."""
    return torch.where(x64 >= 2 ** 31, x64 - 2 ** 32, x64).to(torch.int32)


def pack_gptq_qweight(q):
    """q [K, N] in [0, 16) -> qweight [K/8, N] int32: k = 8r + i in nibble i of row r."""
    K, N = q.shape
    shifts = (torch.arange(8, device=q.device, dtype=torch.int64) * 4).view(1, 8, 1)
    return _to_int32_bits((q.to(torch.int64).view(K // 8, 8, N) << shifts).sum(1)).contiguous()


def pack_gptq_qzeros(z):
    """z [Gn, N] in [0, 16) -> qzeros [Gn, N/8] int32: n = 8c + i in nibble i of column c."""
    Gn, N = z.shape
    shifts = (torch.arange(8, device=z.device, dtype=torch.int64) * 4).view(1, 1, 8)
    return _to_int32_bits((z.to(torch.int64).view(Gn, N // 8, 8) << shifts).sum(-1)).contiguous()


def unpack_gptq_qweight(qweight):
    shifts = (torch.arange(8, device=qweight.device, dtype=torch.int32) * 4).view(1, 8, 1)
    return ((qweight.unsqueeze(1) >> shifts) & 0xF).reshape(-1, qweight.shape[1])


def unpack_gptq_qzeros(qzeros):
    shifts = (torch.arange(8, device=qzeros.device, dtype=torch.int32) * 4).view(1, 1, 8)
    return ((qzeros.unsqueeze(-1) >> shifts) & 0xF).reshape(qzeros.shape[0], -1)


def dequant_gptq(qweight, qzeros, scales, G):
    """W [N, K] float64: (q[k, n] - z[k / G, n]) * s[k / G, n]."""
    q = unpack_gptq_qweight(qweight)
    g = torch.arange(q.shape[0], device=q.device) // group_rows(q.shape[0], G)
    z = unpack_gptq_qzeros(qzeros)
    return ((q - z[g]).to(torch.float64) * scales[g].to(torch.float64)).t()


def random_scales(rows, N, device):
    """Scales in [0.002, 0.012] fp16 (the yardstick's range: y stays well inside fp16)."""
    return (torch.rand(rows, N, device=device) * 0.01 + 0.002).to(torch.float16)


def make_gptq(N, K, G, device):
    """Random GPTQ weights (q and z uniform in [0, 16)): qweight, qzeros, scales."""
    Gn = K // group_rows(K, G)
    q = torch.randint(0, 16, (K, N), device=device, dtype=torch.int32)
    z = torch.randint(0, 16, (Gn, N), device=device, dtype=torch.int32)
    return pack_gptq_qweight(q), pack_gptq_qzeros(z), random_scales(Gn, N, device)


def make_int8(N, K, device):
    """Random int8 weights w8 [N, K] and per-row scales s8 [N] fp16."""
    w8 = torch.randint(-128, 128, (N, K), device=device, dtype=torch.int8)
    return w8, random_scales(1, N, device).view(N)


def dequant_int8(w8, s8):
    return w8.to(torch.float64) * s8.to(torch.float64)[:, None]


def gptq_to_tinygemm(qweight, qzeros, scales, swap_nibbles=False):
    """GPTQ -> tinygemm's inputs (w_uint8 [N, K/2], scales_and_zeros [K/G, N, 2] bf16), the shared
    yardstick's conversion: tinygemm computes (q - 8) * scale + zero, so zero = (8 - z) * s gives
    (q - z) * s; torch packs k even into the high nibble (swap_nibbles: the other order)."""
    q_nk = unpack_gptq_qweight(qweight).t().contiguous()
    z = unpack_gptq_qzeros(qzeros)
    hi, lo = q_nk[:, 0::2], q_nk[:, 1::2]
    if swap_nibbles:
        hi, lo = lo, hi
    w_uint8 = ((hi << 4) | lo).to(torch.uint8).contiguous()
    sf = scales.float()
    sz = torch.stack([sf, (8.0 - z.float()) * sf], dim=-1).to(torch.bfloat16).contiguous()
    return w_uint8, sz


def tinygemm_dequant(w_uint8, sz, G, swap_nibbles=False):
    """What tinygemm computes from its inputs, W [N, K] float64 (CPU emulation, for the tests)."""
    hi = (w_uint8.to(torch.int32) >> 4) & 0xF
    lo = w_uint8.to(torch.int32) & 0xF
    if swap_nibbles:
        hi, lo = lo, hi
    N, K2 = w_uint8.shape
    q = torch.stack([hi, lo], dim=-1).reshape(N, 2 * K2)
    g = torch.arange(2 * K2, device=w_uint8.device) // group_rows(2 * K2, G)
    s = sz[..., 0].to(torch.float64)[g].t()
    z = sz[..., 1].to(torch.float64)[g].t()
    return (q.to(torch.float64) - 8.0) * s + z


# --------------------------------------------------------------------------------------------
# Marlin: the staged source, built here; packed by its own code
# --------------------------------------------------------------------------------------------
MARLIN_SOURCES = ("marlin/marlin_cuda.cpp", "marlin/marlin_cuda_kernel.cu")
MARLIN_GROUPS = (128, -1)


def default_marlin_dir():
    return os.path.join(REPO, ".peers", "marlin")


def load_marlin_package(marlin_dir, ext=None):
    """Marlin's Python package (its Layer.pack and mul) from the staged source. It imports the
    compiled `marlin_cuda` at import time: `ext` is put in its place (None: a stand-in whose mul
    refuses, so that the packing code runs without a GPU)."""
    init = os.path.join(marlin_dir, "marlin", "__init__.py")
    if not os.path.exists(init):
        raise FileNotFoundError(f"{init} is missing: run bench/peers/stage_marlin.sh")
    if ext is None:
        ext = types.ModuleType("marlin_cuda")

        def _no_kernel(*a, **k):
            raise RuntimeError("marlin_cuda was not built")
        ext.mul = _no_kernel
    sys.modules["marlin_cuda"] = ext
    spec = importlib.util.spec_from_file_location("marlin", init)
    pkg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pkg)
    return pkg


def build_marlin(marlin_dir, build_dir=None, verbose=False):
    """Compile Marlin's extension on this machine for its GPU (cpp_extension.load: sources from
    marlin_dir, objects in build_dir (default marlin_dir/build; an up-to-date build is reused),
    ninja, -gencode for the device's compute capability; torch adds --expt-relaxed-constexpr,
    which the kernel needs). Returns (package, seconds)."""
    sources = [os.path.join(marlin_dir, s) for s in MARLIN_SOURCES]
    missing = [s for s in sources if not os.path.exists(s)]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} missing: run bench/peers/stage_marlin.sh")
    from torch.utils import cpp_extension
    major, minor = torch.cuda.get_device_capability()
    os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"   # sm_90 on an H100/H200
    build = build_dir or os.path.join(marlin_dir, "build")
    os.makedirs(build, exist_ok=True)
    lock = os.path.join(build, "lock")
    baton = hasattr(cpp_extension, "FileBaton") and not hasattr(cpp_extension, "FileLock")
    if baton and os.path.exists(lock):   # this torch's lock is the file itself: a killed build leaves
        # it, and load() would wait on it forever (only one process builds at a time here)
        log(f"  removing {lock}, left by a killed build")
        os.remove(lock)
    t0 = time.time()
    ext = cpp_extension.load(name="marlin_cuda", sources=sources, build_directory=build,
                             extra_cflags=["-O3"], extra_cuda_cflags=["-O3"], verbose=verbose)
    return load_marlin_package(marlin_dir, ext), time.time() - t0


MARLIN_CACHE_HINT = "cp.async.cg.shared.global.L2::cache_hint"


def marlin_source_warning(marlin_dir):
    """Why the staged kernel will likely fault on an H100, or None. CUDA 13's ptxas drops the
    createpolicy that Marlin's cp_async4_stream feeds to its L2 cache-hinted copies, so in
    Marlin<256,1,8,8,4,8> (M <= 16, 128x128 tiles, groups of 128) those LDGSTS read a never-written
    uniform register as their cache descriptor: an illegal instruction (bench/README.md)."""
    try:
        with open(os.path.join(marlin_dir, MARLIN_SOURCES[1])) as f:
            src = f.read()
    except OSError:
        return None
    if MARLIN_CACHE_HINT not in src:
        return None
    return ("the staged marlin_cuda_kernel.cu still copies B with an L2 cache hint, which CUDA 13's ptxas "
            "miscompiles for sm_90 (an illegal instruction at M <= 16, groups of 128): see bench/README.md")


def marlin_pack(pkg, q, s, G):
    """Marlin's own packing (Layer.pack) of q [K, N] in [0, 16) with scales s [K/G, N] fp16, the
    way its test.py does it: a Layer made for a small shape and resized, since Layer() refuses
    N % 256 != 0 that the kernel runs with 128-wide tiles. Returns (B [K/16, 2N] int32, s [K/G, N])."""
    K, N = q.shape
    gs = group_rows(K, G)
    g = torch.arange(K, device=q.device) // gs
    # the fp16 weights Layer.pack quantizes again: round(w / s) gives back q - 8 exactly (checked
    # by unpacking), though w itself is (q - 8) * s rounded to fp16, as Marlin's dequantization is
    w = ((q - 8).to(torch.float32) * s.float()[g]).to(torch.float16)
    layer = pkg.Layer(256, 256, groupsize=128 if gs != K else -1)
    layer.k, layer.n, layer.groupsize = K, N, gs
    layer.B = torch.empty((K // 16, N * 16 // 8), dtype=torch.int32, device=q.device)
    layer.s = torch.empty((K // gs, N), dtype=torch.float16, device=q.device)
    layer.pack(types.SimpleNamespace(weight=w.t()), s.t())
    return layer.B, layer.s


def marlin_unpack(pkg, B, s_packed, K, N, G):
    """The inverse of Marlin's Layer.pack, written here from its permutations: (q [K, N],
    s [K/G, N]). Checks the packing round trip; gives the float64 weights of any packed B."""
    perm = pkg._perm.to(B.device)
    shifts = torch.arange(8, device=B.device, dtype=torch.int32) * 4
    res = ((B.unsqueeze(-1) >> shifts) & 0xF).reshape(-1, perm.numel())
    orig = torch.empty_like(res)
    orig[:, perm] = res
    q = orig.reshape(K // 16, N // 16, 16, 16).permute(0, 2, 1, 3).reshape(K, N)
    sp = pkg._scale_perm if group_rows(K, G) != K else pkg._scale_perm_single
    sp = torch.as_tensor(sp, device=B.device)
    flat = s_packed.reshape(-1, sp.numel())
    s = torch.empty_like(flat)
    s[:, sp] = flat
    return q, s.reshape(-1, N)


def marlin_dequant(q, s, G):
    """W [N, K] float64 = (q - 8) * s[k / G]."""
    g = torch.arange(q.shape[0], device=q.device) // group_rows(q.shape[0], G)
    return ((q - 8).to(torch.float64) * s.to(torch.float64)[g]).t()


MarlinConfig = namedtuple("MarlinConfig", "thread_k thread_n max_par")


def marlin_candidates(M, N, K, G):
    """Marlin's compiled tiles that fit the shape: M <= 16 has 128x128 and 64x256 (k x n), larger
    M only 64x256 (its other tiles are not instantiated); max_par (64-row problems run at once)
    searched past M = 1024. Empty when none fits (with the reason from marlin_unsupported)."""
    if marlin_unsupported(M, N, K, G):
        return []
    tiles = [(128, 128), (64, 256)] if M <= 16 else [(64, 256)]
    pars = (16, 32) if M > 1024 else (16,)
    return [MarlinConfig(tk, tn, mp) for (tk, tn) in tiles for mp in pars if N % tn == 0 and K % tk == 0]


def marlin_unsupported(M, N, K, G):
    """Why Marlin cannot run this shape, or None."""
    if G not in MARLIN_GROUPS and G != K:
        return f"Marlin supports groups of 128 or one per column, not G={G}"
    if M > 16 and N % 256:
        return f"Marlin has no kernel for M > 16 with N % 256 != 0 (N={N}: its M > 16 tiles are 256 wide)"
    if N % 128 or K % 64:
        return f"Marlin needs N % 128 == 0 and K % 64 == 0 (N={N}, K={K})"
    return None


def marlin_config_name(c):
    return f"k{c.thread_k}xn{c.thread_n}/par{c.max_par}"


# --------------------------------------------------------------------------------------------
# The shared yardstick's Triton GPTQ kernel, imported at run time
# --------------------------------------------------------------------------------------------
def default_yardstick_dir():
    return os.path.join(REPO, ".peers")


def load_yardstick(path):
    """The yardstick's dequant_gemm module from `path` (a copy of ../shared/peers): its Triton
    kernel is used as it is, never copied into this repository."""
    f = os.path.join(os.path.abspath(path), "dequant_gemm.py")
    if not os.path.exists(f):
        raise FileNotFoundError(f"{f} missing: copy the shared peers there (bench/README.md)")
    spec = importlib.util.spec_from_file_location("yardstick_dequant_gemm", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)      # it puts its own folder on sys.path for its `common`
    if not getattr(mod, "HAVE_TRITON", False):
        raise RuntimeError("the yardstick found no Triton")
    return mod


def triton_key(c):
    return (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["SPLIT_K"], c["num_warps"], c["num_stages"])


def triton_candidates(M, N, K, G, yard_cands, quick=False, num_sms=132):
    """The yardstick's configs for this shape plus ours: more tile shapes, and split-K factors
    that divide K (not only powers of two) up to 4 programs per SM. A superset, deduplicated."""
    gs = group_rows(K, G)
    if M <= 16:
        bases = [(16, 32, 128, 4, 4), (16, 64, 128, 4, 4), (16, 128, 128, 8, 4)]
    elif M <= 64:
        bases = [(32, 128, 128, 4, 4), (64, 64, 128, 4, 4), (64, 128, 128, 4, 3)]
    else:
        bases = [(64, 128, 128, 4, 3), (128, 64, 128, 4, 4)]
    if quick:
        bases = bases[:1]
    out, seen = [], set()
    for c in yard_cands:
        if triton_key(c) not in seen:
            seen.add(triton_key(c))
            out.append(dict(c))
    for (bm, bn, bk, w, st) in bases:
        if gs % bk:
            continue
        tiles = -(-M // bm) * -(-N // bn)
        for sk in (SPLITS if M <= 64 else (1,)):
            if K % (bk * sk) or (sk > 1 and tiles * sk > 4 * num_sms):
                continue
            c = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT_K=sk, GROUP_M=8, num_warps=w, num_stages=st)
            if triton_key(c) not in seen:
                seen.add(triton_key(c))
                out.append(c)
    return out


def triton_config_name(c):
    return (f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']}/sk{c['SPLIT_K']}/w{c['num_warps']}"
            f"/st{c['num_stages']}")


# --------------------------------------------------------------------------------------------
# Bytes and floors
# --------------------------------------------------------------------------------------------
def weight_bytes(variant, N, K, G, zeros=True):
    """Bytes of the packed weights the call must read: int4 nibbles + fp16 scales (+ int4 zeros
    for GPTQ), int8 + fp16 row scales, or fp16."""
    if variant == "int4":
        Gn = K // group_rows(K, G)
        return K * N // 2 + Gn * N * 2 + (Gn * N // 2 if zeros else 0)
    if variant == "int8":
        return N * K + N * 2
    return N * K * 2


def io_bytes(M, N, K):
    return M * K * 2 + M * N * 2


def floor_ms(nbytes, flops, ceil):
    return max(nbytes / (ceil["hbm_gbps"] * 1e9), flops / (ceil["bf16_tflops"] * 1e12)) * 1e3


# --------------------------------------------------------------------------------------------
# Error and timing
# --------------------------------------------------------------------------------------------
def rel_err(y, ref):
    """||y - ref|| / ||ref|| in float64; NaN or infinity in y -> inf."""
    y = y.detach().to(torch.float64).reshape(-1)
    ref = ref.detach().to(torch.float64).reshape(-1).to(y.device)
    if y.numel() != ref.numel():
        raise ValueError(f"rel_err: {y.numel()} vs {ref.numel()} elements")
    if not bool(torch.isfinite(y).all()):
        return float("inf")
    den = float(torch.linalg.vector_norm(ref))
    num = float(torch.linalg.vector_norm(y - ref))
    return num / den if den > 0 else num


def poison_next_output(shape, dtype):
    """Free a NaN-filled block of the output's size, which the caching allocator hands to the
    next allocation of that size: a call that writes nothing then reads as NaN, not as the last
    candidate's answer."""
    t = torch.full(tuple(shape), float("nan"), dtype=dtype, device=DEV)
    del t


Timing = namedtuple("Timing", "ms p10 p90 reps")
_FLUSH = {}


def flush_buffer():
    if "buf" not in _FLUSH:
        _FLUSH["buf"] = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=DEV)
    return _FLUSH["buf"]


def _quantiles(ts):
    ts = sorted(ts)

    def q(f):
        return ts[min(len(ts) - 1, max(0, int(round(f * (len(ts) - 1)))))]
    return Timing(statistics.median(ts), q(0.1), q(0.9), len(ts))


def gpu_time(fn, reps, warmup=2, backlog=True):
    """Median (p10, p90) ms of fn: L2 flushed before each call, CUDA events around the call.
    backlog=True first queues a GPU spin that covers the host's enqueueing of the whole loop, so
    the events see the device's time for the call, not the Python launch cost; backlog=False is
    the plain loop of triton.testing.do_bench. On the CPU (dry run): perf_counter, no flush."""
    for _ in range(warmup):
        fn()
    if DEV == "cpu":
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return _quantiles(ts)
    torch.cuda.synchronize()
    buf = flush_buffer()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    if backlog and hasattr(torch.cuda, "_sleep"):
        t0 = time.perf_counter()
        buf.zero_()
        fn()
        host_s = time.perf_counter() - t0
        torch.cuda._sleep(int(min(0.05, 2e-4 + 2.0 * reps * (host_s + 2e-5)) * SLEEP_CYCLES_PER_S))
    for start, end in events:
        buf.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return _quantiles([s.elapsed_time(e) for s, e in events])


def measure_ceilings():
    """Device-to-device copy bandwidth (1 GiB, bytes read + written) and bf16 8192^3 matmul
    TFLOP/s, for the floors; timed the same way as the peers."""
    if DEV == "cpu":
        return dict(CPU_CEILINGS, copy_ms=None, mm_ms=None)
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=DEV).fill_(7)
    dst = torch.empty_like(src)
    tc = gpu_time(lambda: dst.copy_(src), reps=20, warmup=3, backlog=False)
    src = dst = None
    a = torch.randn(MM_N, MM_N, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(MM_N, MM_N, device=DEV, dtype=torch.bfloat16)
    tm = gpu_time(lambda: torch.mm(a, b), reps=20, warmup=5, backlog=False)
    a = b = None
    torch.cuda.empty_cache()
    return {"hbm_gbps": 2.0 * COPY_BYTES / (tc.ms * 1e-3) / 1e9, "copy_ms": tc.ms,
            "bf16_tflops": 2.0 * MM_N ** 3 / (tm.ms * 1e-3) / 1e12, "mm_ms": tm.ms}


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if torch is not None and isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    return v


class Results:
    """One JSON line per row as it comes (a crash keeps what was measured), the shared peers'
    fields ({workload, variant, peer, shape, ms, err, ...}) plus the run's common fields."""

    def __init__(self, path, append=False, common=None, echo=True):
        self.path = path
        self.rows = []
        self.common = dict(common or {})
        self.echo = echo
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            if not append:
                open(path, "w").close()

    def add(self, variant, peer, shape, **fields):
        row = {"workload": WORKLOAD, "variant": variant, "peer": peer, "shape": dict(shape)}
        row.update(fields)
        for k, v in self.common.items():
            row.setdefault(k, v)
        return self.add_row(_jsonable(row), self.echo)

    def add_row(self, row, echo=False):
        """Keep and write a finished row (a child process's, which printed it already)."""
        self.rows.append(row)
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")
        if echo:
            log("  " + row_line(row))
        return row


def read_rows(path):
    """The rows of a JSON lines file; a line cut short by a crash is dropped."""
    rows = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return rows


def log(msg):
    print(msg, flush=True)


def us(ms):
    return "-" if not isinstance(ms, (int, float)) else f"{ms * 1e3:.1f}"


def row_line(r):
    s = f"{r['variant']}/{r['peer']} [{' '.join(f'{k}={v}' for k, v in r['shape'].items())}]"
    if r.get("error"):
        return f"{s} ERROR {r['error']}"
    if r.get("skipped"):
        return f"{s} skipped: {r['skipped']}"
    if not isinstance(r.get("ms"), (int, float)):
        return s
    err = r.get("err")
    x = r.get("speedup_vs_fp16")
    return (f"{s} {us(r['ms'])} us err {err:.1e}" if isinstance(err, float) else f"{s} {us(r['ms'])} us") + \
        (f" ({x:.2f}x fp16)" if isinstance(x, float) else "") + (f" {r['config']}" if r.get("config") else "")


def print_table(rows):
    """One line per (shape, M): each peer's µs and its speed-up over fp16 cuBLAS."""
    cases, order = {}, []
    for r in rows:
        if r.get("workload") != WORKLOAD or "M" not in r.get("shape", {}):
            continue
        key = (r.get("layer"), r["shape"]["M"], r["shape"]["N"], r["shape"]["K"])
        if key not in cases:
            cases[key] = {}
            order.append(key)
        cases[key][(r["variant"], r["peer"])] = r
    head = ["layer", "M", "N", "K"] + [f"{p} us" for _, p in PEERS]
    table = []
    for key in order:
        line = [str(key[0]), str(key[1]), str(key[2]), str(key[3])]
        for vp in PEERS:
            r = cases[key].get(vp)
            if r is None:
                line.append("-")
            elif not isinstance(r.get("ms"), (int, float)):
                line.append("ERR" if r.get("error") else "skip")
            else:
                bad = "" if r.get("correct", True) else "!"
                x = r.get("speedup_vs_fp16")
                line.append(f"{us(r['ms'])}{bad}" + (f" ({x:.2f}x)" if isinstance(x, float) else ""))
        table.append(line)
    if not table:
        log("(no rows)")
        return
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    log("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for t in table:
        log("  ".join(c.rjust(w) for c, w in zip(t, widths)))
    log("(x): fp16 cuBLAS time / this time; '!': err above 1e-2; ERR/skip: see the row's error")


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------
class Budget:
    """--budget's clock; `reserve` seconds of it are kept for the isolated peers' processes."""

    def __init__(self, seconds, reserve=0.0):
        self.t0 = time.time()
        self.seconds = seconds
        self.reserve = reserve

    def elapsed(self):
        return time.time() - self.t0

    def left(self):
        """Seconds left for this process's own peers."""
        return self.total_left() - self.reserve

    def total_left(self):
        return float("inf") if self.seconds is None else self.seconds - self.elapsed()


def check(fn, ref):
    """Run fn once (its output poisoned first by the caller) and compare with ref."""
    y = fn()
    if DEV != "cpu":
        torch.cuda.synchronize()
    return rel_err(y, ref)


def search(cands, make_fn, ref, name):
    """Check every candidate against ref, time the correct ones quickly, re-time the best few.
    make_fn(c) -> (fn, poison) where poison() prepares the output. Returns (best c, best fn, err,
    tried summary, first failure or None)."""
    timed, tried, first_fail = [], [], None
    for c in cands:
        try:
            fn, poison = make_fn(c)
            poison()
            err = check(fn, ref)
            if not err <= TOL:
                tried.append(f"{name(c)}:err {err:.1e}")
                continue
            t = gpu_time(fn, QUICK_REPS).ms
            tried.append(f"{name(c)}:{t * 1e3:.1f}us")
            timed.append((t, c, fn, err))
        except Exception as ex:
            msg = " ".join(f"{type(ex).__name__}: {ex}".split())[:200]
            tried.append(f"{name(c)}:{type(ex).__name__}")
            first_fail = first_fail or msg
    if not timed:
        return None, None, None, " ".join(tried), first_fail
    timed.sort(key=lambda x: x[0])
    if len(timed) > 1:
        timed = sorted(((gpu_time(fn, RETIME_REPS).ms, c, fn, e) for (_, c, fn, e) in timed[:RETIME_TOP]),
                       key=lambda x: x[0])
    _, c, fn, err = timed[0]
    return c, fn, err, " ".join(tried), first_fail


class Case:
    """One (shape, M): its inputs, references and how a row is written."""

    def __init__(self, res, ceil, layer, M, N, K, G):
        self.res, self.ceil, self.layer = res, ceil, layer
        self.M, self.N, self.K, self.G = M, N, K, G
        self.shape = shape_dict(M, N, K, G)
        self.fp16_ms = None

    def add(self, variant, peer, fn, err, zeros=True, **extra):
        """Time fn properly and write its row."""
        t = gpu_time(fn, FINAL_REPS)
        direct = gpu_time(fn, DIRECT_REPS, warmup=1, backlog=False)
        M, N, K, G = self.M, self.N, self.K, self.G
        flops = 2.0 * M * N * K
        wb = weight_bytes(variant, N, K, G, zeros)
        fl = floor_ms(wb + io_bytes(M, N, K), flops, self.ceil)
        speed = (self.fp16_ms / t.ms) if (self.fp16_ms and variant != "fp16") else None
        return self.res.add(variant, peer, self.shape, layer=self.layer, ms=t.ms, p10_ms=t.p10, p90_ms=t.p90,
                            reps=t.reps, ms_direct=direct.ms, err=err, correct=bool(err <= TOL),
                            gbps=wb / (t.ms * 1e-3) / 1e9, tflops=flops / (t.ms * 1e-3) / 1e12,
                            floor_ms=fl, pct_floor=100.0 * fl / t.ms, speedup_vs_fp16=speed, **extra)

    def error(self, variant, peer, msg, **extra):
        return self.res.add(variant, peer, self.shape, layer=self.layer, ms=None, error=str(msg)[:300], **extra)

    def skip(self, variant, peer, why, **extra):
        return self.res.add(variant, peer, self.shape, layer=self.layer, ms=None, skipped=str(why)[:200], **extra)


def exc_text(ex):
    return " ".join(f"{type(ex).__name__}: {ex}".split())[:300]


class Peers:
    """What this process's peers (`local`) need once: the Marlin build, the yardstick module, the
    int8pack dtype, tinygemm's nibble order (or why each cannot run); and whether the CUDA context
    is still usable (`dead`: why not)."""

    def __init__(self, args, local):
        self.args = args
        self.local = tuple(local)
        self.marlin, self.marlin_why, self.marlin_build_s = None, None, None
        self.yard, self.yard_why = None, None
        self.int8_dtype, self.int8_why = None, None
        self.tiny_swap, self.tiny_why = None, None
        self.dead = None
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count if DEV != "cpu" else 132

    def setup(self, res):
        a = self.args
        if DEV == "cpu":
            self.marlin_why = "Marlin needs a CUDA device"
            self.yard_why = "the Triton kernel needs a CUDA device"
            return
        if "marlin" in self.local:
            warning = marlin_source_warning(a.marlin_dir)
            if warning:
                log("  warning: " + warning)
            try:
                self.marlin, self.marlin_build_s = build_marlin(a.marlin_dir, a.marlin_build_dir, a.verbose_build)
                log(f"Marlin built (or found built) in {self.marlin_build_s:.0f} s from {a.marlin_dir}")
            except Exception as ex:
                self.marlin_why = "Marlin did not build: " + exc_text(ex)
                log("  " + self.marlin_why)
                log("\n".join("    " + t for t in traceback.format_exc().strip().splitlines()[-6:]))
            res.add("int4", "marlin", {"build": "marlin_cuda"}, ms=None, build_s=self.marlin_build_s,
                    source=_read(os.path.join(a.marlin_dir, "SOURCE")), warning=warning, error=self.marlin_why)
        if "triton_gptq_wide" in self.local:
            try:
                self.yard = load_yardstick(a.yardstick_dir)
            except Exception as ex:
                self.yard_why = "yardstick Triton kernel not loaded: " + exc_text(ex)
                log("  " + self.yard_why)

    def check_context(self):
        """After an illegal instruction or a trap every later CUDA call of this process fails with
        the same error: notice it (a synchronize raises it) so that the remaining cases are only
        written as errors."""
        if DEV == "cpu" or self.dead:
            return
        try:
            torch.cuda.synchronize()
        except Exception as ex:
            self.dead = "not run: this process's CUDA context was lost earlier (" + exc_text(ex) + ")"
            log("  " + self.dead)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def run_fp16(case, x, W16, ref):
    poison_next_output((case.M, case.N), x.dtype)
    fn = lambda: torch.nn.functional.linear(x, W16)  # noqa: E731
    row = case.add("fp16", "cublas_fp16", fn, check(fn, ref), note="F.linear with the dequantized fp16 weight")
    case.fp16_ms = row["ms"]


def run_marlin(case, peers, cache, x, q, s):
    """Marlin on its own format: q, s -> Layer.pack (once per shape: `cache`), the packing checked
    by unpacking it, the output against the float64 weights (q - 8) * s."""
    M, N, K, G = case.M, case.N, case.K, case.G
    why = peers.marlin_why or marlin_unsupported(M, N, K, G)
    if why:
        return case.error("int4", "marlin", why)
    pkg = peers.marlin
    if "packed" not in cache:
        t0 = time.time()
        B, sp = marlin_pack(pkg, q, s, G)
        q2, s2 = marlin_unpack(pkg, B, sp, K, N, G)
        if not (torch.equal(q2, q.to(q2.dtype)) and torch.equal(s2, s)):
            cache["packed"] = "Marlin's packing did not round-trip (weights or scales)"
        else:
            cache["packed"] = (B, sp, marlin_dequant(q, s, G))
        del q2, s2
        log(f"  Marlin packed {N}x{K} in {time.time() - t0:.1f} s")
    if isinstance(cache["packed"], str):
        return case.error("int4", "marlin", cache["packed"])
    B, sp, W64 = cache["packed"]
    ref = x.double() @ W64.t()
    cands = marlin_candidates(M, N, K, G)
    ws = torch.zeros(N // 128 * max(c.max_par for c in cands), dtype=torch.int32, device=DEV)
    out = torch.empty(M, N, dtype=torch.float16, device=DEV)
    xh = x.to(torch.float16)

    def make(c):
        def fn():
            pkg.mul(xh, B, out, sp, ws, c.thread_k, c.thread_n, -1, c.max_par)
            return out
        return fn, lambda: out.fill_(float("nan"))
    c, fn, err, tried, fail = search(cands, make, ref, marlin_config_name)
    if c is None:
        return case.error("int4", "marlin", f"no config ran correctly: {tried}" + (f" | {fail}" if fail else ""))
    case.add("int4", "marlin", fn, err, zeros=False, config=marlin_config_name(c), tried=tried,
             note="symmetric int4, W = (q - 8) * s, packed by Marlin's Layer.pack")


def run_tinygemm(case, peers, cache, x, qw, qz, s, ref):
    """tinygemm on the GPTQ weights converted the yardstick's way; `cache` (one per shape) keeps
    the conversion and the packs across M."""
    M, N, K, G = case.M, case.N, case.K, case.G
    if peers.tiny_why:
        return case.error("int4", "tinygemm", peers.tiny_why)
    xb = x.to(torch.bfloat16).contiguous()
    if peers.tiny_swap is None:   # the nibble order, probed once per run
        last = None
        for swap in (False, True):
            try:
                w_u8, sz = gptq_to_tinygemm(qw, qz, s, swap)
                packed = torch._convert_weight_to_int4pack(w_u8, 8)
                last = rel_err(torch._weight_int4pack_mm(xb, packed, group_rows(K, G), sz), ref)
            except Exception as ex:
                peers.tiny_why = "tinygemm refused: " + exc_text(ex)
                return case.error("int4", "tinygemm", peers.tiny_why)
            if last <= TOL:
                peers.tiny_swap = swap
                break
        if peers.tiny_swap is None:
            return case.error("int4", "tinygemm", f"neither nibble order matches the reference (err {last:.1e})")
    if "w" not in cache:
        cache["w"] = gptq_to_tinygemm(qw, qz, s, peers.tiny_swap)
    w_u8, sz = cache["w"]

    def make(tiles):
        key = f"pack{tiles}"
        if key not in cache:
            cache[key] = torch._convert_weight_to_int4pack(w_u8, tiles)
        p = cache[key]
        return (lambda: torch._weight_int4pack_mm(xb, p, group_rows(K, G), sz)), \
            (lambda: poison_next_output((M, N), torch.bfloat16))
    c, fn, err, tried, fail = search([t for t in (8, 4, 2) if K % (16 * t) == 0], make, ref,
                                     lambda t: f"innerKTiles{t}")
    if c is None:
        return case.error("int4", "tinygemm", f"no config ran correctly: {tried}" + (f" | {fail}" if fail else ""))
    case.add("int4", "tinygemm", fn, err, config=f"innerKTiles={c}", tried=tried, act_dtype="bf16",
             note="bf16 x (tinygemm takes no fp16); GPTQ zeros folded into its (q - 8) * s + z; nibbles "
                  + ("swapped" if peers.tiny_swap else "in torch's order"))


def run_triton(case, peers, x, qw, qz, s, ref):
    M, N, K, G = case.M, case.N, case.K, case.G
    if peers.yard is None:
        return case.error("int4", "triton_gptq_wide", peers.yard_why)
    yard = peers.yard
    gs = group_rows(K, G)
    cands = triton_candidates(M, N, K, G, yard.gptq_candidates(M, N, K, gs, quick=peers.args.quick),
                              quick=peers.args.quick, num_sms=peers.num_sms)

    def make(c):
        return (lambda: yard.triton_w4a16(x, qw, s, qz, gs, **c)), (lambda: poison_next_output((M, N), x.dtype))
    c, fn, err, tried, fail = search(cands, make, ref, triton_config_name)
    if c is None:
        return case.error("int4", "triton_gptq_wide", f"no config ran correctly: {tried[:200]}"
                          + (f" | {fail}" if fail else ""))
    case.add("int4", "triton_gptq_wide", fn, err, config=triton_config_name(c), tried=tried,
             note=f"the yardstick's Triton kernel; {len(cands)} configs (its own and ours)")


def run_int8pack(case, peers, x, w8, s8, ref):
    M, N = case.M, case.N
    if peers.int8_why:
        return case.error("int8", "weight_int8pack_mm", peers.int8_why)
    errs = []
    for dt in ([peers.int8_dtype] if peers.int8_dtype else [HALF, torch.bfloat16]):
        try:
            xd, sd = x.to(dt), s8.to(dt)
            fn = lambda xd=xd, sd=sd: torch._weight_int8pack_mm(xd, w8, sd)  # noqa: E731
            poison_next_output((M, N), dt)
            err = check(fn, ref)
            peers.int8_dtype = dt
            return case.add("int8", "weight_int8pack_mm", fn, err, act_dtype=_jsonable(dt))
        except Exception as ex:
            errs.append(f"{_jsonable(dt)}: {exc_text(ex)}")
    peers.int8_why = "refused: " + " | ".join(errs)
    return case.error("int8", "weight_int8pack_mm", peers.int8_why)


def run_int8_naive(case, x, w8, s8, ref):
    fn = lambda: x @ (w8.to(x.dtype) * s8.to(x.dtype)[:, None]).t()  # noqa: E731
    poison_next_output((case.M, case.N), x.dtype)
    case.add("int8", "torch_naive", fn, check(fn, ref), note="x @ (w8.to(fp16) * s8[:, None]).T")


ShapeWeights = namedtuple("ShapeWeights", "qw qz s W64 W16 w8 s8 W8 qm sm tiny marlin")


def make_shape_weights(N, K, G, peers):
    """One shape's weights for `peers` (what none of them reads is None): GPTQ (and its float64
    and fp16 dequantizations), int8, and Marlin's own symmetric q and s; `tiny` and `marlin` cache
    their repacks across M."""
    qw = qz = s = W64 = W16 = w8 = s8 = W8 = qm = sm = None
    if any(p in peers for p in ("cublas_fp16", "tinygemm", "triton_gptq_wide")):
        qw, qz, s = make_gptq(N, K, G, DEV)
        W64 = dequant_gptq(qw, qz, s, G)                         # [N, K]
        if "cublas_fp16" in peers:
            W16 = W64.to(HALF).contiguous()
    if any(p in peers for p in ("weight_int8pack_mm", "torch_naive")):
        w8, s8 = make_int8(N, K, DEV)
        W8 = dequant_int8(w8, s8)
    if "marlin" in peers:
        qm = torch.randint(0, 16, (K, N), device=DEV, dtype=torch.int32)
        sm = random_scales(K // group_rows(K, G), N, DEV)
    return ShapeWeights(qw, qz, s, W64, W16, w8, s8, W8, qm, sm, {}, {})


def run_case(case, peers, w):
    """This process's peers on one (shape, M). One peer's failure (e.g. out of memory) leaves the
    others; once the CUDA context is lost, the rest are only written as errors."""
    if peers.dead:
        for p in peers.local:
            case.error(peer_variant(p), p, peers.dead)
        return
    x = torch.randn(case.M, case.K, device=DEV, dtype=HALF)
    ref4 = x.double() @ w.W64.t() if w.W64 is not None else None
    ref8 = x.double() @ w.W8.t() if w.W8 is not None else None
    steps = {"cublas_fp16": lambda: run_fp16(case, x, w.W16, ref4),
             "marlin": lambda: run_marlin(case, peers, w.marlin, x, w.qm, w.sm),
             "tinygemm": lambda: run_tinygemm(case, peers, w.tiny, x, w.qw, w.qz, w.s, ref4),
             "triton_gptq_wide": lambda: run_triton(case, peers, x, w.qw, w.qz, w.s, ref4),
             "weight_int8pack_mm": lambda: run_int8pack(case, peers, x, w.w8, w.s8, ref8),
             "torch_naive": lambda: run_int8_naive(case, x, w.w8, w.s8, ref8)}
    for peer in peers.local:
        if peers.dead:
            case.error(peer_variant(peer), peer, peers.dead)
            continue
        try:
            steps[peer]()
        except Exception as ex:
            case.error(peer_variant(peer), peer, exc_text(ex))
            log("\n".join("    " + t for t in traceback.format_exc().strip().splitlines()[-6:]))
        peers.check_context()


def run_shape(res, peers, ceil, budget, name, N, K, m_list, G, skipped):
    """Every M of one shape: its weights are made once here and dropped at the end."""
    if budget.left() < 5.0 or peers.dead:
        for M in m_list:
            case = Case(res, ceil, name, M, N, K, G)
            for p in peers.local:
                if peers.dead:
                    case.error(peer_variant(p), p, peers.dead)
                else:
                    case.skip(peer_variant(p), p, "time budget")
            skipped.append((name, M))
        return
    t0 = time.time()
    w = make_shape_weights(N, K, G, peers.local)
    log(f"== {name} N={N} K={K} G={G}: weights made in {time.time() - t0:.1f} s ({budget.elapsed():.0f} s) ==")
    for M in m_list:
        case = Case(res, ceil, name, M, N, K, G)
        if budget.left() < 3.0:
            for p in peers.local:
                case.skip(peer_variant(p), p, "time budget")
            skipped.append((name, M))
            continue
        run_case(case, peers, w)
    w = None
    if DEV != "cpu" and not peers.dead:
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------
# Isolated peers: each in a child process, which a faulting kernel takes down alone
# --------------------------------------------------------------------------------------------
def child_command(args, peer, out, grid, ceil, commit, budget_s):
    """This script timing `peer` alone over `grid` into `out`, with the parent's settings and
    ceilings (so that its floors are the parent's)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--peers", peer, "--isolate", "none",
           "--out", out, "--grid", grid_text(grid), "--group", str(args.group), "--seed", str(args.seed),
           "--ceilings", json.dumps(_jsonable(ceil)), "--marlin-dir", args.marlin_dir,
           "--yardstick-dir", args.yardstick_dir]
    if commit:
        cmd += ["--commit", commit]
    if args.marlin_build_dir:
        cmd += ["--marlin-build-dir", args.marlin_build_dir]
    if args.quick:
        cmd.append("--quick")
    if args.verbose_build:
        cmd.append("--verbose-build")
    if budget_s is not None:
        cmd += ["--budget", f"{budget_s:.1f}"]
    if DEV == "cpu":
        cmd += ["--dev", "cpu"]
    return cmd


def run_child(cmd, timeout, tag):
    """Run cmd, its output echoed line by line as '[tag] ...', killed after `timeout` seconds
    (None: no limit). The child leads its own process group, so that a kill takes its compilers
    too; a SIGTERM to this process (`timeout` in device_dequant_peers.sh) is passed on to it.
    Returns (exit status, timed out, seconds, last lines)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
    tail = deque(maxlen=40)

    def pump():
        for line in proc.stdout:
            tail.append(line.rstrip("\n"))
            log(f"[{tag}] {tail[-1]}")

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()

    def terminated(signum, frame):
        raise SystemExit(128 + signum)
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    main = threading.current_thread() is threading.main_thread()   # only there can a handler be set
    old_term = signal.signal(signal.SIGTERM, terminated) if main else None
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill()
    except BaseException:   # SIGTERM or Ctrl-C here: the child must not outlive us on the GPU
        kill()
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, old_term)
    reader.join(timeout=5)
    return proc.returncode, timed_out, time.time() - t0, list(tail)


def child_failure(peer, rc, timed_out, secs, tail):
    """Why an isolated peer's process left cases without rows, with its last error line."""
    if timed_out:
        why = f"{peer}'s process was killed after {secs:.0f} s (time budget)"
    elif rc is not None and rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = str(-rc)
        why = f"{peer}'s process died from signal {sig} after {secs:.0f} s"
    else:
        why = f"{peer}'s process exited with status {rc} after {secs:.0f} s without timing this case"
    last = [t.strip() for t in tail if t.strip()]
    hint = next((t for t in reversed(last) if "rror" in t or "Abort" in t), last[-1] if last else None)
    return why + (f"; its last error: {hint}" if hint else "")


def fp16_times(rows):
    """{(layer, M): ms} of the cuBLAS fp16 rows, for the isolated peers' speed-ups."""
    return {(r.get("layer"), r["shape"]["M"]): r["ms"] for r in rows
            if (r.get("variant"), r.get("peer")) == ("fp16", "cublas_fp16") and isinstance(r.get("ms"), (int, float))}


def run_isolated(peer, args, grid, res, ceil, commit, budget, later_s):
    """Time `peer` over the whole grid in its own process, given what is left of the budget but
    `later_s` (the peers isolated after it); copy its rows and write an error for every case it
    left without one."""
    variant = peer_variant(peer)
    avail = budget.total_left() - later_s
    cases = [(name, N, K, M) for (name, N, K, ms) in grid for M in ms]
    if avail < CHILD_STOP_S + 5.0:
        for (name, N, K, M) in cases:
            Case(res, ceil, name, M, N, K, args.group).skip(variant, peer, "time budget")
        return
    fd, path = tempfile.mkstemp(prefix=f"dequant_{peer}_", suffix=".jsonl")
    os.close(fd)
    finite = math.isfinite(avail)
    cmd = child_command(args, peer, path, grid, ceil, commit, avail - CHILD_STOP_S if finite else None)
    log(f"== {peer}: in its own process ({budget.elapsed():.0f} s) ==")
    rc, timed_out, secs, tail = run_child(cmd, avail + CHILD_KILL_S - CHILD_STOP_S if finite else None, peer)
    rows = read_rows(path)
    os.unlink(path)
    fp16, done = fp16_times(res.rows), set()
    for r in rows:
        shape = r.get("shape", {})
        if "M" in shape:
            done.add((r.get("layer"), shape["M"]))
            f = fp16.get((r.get("layer"), shape["M"]))
            if f and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0:
                r["speedup_vs_fp16"] = f / r["ms"]
        res.add_row(r)
    missing = [c for c in cases if (c[0], c[3]) not in done]
    if missing:
        why = child_failure(peer, rc, timed_out, secs, tail)
        log("  " + why)
        for (name, N, K, M) in missing:
            Case(res, ceil, name, M, N, K, args.group).error(variant, peer, why)
    log(f"  {peer}: {len(rows)} rows from its process (exit status {rc}, {secs:.0f} s)")


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=HERE)
        return out.stdout.strip() or None
    except Exception:
        return None


def run(args):
    torch.manual_seed(args.seed)
    grid = parse_grid(args.grid) if args.grid else (
        parse_grid(QUICK_GRID) if args.quick else
        [(n, N, K, parse_int_list(args.m)) for (n, N, K) in parse_shapes(args.shapes)])
    selected = [p for p in parse_peer_list(args.peers) if not (p == "marlin" and args.no_marlin)]
    isolated = [] if args.child else [p for p in selected if p in parse_peer_list(args.isolate, allow_none=True)]
    local = [p for p in selected if p not in isolated]
    reserve = sum(CHILD_RESERVE_S.get(p, 30.0) for p in isolated)
    budget = Budget(args.budget, 0.0 if args.budget is None else min(reserve, 0.5 * args.budget))
    on_gpu = DEV != "cpu"
    common = {"dtype": "f16", "device": torch.cuda.get_device_name() if on_gpu else "cpu",
              "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "commit": args.commit or git_commit(), "torch": torch.__version__,
              "method": "L2 flushed (256 MB zeroed) before each call, CUDA events, median"}
    try:
        import triton
        common["triton"] = triton.__version__
    except ImportError:
        common["triton"] = None
    res = Results(args.out, args.append, common)
    if args.ceilings:   # a child: the parent's
        ceil = json.loads(args.ceilings)
    else:
        ceil = measure_ceilings()
        if on_gpu:
            res.add("d2d_copy", "torch.copy_", {"bytes": COPY_BYTES}, workload="ceiling", ms=ceil["copy_ms"],
                    gbps=ceil["hbm_gbps"], note="GB/s counts bytes read + written")
            res.add("bf16_matmul", "torch.mm", {"n": MM_N}, workload="ceiling", ms=ceil["mm_ms"],
                    tflops=ceil["bf16_tflops"])
        log(f"[{common['device']}] copy {ceil['hbm_gbps']:.0f} GB/s (read + write), bf16 matmul "
            f"{ceil['bf16_tflops']:.0f} TFLOP/s; torch {torch.__version__}, triton {common['triton']}; "
            f"peers here: {', '.join(local) or 'none'}; each in its own process: {', '.join(isolated) or 'none'}")
    peers = Peers(args, local)
    peers.setup(res)
    skipped = []
    for (name, N, K, m_list) in (grid if local else []):
        try:
            run_shape(res, peers, ceil, budget, name, N, K, m_list, args.group, skipped)
        except Exception as ex:  # e.g. out of memory making the weights: the other shapes may run
            log(f"  {name} FAILED: {exc_text(ex)}")
            log("\n".join("    " + t for t in traceback.format_exc().strip().splitlines()[-8:]))
            for M in m_list:
                case = Case(res, ceil, name, M, N, K, args.group)
                for p in local:
                    case.error(peer_variant(p), p, exc_text(ex))
            peers.check_context()
    for i, peer in enumerate(isolated):
        later = sum(CHILD_RESERVE_S.get(p, 30.0) for p in isolated[i + 1:])
        run_isolated(peer, args, grid, res, ceil, common["commit"], budget, min(later, budget.reserve))
    if args.child:
        log(f"== {', '.join(local)} done in {budget.elapsed():.0f} s ==")
        return 0
    log(f"\n== dequant_gemm peers done in {budget.elapsed():.0f} s ({common['device']}) ==")
    print_table(res.rows)
    if skipped:
        log("skipped past the budget: " + ", ".join(f"{n} M={m}" for n, m in skipped))
    wrong = [r for r in res.rows if r.get("correct") is False]
    for r in wrong:
        log(f"WRONG: {row_line(r)}")
    return 1 if wrong else 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="JSON lines file (overwritten unless --append)")
    p.add_argument("--append", action="store_true", help="append to --out instead of overwriting it")
    p.add_argument("--m", default=",".join(str(m) for m in M_VALUES), help="M values, e.g. 1,4,16")
    p.add_argument("--shapes", default="all", help="qkv,o,gate_up,down,lm_head, all, or NxK")
    p.add_argument("--grid", default=None,
                   help="several M x shape products: '1,4,16@all;64,256,2048@qkv,gate_up' (overrides --m, --shapes)")
    p.add_argument("--quick", action="store_true", help=f"the yardstick's quick grid ({QUICK_GRID}), fewer configs")
    p.add_argument("--group", type=int, default=128, help="quantization group size (-1: one group)")
    p.add_argument("--budget", type=float, default=None, help="seconds; shapes not started by then are skipped")
    p.add_argument("--peers", default="all",
                   help="the peers to run: all, or a comma list of " + ", ".join(p for _, p in PEERS))
    p.add_argument("--isolate", default=",".join(ISOLATED),
                   help="peers run each in a child process over the whole grid (default %(default)s; none: all here)")
    p.add_argument("--marlin-dir", default=default_marlin_dir(), help="staged Marlin source (stage_marlin.sh)")
    p.add_argument("--marlin-build-dir", default=None, help="Marlin's build folder (default: MARLIN_DIR/build)")
    p.add_argument("--no-marlin", action="store_true", help="do not build or time Marlin")
    p.add_argument("--verbose-build", action="store_true", help="show Marlin's compiler output")
    p.add_argument("--yardstick-dir", default=default_yardstick_dir(),
                   help="a copy of the shared peers (its dequant_gemm.py gives the Triton kernel)")
    p.add_argument("--commit", default=None, help="commit id to record (default: git rev-parse)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)        # run_isolated's process
    p.add_argument("--ceilings", default=None, help=argparse.SUPPRESS)           # the parent's, as JSON
    p.add_argument("--dev", choices=("cuda", "cpu"), default=None, help=argparse.SUPPRESS)   # the parent's DEV
    a = p.parse_args(argv)
    try:  # shape and peer errors are usage errors
        parse_grid(a.grid) if a.grid else (parse_int_list(a.m), parse_shapes(a.shapes))
        parse_peer_list(a.peers)
        parse_peer_list(a.isolate, allow_none=True)
    except ValueError as ex:
        p.error(str(ex))
    if a.group not in (-1, 32, 64, 128, 256):
        p.error("--group: one of -1, 32, 64, 128, 256")
    return a


def main(argv=None):
    global DEV
    args = parse_args(argv)
    if args.dev:
        DEV = args.dev
    if torch is None:
        print("dequant_gemm_peer: needs torch", file=sys.stderr)
        return 2
    if DEV != "cpu" and not torch.cuda.is_available():
        print("dequant_gemm_peer: no CUDA device", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
