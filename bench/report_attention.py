"""attention's tables for report.py: `tilejit bench --workload attention` rows (the forward and
the backward's kernels as one per-call sequence; the forward's own time is its step's) beside
the shared yardstick's SDPA rows (../shared/peers/attention.py: variants dense_fwd and
dense_fwd_bwd, peers sdpa_flash = FlashAttention-2, sdpa_cudnn, sdpa_efficient, sdpa_math,
sdpa_auto), paired by (dtype, B, H, N, D, causal); block-sparse rows (shapes with a `density`)
beside the yardstick's compiled flex_attention (variants blocksparse_fwd and
blocksparse_fwd_bwd), paired by (dtype, B, H, N, D, density to 3 decimals). Speed-ups are peer
time / tilejit time; the summaries check issue 16's targets (16-bit: >= 1.0x FlashAttention-2
forward and forward + backward; f32: >= 1.5x the best SDPA backend; block-sparse: >= 1.5x flex
at 10% density, 1.2x at 25% and 50%). Only the standard library is used.
"""
import report

WORKLOAD = "attention"
BACKENDS = ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "sdpa_math", "sdpa_auto")
FA2 = "sdpa_flash"


FLEX = "flex_compiled"


def key_of(row):
    """(B, H, N, D, causal, Hkv, density): density None for dense attention."""
    s = row.get("shape") or {}
    try:
        density = round(float(s["density"]), 3) if "density" in s else None
        if density is not None and density >= 1:
            density = None  # flex's 100% rows are dense attention
        return (int(s["B"]), int(s["H"]), int(s["N"]), int(s["D"]), bool(s.get("causal", False)),
                int(s.get("Hkv", s["H"])), density)
    except (KeyError, TypeError, ValueError):
        return None


def tilejit_times(row):
    """(forward ms, forward + backward ms) of a tilejit bench row: the forward step's median and
    the whole sequence's."""
    fwd = None
    for st in row.get("steps") or []:
        if st.get("step") == "forward":
            fwd = report.number(st.get("ms"))
    return fwd, report.number(row.get("ms"))


def collect(tilejit_rows, peer_rows):
    """{dtype: {key: {"tilejit": [rows], (mode, peer): [rows]}}} (mode: fwd or fwd_bwd)."""
    out = {}
    for rows in (tilejit_rows, peer_rows):
        for row in rows:
            if row.get("workload") != WORKLOAD or report.is_check_row(row):
                continue
            key = key_of(row)
            if key is None:
                continue
            dtype = report.norm_dtype(row.get("dtype") or (row.get("shape") or {}).get("dtype"))
            entry = out.setdefault(dtype, {}).setdefault(key, {})
            if row.get("impl") == "tilejit":
                entry.setdefault("tilejit", []).append(row)
            elif row.get("peer") in BACKENDS and row.get("variant") in ("dense_fwd", "dense_fwd_bwd"):
                entry.setdefault((row["variant"][len("dense_"):], row["peer"]), []).append(row)
            elif row.get("peer") == FLEX and key[6] is not None and row.get("variant") in (
                    "blocksparse_fwd", "blocksparse_fwd_bwd"):
                entry.setdefault((row["variant"][len("blocksparse_"):], FLEX), []).append(row)
    return out


def best_tilejit(entry):
    ok = [r for r in entry.get("tilejit", []) if report.row_ok(r)]
    return min(ok, key=lambda r: float(r["ms"])) if ok else None


def peer_ms(entry, mode, peer):
    b, _ = report.best(entry.get((mode, peer), []))
    return float(b["ms"]) if b else None


def best_sdpa(entry, mode):
    times = [(peer_ms(entry, mode, p), p) for p in BACKENDS]
    times = [t for t in times if t[0] is not None]
    return min(times) if times else (None, None)


def render_dtype(dtype, entries):
    head = ["shape", "tilejit fwd ms", "FA2 fwd ms", "vs FA2", "cuDNN fwd ms", "vs cuDNN",
            "tilejit fwd+bwd ms", "FA2 fwd+bwd ms", "vs FA2", "cuDNN fwd+bwd ms", "vs cuDNN",
            "best SDPA fwd+bwd", "vs best", "tilejit TFLOP/s (fwd+bwd)", "tilejit config"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    s = {"fwd_vs_fa2": [], "fb_vs_fa2": [], "fb_vs_best": [], "fwd_vs_best": []}
    for key in sorted(entries, key=lambda k: (k[2], k[3], k[4], k[0], k[1])):
        e = entries[key]
        B, H, N, D, causal, hkv, _ = key
        label = f"B={B} H={H}" + (f" Hkv={hkv}" if hkv != H else "") + f" N={N} D={D}" + (" causal" if causal else "")
        tj = best_tilejit(e)
        t_fwd, t_fb = tilejit_times(tj) if tj else (None, None)
        fa_f, fa_fb = peer_ms(e, "fwd", FA2), peer_ms(e, "fwd_bwd", FA2)
        cu_f, cu_fb = peer_ms(e, "fwd", "sdpa_cudnn"), peer_ms(e, "fwd_bwd", "sdpa_cudnn")
        best_fb, best_name = best_sdpa(e, "fwd_bwd")
        best_f, _ = best_sdpa(e, "fwd")
        x = {"fwd_fa2": report.number(fa_f and t_fwd and fa_f / t_fwd),
             "fwd_cu": report.number(cu_f and t_fwd and cu_f / t_fwd),
             "fb_fa2": report.number(fa_fb and t_fb and fa_fb / t_fb),
             "fb_cu": report.number(cu_fb and t_fb and cu_fb / t_fb),
             "fb_best": report.number(best_fb and t_fb and best_fb / t_fb),
             "fwd_best": report.number(best_f and t_fwd and best_f / t_fwd)}
        for name, k in (("fwd_vs_fa2", "fwd_fa2"), ("fb_vs_fa2", "fb_fa2"), ("fb_vs_best", "fb_best"),
                        ("fwd_vs_best", "fwd_best")):
            if x[k] is not None:
                s[name].append((x[k], label))
        flops = 4.0 * B * H * N * N * D * (0.5 if causal else 1.0) * 3.5
        tflops = flops / (t_fb * 1e-3) / 1e12 if t_fb else None
        lines.append("| " + " | ".join([
            label, report.fmt_ms(t_fwd), report.fmt_ms(fa_f), report.fmt_x(x["fwd_fa2"]),
            report.fmt_ms(cu_f), report.fmt_x(x["fwd_cu"]), report.fmt_ms(t_fb), report.fmt_ms(fa_fb),
            report.fmt_x(x["fb_fa2"]), report.fmt_ms(cu_fb), report.fmt_x(x["fb_cu"]),
            f"{report.fmt_ms(best_fb)} ({best_name})" if best_fb else "-", report.fmt_x(x["fb_best"]),
            "-" if tflops is None else f"{tflops:.0f}",
            str(tj.get("config", "-")).replace("|", "\\|") if tj else "-"]) + " |")
    out = [f"### {WORKLOAD} ({dtype})", "",
           "Medians with the L2 flushed before every call; speed-ups are peer time / tilejit time.", ""]
    out += lines + [""] + summary_lines(dtype, s)
    return "\n".join(out) + "\n", s


def summary_lines(dtype, s):
    def line(what, pairs, target):
        if not pairs:
            return f"- {what}: no paired shapes"
        lo = min(pairs)
        return (f"- {what}: min {lo[0]:.2f}x ({lo[1]}), geometric mean "
                f"{report.geomean([x for x, _ in pairs]):.2f}x over {len(pairs)} shape(s); target "
                f"{target:.2f}x {'met' if lo[0] >= target else 'NOT met'}")

    out = ["Targets (issue 16, dense):", ""]
    if dtype == "f32":
        out.append(line("forward vs the best SDPA backend", s["fwd_vs_best"], 1.5))
        out.append(line("forward + backward vs the best SDPA backend", s["fb_vs_best"], 1.5))
    else:
        out.append(line("forward vs FlashAttention-2", s["fwd_vs_fa2"], 1.0))
        out.append(line("forward + backward vs FlashAttention-2", s["fb_vs_fa2"], 1.0))
    return out


def render_sparse(dtype, entries):
    """Block-sparse rows beside compiled flex_attention, with the issue's targets."""
    head = ["shape", "density", "tilejit fwd ms", "flex fwd ms", "vs flex", "tilejit fwd+bwd ms",
            "flex fwd+bwd ms", "vs flex", "tilejit config"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    s = {"fwd": [], "fb": []}
    for key in sorted(entries, key=lambda k: (k[2], k[3], k[6], k[0], k[1])):
        e = entries[key]
        B, H, N, D, causal, hkv, density = key
        label = f"B={B} H={H}" + (f" Hkv={hkv}" if hkv != H else "") + f" N={N} D={D}" + (" causal" if causal else "")
        tj = best_tilejit(e)
        t_fwd, t_fb = tilejit_times(tj) if tj else (None, None)
        fx_f, fx_fb = peer_ms(e, "fwd", FLEX), peer_ms(e, "fwd_bwd", FLEX)
        xf = report.number(fx_f and t_fwd and fx_f / t_fwd)
        xfb = report.number(fx_fb and t_fb and fx_fb / t_fb)
        target = 1.5 if density <= 0.15 else 1.2
        for name, x in (("fwd", xf), ("fb", xfb)):
            if x is not None:
                s[name].append((x, f"{label} at {density:.3f}", target))
        lines.append("| " + " | ".join([
            label, f"{density:.3f}", report.fmt_ms(t_fwd), report.fmt_ms(fx_f), report.fmt_x(xf),
            report.fmt_ms(t_fb), report.fmt_ms(fx_fb), report.fmt_x(xfb),
            str(tj.get("config", "-")).replace("|", "\\|") if tj else "-"]) + " |")
    out = [f"### {WORKLOAD} block-sparse ({dtype})", "",
           "Medians with the L2 flushed before every call; speed-ups are flex_attention's time / "
           "tilejit's.", "", *lines, "", "Targets (issue 16, block-sparse: 1.5x flex at 10%, 1.2x at "
           "25% and 50%):", ""]
    for what, pairs in (("forward", s["fwd"]), ("forward + backward", s["fb"])):
        if not pairs:
            out.append(f"- {what}: no paired shapes")
            continue
        missed = [p for p in pairs if p[0] < p[2]]
        lo = min(pairs)
        out.append(f"- {what}: min {lo[0]:.2f}x ({lo[1]}) over {len(pairs)} shape(s); "
                   + ("every target met" if not missed else f"{len(missed)} target(s) NOT met"))
    return "\n".join(out) + "\n", s


def render(tilejit_rows, peer_rows):
    """{dtype: (markdown, summary)} for the attention rows (empty when tilejit has none); a
    dtype's block-sparse rows get their own table (key "<dtype> block-sparse")."""
    out = {}
    for dtype, entries in collect(tilejit_rows, peer_rows).items():
        dense = {k: e for k, e in entries.items() if k[6] is None}
        sparse = {k: e for k, e in entries.items() if k[6] is not None}
        if any("tilejit" in e for e in dense.values()):
            out[dtype] = render_dtype(dtype, dense)
        if any("tilejit" in e for e in sparse.values()):
            out[f"{dtype} block-sparse"] = render_sparse(dtype, sparse)
    return out
