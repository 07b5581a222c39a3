#!/usr/bin/env python3
"""One decode step of Qwen3-4B's linears, captured into one CUDA graph, per backend (dequant_gemm).

    python3 bench/peers/dequant_decode_step.py --out FILE.jsonl [--backends fp16,int8_pack,...]
        [--layers 36] [--m 1] [--reps 20] [--marlin-dir .peers/marlin] [--marlin-build-dir DIR]
        [--plugin FILE.py] [--dims NxK,...] [--isolate auto|none|NAME,...] [--child-timeout S]
        [--append] [--commit ID] [--seed N]

The step: 36 layers, each with its own weights for qkv (6144x2560), o (2560x4096), gate_up
(19456x2560) and down (2560x9728), then lm_head (151936x2560): 145 linears at M = 1 (N x K).
Every weight is distinct in memory, so the step reads the whole model's weights once (fp16
about 8 GB, int8 4 GB, int4 about 2 GB: far beyond the L2). The inputs are fixed buffers (one
per K), as only the linears are timed: no attention, norms or activations between them.

Backends (`--backends`, default all of these; more through register_backend or --plugin):
  fp16         F.linear(x, W16): cuBLAS.
  int8_pack    torch._weight_int8pack_mm(x, w8, s8) (fp16 x, else bf16).
  int8_naive   x @ (w8.to(fp16) * s8[:, None]).T.
  marlin       Marlin's mul (dequant_gemm_peer.py builds it from .peers/marlin), groups of 128,
               the faster of its tile shapes per (N, K), timed on the first layer.
  tinygemm     torch._weight_int4pack_mm on bf16 x, packed by torch._convert_weight_to_int4pack.
The int8 pair covers "the best torch int8 peer" (the table marks the faster). Quantized weights
are random bits in each kernel's own packed layout (any bit pattern is a valid int4/int8 weight;
dequant_gemm_peer.py checks each kernel's packing from known weights). Per backend, the first
layer of each kind is checked against x @ W^T in float64 (W dequantized from the packed form),
and the graph's outputs against the same calls run eagerly.

Timing: the 145 calls are captured into one CUDA graph, replayed; `ms` is the median over
`--reps` replays (L2 flushed before each, CUDA events around the replay), `tokens_per_s` = 1000
/ ms, the bound this step puts on decode speed. `ms_eager` is the same calls launched from
Python (Python's launch cost included: what no graph costs). floor_ms = the step's weight bytes
/ the device-to-device copy bandwidth (measured at the start, bytes read + written).

Rows (JSON lines): {workload: "dequant_gemm", variant: "decode_step", peer: backend, shape:
{M, layers, model}, quant, ms, p10_ms, p90_ms, reps, ms_eager, tokens_per_s, tokens_per_s_eager,
weight_bytes, floor_ms, pct_floor, floor_tokens_per_s, calls, err, graph_err, correct,
speedup_vs_fp16, setup_s, device, date, commit, ...}. Exit status 1 if a backend's check failed.

Isolation: a kernel that faults (an illegal instruction, a trap) poisons its process's CUDA
context for every later call. So the backends named by `--isolate` (default `auto`: Marlin and
tinygemm; a plugin's backends only when named, since their tuning may outlast the timeout) each
run in a child process (this script with --child, killed after --child-timeout seconds) that
writes its row to a temporary file; the parent copies it (adding speedup_vs_fp16), or writes an
ERROR row with the child's last error when there is none. Once this process's own context is
lost, its remaining backends get ERROR rows at once.
"""
import argparse
import datetime
import gc
import importlib.util
import os
import sys
import tempfile
import time
import traceback
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_gemm_peer as DG  # noqa: E402  (formats, Marlin, timing, rows)

torch = DG.torch
MODEL = "Qwen3-4B"
NUM_LAYERS = 36
LAYER_KINDS = ("qkv", "o", "gate_up", "down")           # per layer, in this order; lm_head last
DIMS = {k: DG.LAYERS[k] for k in LAYER_KINDS + ("lm_head",)}
G = 128
TOL = DG.TOL
DEFAULT_BACKENDS = ("fp16", "int8_pack", "int8_naive", "marlin", "tinygemm")
ISOLATED = ("marlin", "tinygemm")                       # --isolate auto: each in its own process
CHILD_TIMEOUT_S = 100.0


# --------------------------------------------------------------------------------------------
# The backend registry
# --------------------------------------------------------------------------------------------
Backend = namedtuple("Backend", "name make_linear quant note")
BACKENDS = {}


def register_backend(name, make_linear, quant, note=""):
    """Add a backend. make_linear(kind, N, K) -> callable x [M, K] -> y [M, N], bound to new
    weights of that shape (each call is another layer). The callable may carry:
      .act_dtype   the dtype x must have (default fp16; the step keeps one input per dtype and K)
      .weight64()  W [N, K] float64 of its weights, for the check (absent: unchecked)
    quant: "fp16", "int8" or "int4" (the table groups by it)."""
    BACKENDS[name] = Backend(name, make_linear, quant, note)


# ---- Plug-in point: further backends (tilejit's) ---------------------------------------------
# Register them here, next to the peers, or from a file given with --plugin: that file's
# register(register_backend) is called before the run, e.g.
#     def register(register_backend):
#         register_backend("tilejit_int4", make_tilejit_int4, "int4", "tilejit w4a16_mma")
# and name it in --backends (default: the peers below plus every plugin backend).
# ---------------------------------------------------------------------------------------------


def _attach(fn, act_dtype=None, weight64=None):
    fn.act_dtype = act_dtype if act_dtype is not None else DG.HALF
    if weight64 is not None:
        fn.weight64 = weight64
    return fn


def make_fp16(kind, N, K):
    w = (torch.randn(N, K, device=DG.DEV) * 0.02).to(DG.HALF)
    return _attach(lambda x: torch.nn.functional.linear(x, w), weight64=lambda: w.double())


_INT8 = {"dtype": None}


def make_int8_pack(kind, N, K):
    w8, s8 = DG.make_int8(N, K, DG.DEV)
    if _INT8["dtype"] is None:   # the activation dtype it accepts, probed once
        errs = []
        for dt in (DG.HALF, torch.bfloat16):
            try:
                torch._weight_int8pack_mm(torch.randn(1, K, device=DG.DEV, dtype=dt), w8, s8.to(dt))
                _INT8["dtype"] = dt
                break
            except Exception as ex:
                errs.append(f"{DG._jsonable(dt)}: {DG.exc_text(ex)}")
        else:
            raise RuntimeError("torch._weight_int8pack_mm refused: " + " | ".join(errs))
    dt = _INT8["dtype"]
    sd = s8.to(dt)
    return _attach(lambda x: torch._weight_int8pack_mm(x, w8, sd), dt, lambda: DG.dequant_int8(w8, sd))


def make_int8_naive(kind, N, K):
    w8, s8 = DG.make_int8(N, K, DG.DEV)
    sh = s8.to(DG.HALF)[:, None]
    return _attach(lambda x: x @ (w8.to(x.dtype) * sh).t(), weight64=lambda: DG.dequant_int8(w8, s8))


_MARLIN = {"dir": None, "build": None, "pkg": None, "ws": None, "build_s": None, "m": 1, "tiles": {}}


def marlin_package():
    """Marlin's package, built on first use from _MARLIN['dir'] (the default staged copy)."""
    if _MARLIN["pkg"] is None:
        _MARLIN["pkg"], _MARLIN["build_s"] = DG.build_marlin(_MARLIN["dir"] or DG.default_marlin_dir(),
                                                             _MARLIN["build"])
    return _MARLIN["pkg"]


def make_marlin(kind, N, K):
    pkg = marlin_package()
    m = _MARLIN["m"]
    cands = DG.marlin_candidates(m, N, K, G)
    if not cands:
        raise RuntimeError(DG.marlin_unsupported(m, N, K, G))
    # one workspace for all layers (the calls run in stream order and each leaves it zeroed),
    # replaced by a larger one when a wider layer needs it (earlier layers keep theirs)
    need = N // 128 * max(c.max_par for c in cands)
    if _MARLIN["ws"] is None or _MARLIN["ws"].numel() < need:
        _MARLIN["ws"] = torch.zeros(need, dtype=torch.int32, device=DG.DEV)
    ws = _MARLIN["ws"]
    B = torch.randint(-2 ** 31, 2 ** 31, (K // 16, N * 2), device=DG.DEV, dtype=torch.int32)
    s = DG.random_scales(K // G, N, DG.DEV)   # random values: the permuted layout is random too

    def call(c):
        def fn(x):
            y = torch.empty(x.shape[0], N, dtype=torch.float16, device=x.device)
            pkg.mul(x, B, y, s, ws, c.thread_k, c.thread_n, -1, c.max_par)
            return y
        return fn
    if (N, K) not in _MARLIN["tiles"]:   # its tile shapes, timed on the first layer of each shape
        x = torch.randn(m, K, device=DG.DEV, dtype=torch.float16)
        _MARLIN["tiles"][(N, K)] = min(cands, key=lambda c: DG.gpu_time(lambda: call(c)(x), 10).ms)
    return _attach(call(_MARLIN["tiles"][(N, K)]), torch.float16,
                   lambda: DG.marlin_dequant(*DG.marlin_unpack(pkg, B, s, K, N, G), G))


_TINY = {"swap": None}


def make_tinygemm(kind, N, K):
    w_u8 = torch.randint(0, 256, (N, K // 2), device=DG.DEV, dtype=torch.uint8)
    sz = torch.stack([DG.random_scales(K // G, N, DG.DEV).float(),
                      (torch.rand(K // G, N, device=DG.DEV) - 0.5) * 0.1], -1).to(torch.bfloat16).contiguous()
    packed = torch._convert_weight_to_int4pack(w_u8, 8)
    if _TINY["swap"] is None:    # which nibble comes first, probed once against the emulation
        x = torch.randn(2, K, device=DG.DEV, dtype=torch.bfloat16)
        y = torch._weight_int4pack_mm(x, packed, G, sz)
        errs = {swap: DG.rel_err(y, x.double() @ DG.tinygemm_dequant(w_u8, sz, G, swap).t()) for swap in (False, True)}
        _TINY["swap"] = min(errs, key=errs.get)
    swap = _TINY["swap"]
    return _attach(lambda x: torch._weight_int4pack_mm(x, packed, G, sz), torch.bfloat16,
                   lambda: DG.tinygemm_dequant(w_u8, sz, G, swap))


register_backend("fp16", make_fp16, "fp16", "F.linear (cuBLAS) on fp16 weights")
register_backend("int8_pack", make_int8_pack, "int8", "torch._weight_int8pack_mm")
register_backend("int8_naive", make_int8_naive, "int8", "x @ (w8.to(fp16) * s8[:, None]).T")
register_backend("marlin", make_marlin, "int4", "Marlin mul, groups of 128, the faster of its tiles per shape")
register_backend("tinygemm", make_tinygemm, "int4", "torch._weight_int4pack_mm, bf16 x, groups of 128")


# --------------------------------------------------------------------------------------------
# The step
# --------------------------------------------------------------------------------------------
def step_plan(layers=NUM_LAYERS, dims=None):
    """[(kind, N, K)] in execution order: per layer qkv, o, gate_up, down; then lm_head."""
    d = dims or DIMS
    return [(k, *d[k]) for _ in range(layers) for k in LAYER_KINDS] + [("lm_head", *d["lm_head"])]


class Step:
    """The per-layer callables of one backend, with their fixed inputs."""

    def __init__(self, backend, layers=NUM_LAYERS, m=1, dims=None, seed=0):
        torch.manual_seed(seed)
        self.backend = backend
        self.plan = step_plan(layers, dims)
        self.calls = [backend.make_linear(kind, N, K) for (kind, N, K) in self.plan]
        self.inputs = {}
        self.xs = []
        for fn, (_, N, K) in zip(self.calls, self.plan):
            dt = getattr(fn, "act_dtype", DG.HALF)
            if (K, dt) not in self.inputs:
                self.inputs[(K, dt)] = torch.randn(m, K, device=DG.DEV, dtype=dt)
            self.xs.append(self.inputs[(K, dt)])

    def __call__(self):
        return [fn(x) for fn, x in zip(self.calls, self.xs)]

    def weight_bytes(self, quant):
        return sum(DG.weight_bytes(quant, N, K, G, zeros=False) for (_, N, K) in self.plan)

    def check(self):
        """Worst error of the first layer of each kind against float64 (None: nothing checkable)."""
        worst, seen = None, set()
        for fn, x, (kind, N, K) in zip(self.calls, self.xs, self.plan):
            if kind in seen or not hasattr(fn, "weight64"):
                continue
            seen.add(kind)
            y = fn(x)
            e = DG.rel_err(y, x.double() @ fn.weight64().t())
            worst = e if worst is None else max(worst, e)
        return worst


def build_step(name, layers=NUM_LAYERS, m=1, dims=None, seed=0):
    """The importable entry point: backend `name`'s callables for one decode step."""
    return Step(BACKENDS[name], layers, m, dims, seed)


def capture(step):
    """The step captured into one CUDA graph (after a warm-up on a side stream). Returns the graph
    and the outputs it writes."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    # Captured on the stream that ran the warm-up: a kernel library that keeps per-stream state
    # (tilejit allocates a stream's scratch on its first launch there) is ready for it.
    with torch.cuda.graph(graph, stream=side):
        outs = step()
    torch.cuda.synchronize()
    return graph, outs


def step_shape(args):
    """The rows' shape: M, layers and the model ("custom" when --dims changed the sizes)."""
    return {"M": args.m, "layers": args.layers, "model": "custom" if args.dims else MODEL}


def time_backend(res, name, args, bw, fp16_ms):
    b = BACKENDS[name]
    shape = step_shape(args)
    t0 = time.time()
    step = build_step(name, args.layers, args.m, parse_dims(args.dims), args.seed)
    if DG.DEV != "cpu":
        torch.cuda.synchronize()
    setup_s = time.time() - t0
    err = step.check()
    eager_outs = step()
    eager = DG.gpu_time(step, max(5, args.reps // 2), warmup=1, backlog=False)
    graph_ms = graph_err = None
    note = b.note
    if DG.DEV != "cpu":
        graph, outs = capture(step)
        graph.replay()
        torch.cuda.synchronize()
        graph_err = max(DG.rel_err(o, e) for o, e in zip(outs, eager_outs))
        t = DG.gpu_time(graph.replay, args.reps, warmup=2)
        graph_ms = t
        del graph, outs
    else:
        t = eager
        note += "; CPU dry run: no CUDA graph, ms is the eager step"
    wb = step.weight_bytes(b.quant)
    floor = wb / (bw * 1e9) * 1e3
    ok = (err is None or err <= TOL) and (graph_err is None or graph_err <= TOL)
    row = res.add("decode_step", name, shape, quant=b.quant, ms=t.ms, p10_ms=t.p10, p90_ms=t.p90, reps=t.reps,
                  ms_eager=eager.ms, tokens_per_s=1e3 / t.ms, tokens_per_s_eager=1e3 / eager.ms,
                  weight_bytes=wb, floor_ms=floor, pct_floor=100.0 * floor / t.ms,
                  floor_tokens_per_s=1e3 / floor, calls=len(step.calls), err=err, graph_err=graph_err,
                  correct=ok, speedup_vs_fp16=(fp16_ms / t.ms) if (fp16_ms and name != "fp16") else None,
                  setup_s=setup_s, graph=graph_ms is not None, note=note,
                  build_s=_MARLIN["build_s"] if name == "marlin" else None)
    del step, eager_outs
    return row


def parse_dims(text):
    """'NxK,NxK,NxK,NxK,NxK' (qkv, o, gate_up, down, lm_head; for small dry runs) -> dims, or None."""
    if not text:
        return None
    parts = [p.strip() for p in text.split(",")]
    kinds = LAYER_KINDS + ("lm_head",)
    if len(parts) != len(kinds):
        raise ValueError(f"--dims: {len(kinds)} NxK values ({', '.join(kinds)}), got {len(parts)}")
    out = {}
    for k, p in zip(kinds, parts):
        try:
            n, kk = (int(v) for v in p.lower().split("x"))
        except ValueError:
            raise ValueError(f"--dims: bad '{p}', expected NxK") from None
        out[k] = (n, kk)
    return out


def measure_bandwidth():
    if DG.DEV == "cpu":
        return DG.CPU_CEILINGS["hbm_gbps"], None
    src = torch.empty(DG.COPY_BYTES, dtype=torch.uint8, device=DG.DEV).fill_(7)
    dst = torch.empty_like(src)
    t = DG.gpu_time(lambda: dst.copy_(src), reps=20, warmup=3, backlog=False)
    src = dst = None
    torch.cuda.empty_cache()
    return 2.0 * DG.COPY_BYTES / (t.ms * 1e-3) / 1e9, t.ms


def print_table(rows):
    steps = [r for r in rows if r.get("variant") == "decode_step"]
    fastest = {}
    for r in steps:
        if isinstance(r.get("ms"), (int, float)) and r.get("correct"):
            q = r["quant"]
            fastest[q] = min(fastest.get(q, float("inf")), r["ms"])
    head = ["backend", "quant", "ms/token", "tokens/s", "eager ms", "x fp16", "% floor", "err", "note"]
    table = []
    for r in steps:
        if not isinstance(r.get("ms"), (int, float)):
            table.append([r["peer"], str(r.get("quant")), "-", "-", "-", "-", "-", "-",
                          ("ERROR " + str(r.get("error"))) if r.get("error") else str(r.get("skipped"))])
            continue
        best = " (best " + r["quant"] + ")" if r["ms"] == fastest.get(r["quant"]) and r["quant"] != "fp16" else ""
        err = r.get("err")
        x = r.get("speedup_vs_fp16")
        table.append([r["peer"], r["quant"], f"{r['ms']:.3f}", f"{r['tokens_per_s']:.0f}", f"{r['ms_eager']:.3f}",
                      f"{x:.2f}x" if isinstance(x, float) else "-", f"{r['pct_floor']:.0f}%",
                      (f"{err:.1e}" if isinstance(err, float) else "-") + ("" if r.get("correct") else " WRONG"),
                      best.strip()])
    if not table:
        DG.log("(no rows)")
        return
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    DG.log("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for t in table:
        DG.log("  ".join(c.ljust(w) for c, w in zip(t, widths)))


def load_plugin(path):
    spec = importlib.util.spec_from_file_location("decode_step_plugin", os.path.abspath(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.register(register_backend)


def isolated_backends(text, names):
    """--isolate: 'auto' (those of `names` in ISOLATED), 'none', or a comma list."""
    if text == "auto":
        return [n for n in names if n in ISOLATED]
    if text == "none":
        return []
    return [n.strip() for n in text.split(",") if n.strip()]


def context_error():
    """None while this process's CUDA context works, else why the backends after it were not run
    (after an illegal instruction or a trap every call fails; a synchronize raises it)."""
    if DG.DEV == "cpu":
        return None
    try:
        torch.cuda.synchronize()
        return None
    except Exception as ex:
        return "not run: this process's CUDA context was lost earlier (" + DG.exc_text(ex) + ")"


def child_command(args, name, out, bw, commit):
    """This script timing backend `name` alone into `out`, with the parent's settings and bandwidth."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--backends", name, "--isolate", "none",
           "--out", out, "--layers", str(args.layers), "--m", str(args.m), "--reps", str(args.reps),
           "--bw", repr(float(bw)), "--marlin-dir", args.marlin_dir, "--seed", str(args.seed)]
    if commit:
        cmd += ["--commit", commit]
    if args.dims:
        cmd += ["--dims", args.dims]
    if args.marlin_build_dir:
        cmd += ["--marlin-build-dir", args.marlin_build_dir]
    for path in (args.plugin if name not in DEFAULT_BACKENDS else []):   # a plugin's backend needs its file
        cmd += ["--plugin", os.path.abspath(path)]
    if DG.DEV == "cpu":
        cmd += ["--dev", "cpu"]
    return cmd


def run_isolated(res, name, args, bw, fp16_ms, commit):
    """Backend `name` timed in its own process; returns its row (an error row when the process
    died, or was killed after --child-timeout, without writing one)."""
    fd, path = tempfile.mkstemp(prefix=f"decode_{name}_", suffix=".jsonl")
    os.close(fd)
    DG.log(f"== {name}: in its own process ==")
    rc, timed_out, secs, tail = DG.run_child(child_command(args, name, path, bw, commit), args.child_timeout, name)
    rows = DG.read_rows(path)
    os.unlink(path)
    row = None
    for r in rows:
        if r.get("variant") == "decode_step" and r.get("peer") == name:
            if fp16_ms and name != "fp16" and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0:
                r["speedup_vs_fp16"] = fp16_ms / r["ms"]
            row = r
        res.add_row(r)
    if row is None:
        why = DG.child_failure(name, rc, timed_out, secs, tail)
        row = res.add("decode_step", name, step_shape(args), quant=BACKENDS[name].quant, ms=None, error=why)
    return row


def run(args):
    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    isolated = [] if args.child else isolated_backends(args.isolate, names)
    _MARLIN["dir"], _MARLIN["build"], _MARLIN["m"] = args.marlin_dir, args.marlin_build_dir, args.m
    on_gpu = DG.DEV != "cpu"
    common = {"dtype": "f16", "device": torch.cuda.get_device_name() if on_gpu else "cpu",
              "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "commit": args.commit or DG.git_commit(), "torch": torch.__version__,
              "method": "one CUDA graph per step, replayed; L2 flushed before each replay; CUDA events; median"}
    res = DG.Results(args.out, args.append, common)
    if args.bw:   # a child: the parent's
        bw = args.bw
    else:
        bw, copy_ms = measure_bandwidth()
        if on_gpu:
            res.add("d2d_copy", "torch.copy_", {"bytes": DG.COPY_BYTES}, workload="ceiling", ms=copy_ms, gbps=bw,
                    note="GB/s counts bytes read + written")
        DG.log(f"[{common['device']}] copy {bw:.0f} GB/s (read + write); {args.layers} layers, M={args.m}; "
               f"backends {', '.join(names)}; each in its own process: {', '.join(isolated) or 'none'}")
    fp16_ms, bad, dead = None, [], None
    for name in names:
        shape = step_shape(args)
        t0 = time.time()
        if name in isolated:
            row = run_isolated(res, name, args, bw, fp16_ms, common["commit"])
        elif dead:
            row = res.add("decode_step", name, shape, quant=BACKENDS[name].quant, ms=None, error=dead)
        elif not on_gpu and name in ("marlin", "tinygemm"):
            row = res.add("decode_step", name, shape, quant=BACKENDS[name].quant, ms=None, error="needs a CUDA device")
        else:
            try:
                row = time_backend(res, name, args, bw, fp16_ms)
            except Exception as ex:
                row = res.add("decode_step", name, shape, quant=BACKENDS[name].quant, ms=None, error=DG.exc_text(ex))
                DG.log("\n".join("    " + t for t in traceback.format_exc().strip().splitlines()[-8:]))
            dead = context_error()
            if dead:
                DG.log("  " + dead)
        if isinstance(row.get("ms"), (int, float)):
            if name == "fp16":
                fp16_ms = row["ms"]
            DG.log(f"  {name}: {row['ms']:.3f} ms/token ({row['tokens_per_s']:.0f} tokens/s), eager "
                   f"{row['ms_eager']:.3f} ms, {row['pct_floor']:.0f}% of the floor; err {row['err']}, "
                   f"graph vs eager {row['graph_err']}; {time.time() - t0:.0f} s")
        if row.get("correct") is False:
            bad.append(name)
        gc.collect()
        if on_gpu and not dead:
            torch.cuda.empty_cache()
    if args.child:
        return 0
    DG.log(f"\n== decode step ({MODEL} linears, {args.layers} layers + lm_head, M={args.m}) ==")
    print_table(res.rows)
    return 1 if bad else 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="JSON lines file (overwritten unless --append)")
    p.add_argument("--append", action="store_true")
    p.add_argument("--backends", default=None,
                   help=f"comma list of registered backends (default: {','.join(DEFAULT_BACKENDS)} + plugins)")
    p.add_argument("--plugin", action="append", default=[],
                   help="a Python file whose register(register_backend) adds backends (repeatable)")
    p.add_argument("--layers", type=int, default=NUM_LAYERS)
    p.add_argument("--m", type=int, default=1, help="rows of x (tokens decoded at once)")
    p.add_argument("--reps", type=int, default=20, help="graph replays timed (median)")
    p.add_argument("--dims", default=None, help="NxK for qkv,o,gate_up,down,lm_head (default Qwen3-4B's)")
    p.add_argument("--marlin-dir", default=DG.default_marlin_dir(), help="staged Marlin source")
    p.add_argument("--marlin-build-dir", default=None, help="Marlin's build folder (default: MARLIN_DIR/build)")
    p.add_argument("--isolate", default="auto",
                   help="backends run each in a child process: auto (" + ", ".join(ISOLATED)
                        + "), none, or a comma list")
    p.add_argument("--child-timeout", type=float, default=CHILD_TIMEOUT_S,
                   help="seconds before an isolated backend's process is killed (default %(default)s)")
    p.add_argument("--commit", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)       # run_isolated's process
    p.add_argument("--bw", type=float, default=None, help=argparse.SUPPRESS)     # the parent's copy GB/s
    p.add_argument("--dev", choices=("cuda", "cpu"), default=None, help=argparse.SUPPRESS)   # the parent's DEV
    a = p.parse_args(argv)
    try:
        parse_dims(a.dims)
    except ValueError as ex:
        p.error(str(ex))
    return a


def main(argv=None):
    args = parse_args(argv)
    if args.dev:
        DG.DEV = args.dev
    if torch is None:
        print("dequant_decode_step: needs torch", file=sys.stderr)
        return 2
    if DG.DEV != "cpu" and not torch.cuda.is_available():
        print("dequant_decode_step: no CUDA device", file=sys.stderr)
        return 2
    before = set(BACKENDS)
    for path in args.plugin:
        load_plugin(path)
    if args.backends is None:
        args.backends = ",".join(list(DEFAULT_BACKENDS) + [n for n in BACKENDS if n not in before])
    unknown = [n for n in args.backends.split(",") + ([] if args.isolate in ("auto", "none") else args.isolate.split(","))
               if n.strip() and n.strip() not in BACKENDS]
    if unknown:
        print(f"dequant_decode_step: unknown backends {unknown}; registered: {', '.join(BACKENDS)}",
              file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
