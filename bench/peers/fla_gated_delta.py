"""flash-linear-attention's gated delta rule and linear attention, timed as `tilejit bench` times.

    python3 bench/peers/fla_gated_delta.py --fla DIR [--op delta|linear] [--shapes B:T:H:D,...]
                                           [--out FILE.jsonl]

--op linear times chunk_linear_attn and fused_chunk_linear_attn (normalize=False: the
workload's unnormalised form), forward and forward + backward, instead of the rule.
--op recurrence times the plain PyTorch recurrence of the rule instead (no FLA: the
always-available reference for time and memory where FLA's backward does not run): step by
step in f32, forward and forward + backward through autograd, and the backward's peak memory;
a shape whose saved states would pass 60 GB is recorded as skipped.

DIR holds the `fla` package (a checkout of the public fla-org/flash-linear-attention, staged
next to the binaries for a device call; never committed). For each shape (default: the
WORKLOADS.md ones, B=128 T in {256, 512, 1024} H=4 D=32 and B=4 T in {2048, 8192} H=16 D=128):
bf16 q, k, v [B, T, H, D], g = logsigmoid(randn) f32 (the log decay, <= 0), beta =
sigmoid(randn) bf16 (as FLA's GatedDeltaNet layer passes it), q and k L2-normalised in the
kernel, the final state returned: the forward, and the forward + backward where FLA's backward
runs (on Hopper with Triton < 3.7.1 it refuses; the reason is recorded). L2 flushed before each
call, CUDA events, median of 30 after 3 warm-ups (the first call, Triton's compile and FLA's
autotuning, is timed apart as first_call_s). One JSON line per shape on stdout (and FILE).
"""
import argparse
import importlib.util
import json
import os
import sys
import time
import types


def shape_list(text):
    out = []
    for item in text.split(","):
        f = item.split(":")
        if len(f) != 4 or not all(x.isdigit() and int(x) > 0 for x in f):
            raise argparse.ArgumentTypeError(f"'{item}' is not B:T:H:D (positive integers)")
        out.append(tuple(int(x) for x in f))
    return out


def import_fla_ops(root):
    """FLA's op without running fla/__init__.py or fla/ops/__init__.py (they import every layer
    and model, and with them transformers): the packages on the way are registered bare, their
    submodules import as usual."""
    def bare(name, path):
        m = types.ModuleType(name)
        m.__path__ = [path]
        m.__package__ = name
        m.__spec__ = importlib.util.spec_from_file_location(
            name, os.path.join(path, "__init__.py"), submodule_search_locations=[path])
        sys.modules[name] = m
        if "." in name:
            parent, child = name.rsplit(".", 1)
            setattr(sys.modules[parent], child, m)
    pkg = os.path.join(root, "fla")
    for name in ("fla", "fla.ops", "fla.ops.gated_delta_rule", "fla.ops.linear_attn",
                 "fla.layers", "fla.models"):
        bare(name, os.path.join(pkg, *name.split(".")[1:]))
    sys.modules["fla"].__version__ = "vendored"  # fla.utils reads it
    try:
        import einops  # noqa: F401  (FLA's naive references import it; the op does not need it)
    except ImportError:
        sys.modules["einops"] = types.SimpleNamespace(rearrange=None, repeat=None)
    from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule
    from fla.ops.linear_attn.chunk import chunk_linear_attn
    from fla.ops.linear_attn.fused_chunk import fused_chunk_linear_attn
    return chunk_gated_delta_rule, chunk_linear_attn, fused_chunk_linear_attn


def time_linear(torch, timer, fns, B, T, H, D, row):
    """FLA's linear attention forms (normalize=False), forward and forward + backward."""
    q, k, v = (torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16) / D ** 0.25
               for _ in range(3))
    q, k, v = (x.requires_grad_(True) for x in (q, k, v))
    do = torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16)
    for name, fn in fns:
        def fwd(fn=fn):
            return fn(q, k, v, normalize=False)[0]
        t0 = time.time()
        try:
            o = fwd()
            torch.cuda.synchronize()
            row[f"fla_{name}_first_call_s"] = round(time.time() - t0, 2)
            with torch.no_grad():
                row[f"fla_{name}_fwd_ms"] = timer.median_ms(fwd)
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            torch.autograd.grad(fwd(), (q, k, v), do)
            torch.cuda.synchronize()
            row[f"fla_{name}_fwdbwd_peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
            row[f"fla_{name}_fwdbwd_ms"] = timer.median_ms(
                lambda: torch.autograd.grad(fwd(), (q, k, v), do))
            del o
        except Exception as ex:
            row[f"fla_{name}_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"


def time_recurrence(torch, timer, B, T, H, D, row):
    """The rule step by step in f32 (q and k L2-normalised, g the log decay, beta in (0, 1)),
    forward and forward + backward through autograd: what a user without FLA's backward has."""
    saved = 6 * T * B * H * D * D * 4  # about six [B, H, D, D] f32 tensors kept per step
    if saved > 60e9:
        row["torch_recurrence_skipped"] = f"its saved states would take about {saved / 1e9:.0f} GB"
        return
    F = torch.nn.functional
    q, k, v = (torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    g = F.logsigmoid(torch.randn(B, T, H, device="cuda")).requires_grad_(True)
    beta = torch.sigmoid(torch.randn(B, T, H, device="cuda")).requires_grad_(True)
    do = torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16)

    def fwd():
        qn = q.float() * torch.rsqrt((q.float() ** 2).sum(-1, keepdim=True) + 1e-6) * D ** -0.5
        kn = k.float() * torch.rsqrt((k.float() ** 2).sum(-1, keepdim=True) + 1e-6)
        s = q.new_zeros(B, H, D, D, dtype=torch.float32)
        o = []
        for t in range(T):
            s = s * g[:, t].exp()[..., None, None]
            u = beta[:, t][..., None] * (v[:, t].float() - torch.einsum("bhk,bhkv->bhv", kn[:, t], s))
            s = s + kn[:, t][..., None] * u[..., None, :]
            o.append(torch.einsum("bhk,bhkv->bhv", qn[:, t], s))
        return torch.stack(o, 1).to(torch.bfloat16), s

    def fwd_bwd():
        o, s = fwd()
        return torch.autograd.grad(o, (q, k, v, g, beta), do)
    with torch.no_grad():
        row["torch_recurrence_fwd_ms"] = timer.median_ms(fwd, n=5, warmup=1)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fwd_bwd()
    torch.cuda.synchronize()
    row["torch_recurrence_fwdbwd_peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
    row["torch_recurrence_fwdbwd_ms"] = timer.median_ms(fwd_bwd, n=5, warmup=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fla", help="the directory holding the fla package (not for --op recurrence)")
    p.add_argument("--shapes", type=shape_list,
                   default=[(128, 256, 4, 32), (128, 512, 4, 32), (128, 1024, 4, 32),
                            (4, 2048, 16, 128), (4, 8192, 16, 128)], help="B:T:H:D,...")
    p.add_argument("--op", choices=("delta", "linear", "recurrence"), default="delta",
                   help="the gated delta rule (default), linear attention, or the rule's plain "
                        "PyTorch recurrence")
    p.add_argument("--out", help="also append the JSON lines to this file")
    args = p.parse_args()
    if args.op != "recurrence" and not (args.fla and os.path.isdir(os.path.join(args.fla, "fla"))):
        p.error(f"--fla {args.fla}: no fla package there (--op {args.op} times FLA)")
    import torch
    if not torch.cuda.is_available():
        print("fla_gated_delta: no CUDA device; nothing to time", file=sys.stderr)
        return 0
    import torch.nn.functional as F
    if args.op != "recurrence":
        sys.path.insert(0, args.fla)
        chunk_gated_delta_rule, chunk_linear_attn, fused_chunk_linear_attn = import_fla_ops(args.fla)

    from flushed_timer import FlushedTimer
    timer = FlushedTimer(torch)
    out = open(args.out, "a") if args.out else None

    def emit(row):
        """One JSON line: stdout, and --out when given."""
        line = json.dumps(row)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    for (B, T, H, D) in args.shapes:
        torch.manual_seed(0)
        if args.op == "recurrence":
            row = {"op": "gated_delta_rule", "peer": "torch_recurrence", "B": B, "T": T, "H": H,
                   "D": D, "device": torch.cuda.get_device_name()}
            try:
                time_recurrence(torch, timer, B, T, H, D, row)
            except Exception as ex:  # out of memory on a large shape: recorded, not fatal
                row["torch_recurrence_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"
            emit(row)
            torch.cuda.empty_cache()
            continue
        if args.op == "linear":
            row = {"op": "linear_attn", "B": B, "T": T, "H": H, "D": D,
                   "device": torch.cuda.get_device_name()}
            time_linear(torch, timer, [("chunk", chunk_linear_attn),
                                       ("fused_chunk", fused_chunk_linear_attn)], B, T, H, D, row)
            emit(row)
            torch.cuda.empty_cache()
            continue
        q, k, v = (torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        g = F.logsigmoid(torch.randn(B, T, H, device="cuda")).requires_grad_(True)
        beta = torch.sigmoid(torch.randn(B, T, H, device="cuda")).to(torch.bfloat16)
        beta.requires_grad_(True)
        row = {"B": B, "T": T, "H": H, "D": D, "device": torch.cuda.get_device_name()}

        def fwd():
            return chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True,
                                          use_qk_l2norm_in_kernel=True)
        t0 = time.time()
        o, ht = fwd()
        torch.cuda.synchronize()
        row["first_call_s"] = round(time.time() - t0, 2)
        with torch.no_grad():
            row["fla_fwd_ms"] = timer.median_ms(fwd)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            fwd()
        torch.cuda.synchronize()
        row["fla_fwd_peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
        do = torch.randn_like(o)
        try:
            def fwd_bwd():
                o2, _ = fwd()
                return torch.autograd.grad(o2, (q, k, v, g, beta), do)
            fwd_bwd()
            row["fla_fwdbwd_ms"] = timer.median_ms(fwd_bwd)
        except Exception as ex:  # FLA's backward refuses on Hopper with older Triton
            row["fla_fwdbwd_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"
        emit(row)
        del q, k, v, g, beta, o, ht
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
