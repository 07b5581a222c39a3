"""dequant_gemm's tables for report.py: `tilejit bench --workload dequant_gemm` rows (variant int4
or int8) beside the rows of bench/peers/dequant_gemm_peer.py (fp16 cuBLAS, Marlin, tinygemm,
Triton GPTQ, torch._weight_int8pack_mm), paired by (dtype, M, N, K, G). One table per dtype, a
line per (layer, M); speed-ups are peer time / tilejit time (above 1: tilejit is faster), and
the summary checks issue 15's targets (int4 vs fp16 by M, int4 vs Marlin at M = 1, int8 vs
fp16 at M = 1). Only the standard library is used.
"""
import report

WORKLOAD = "dequant_gemm"
# (variant, peer, column title), in table order.
PEERS = (("fp16", "cublas_fp16", "fp16 cuBLAS"), ("int4", "marlin", "Marlin"),
         ("int4", "tinygemm", "tinygemm"), ("int4", "triton_gptq_wide", "Triton GPTQ"),
         ("int8", "weight_int8pack_mm", "int8pack_mm"))
# int4 over fp16 cuBLAS, by M (issue 15), and int8 over fp16 at M = 1.
INT4_TARGETS = {1: 3.0, 4: 2.5, 16: 2.5, 64: 1.5, 256: 0.8, 2048: 0.6}
INT8_TARGET_M1 = 1.8


def shape_of(row):
    s = row.get("shape") or {}
    try:
        return tuple(int(s[k]) for k in ("M", "N", "K", "G"))
    except (KeyError, TypeError, ValueError):
        return None


def layer_of(row):
    """The peer's `layer`, or the last part of tilejit's problem name ("int4/M1/qkv")."""
    if row.get("layer"):
        return str(row["layer"])
    name = str(row.get("problem") or "")
    return name.rsplit("/", 1)[-1] if name.count("/") == 2 else ""


def collect(tilejit_rows, peer_rows):
    """{dtype: {(M, N, K, G): {"layer": str, column: [rows]}}}, columns "tilejit_int4",
    "tilejit_int8" and the PEERS' peer names."""
    out = {}
    for rows, mine in ((tilejit_rows, True), (peer_rows, False)):
        for row in rows:
            if row.get("workload") != WORKLOAD or report.is_check_row(row):
                continue
            shape = shape_of(row)
            if shape is None:
                continue
            if mine or row.get("impl") == "tilejit":
                if row.get("impl") != "tilejit" or row.get("variant") not in ("int4", "int8"):
                    continue
                column = "tilejit_" + row["variant"]
            else:
                column = row.get("peer")
                if column not in [p for _, p, _ in PEERS]:
                    continue
            entry = out.setdefault(report.norm_dtype(row.get("dtype")), {}).setdefault(shape, {})
            if not entry.get("layer"):
                entry["layer"] = layer_of(row)
            entry.setdefault(column, []).append(row)
    return out


def fastest_ms(entry, column):
    b, _ = report.best(entry.get(column, []))
    return (float(b["ms"]), b) if b else (None, None)


def ratio(peer_ms, ours_ms):
    return peer_ms / ours_ms if (peer_ms and ours_ms) else None


def render_dtype(dtype, entries):
    head = ["layer", "M", "N x K", "fp16 cuBLAS µs", "tilejit int4 µs", "int4 vs fp16", "Marlin µs",
            "vs Marlin", "tinygemm µs", "vs tinygemm", "Triton GPTQ µs", "tilejit int8 µs",
            "int8 vs fp16", "int8pack_mm µs", "int4 % of floor", "tilejit int4 config"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    by_m = {}          # M -> [int4 vs fp16]
    vs_marlin, int8_m1 = [], []
    for shape in sorted(entries, key=lambda s: (s[0], s[1] * s[2])):
        e = entries[shape]
        M, N, K, _ = shape
        fp16, _ = fastest_ms(e, "cublas_fp16")
        t4, r4 = fastest_ms(e, "tilejit_int4")
        t8, _ = fastest_ms(e, "tilejit_int8")
        marlin, _ = fastest_ms(e, "marlin")
        tiny, _ = fastest_ms(e, "tinygemm")
        triton, _ = fastest_ms(e, "triton_gptq_wide")
        i8, _ = fastest_ms(e, "weight_int8pack_mm")
        x4, x8, xm = ratio(fp16, t4), ratio(fp16, t8), ratio(marlin, t4)
        label = e.get("layer") or f"{N}x{K}"
        if x4 is not None:
            by_m.setdefault(M, []).append((x4, label))
        if xm is not None and M == 1:
            vs_marlin.append((xm, label))
        if x8 is not None and M == 1:
            int8_m1.append((x8, label))
        floor = report.number(r4.get("floor_ms")) if r4 else None
        pct = 100.0 * floor / t4 if (floor and t4) else None
        lines.append("| " + " | ".join([
            label, str(M), f"{N}x{K}", report.fmt_us(fp16), report.fmt_us(t4), report.fmt_x(x4),
            report.fmt_us(marlin), report.fmt_x(xm), report.fmt_us(tiny), report.fmt_x(ratio(tiny, t4)),
            report.fmt_us(triton), report.fmt_us(t8), report.fmt_x(x8), report.fmt_us(i8),
            "-" if pct is None else f"{pct:.0f}%",
            str(r4.get("config", "-")).replace("|", "\\|") if r4 else "-"]) + " |")
    summary = {"int4_vs_fp16": by_m, "int4_vs_marlin_m1": vs_marlin, "int8_vs_fp16_m1": int8_m1}
    out = [f"### {WORKLOAD} ({dtype})", "",
           "Medians with the L2 flushed before every call; speed-ups are peer time / tilejit time.", ""]
    out += lines + [""] + summary_lines(summary)
    return "\n".join(out) + "\n", summary


def summary_lines(s):
    out = ["Targets (issue 15):", ""]

    def line(what, pairs, target):
        if not pairs:
            return f"- {what}: no paired shapes"
        lo = min(pairs)
        ok = "met" if lo[0] >= target else "NOT met"
        return (f"- {what}: min {lo[0]:.2f}x ({lo[1]}), geometric mean "
                f"{report.geomean([x for x, _ in pairs]):.2f}x over {len(pairs)} shape(s); "
                f"target {target:.2f}x {ok}")

    for m in sorted(s["int4_vs_fp16"]):
        target = INT4_TARGETS.get(m)
        if target is not None:
            out.append(line(f"int4 vs fp16 cuBLAS at M={m}", s["int4_vs_fp16"][m], target))
    out.append(line("int4 vs Marlin at M=1", s["int4_vs_marlin_m1"], 1.0))
    out.append(line("int8 vs fp16 cuBLAS at M=1", s["int8_vs_fp16_m1"], INT8_TARGET_M1))
    return out


def render(tilejit_rows, peer_rows):
    """{dtype: (markdown, summary)} for the dequant_gemm rows (empty when tilejit has none)."""
    out = {}
    for dtype, entries in collect(tilejit_rows, peer_rows).items():
        if any("tilejit_int4" in e or "tilejit_int8" in e for e in entries.values()):
            out[dtype] = render_dtype(dtype, entries)
    return out
