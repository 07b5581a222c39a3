#!/usr/bin/env python3
"""Pair tilejit's benchmark results with the peers' by shape and write markdown tables.

    python3 bench/report.py --tilejit A.jsonl --peers B.jsonl [C.jsonl ...]
                            [--markdown OUT.md] [--readme README.md]

Inputs are JSON lines: `tilejit bench` rows ({workload, variant, impl: "tilejit", shape, dtype, ms,
correct, config, gbps, floor_ms, device, date, commit, ...}), rows of the project's own peers in
bench/peers/ (impl "triton_peer" and "torch_sdpa_dense") and rows of the shared yardstick
(../shared/peers: field `peer`, e.g. "triton_splitk", "sdpa_dense"). Rows pair by (workload, dtype
(f16 when absent), shape); a dense row pairs with every sparse shape that has its (B, Hq, Hkv, D,
ctx). Where one implementation has several rows for a shape (a config sweep, or several runs), the
fastest correct one counts: correct != false, no error, err <= 1e-2 when given.

One table per workload and dtype (stdout, --markdown), then a summary: geometric-mean speed-up
of tilejit over each peer, the smallest one, how many shapes tilejit wins, the share of the HBM
floor on shapes whose floor is over 20 us, and the device/date/commit of the rows. --readme
replaces the text between `<!-- bench:WORKLOAD:start -->` and `<!-- bench:WORKLOAD:end -->` in a
file with that workload's tables (a file without the markers is left as it is, with a note).
attention's rows go to report_attention.py's tables (tilejit's forward and forward + backward
beside SDPA's backends from the shared yardstick, issue 16's dense targets checked);
dequant_gemm's rows go to report_dequant.py's tables (tilejit's int4 and int8 beside fp16 cuBLAS,
Marlin, tinygemm, Triton GPTQ and int8pack_mm, with issue 15's targets checked). Only the
standard library is used.
"""
import argparse
import json
import math
import os
import sys

TOL = 1e-2
OUR_PEER = "triton_peer"
DENSE_IMPLS = ("torch_sdpa_dense", "sdpa_dense")          # ours first, then the yardstick's
YARDSTICK = {"paged_sparse": "triton_splitk"}             # the shared yardstick's Triton peer
FLOOR_MIN_MS = 0.020                                      # "% of floor" summary: floors over 20 us
HEADER_KEYS = ("B", "Hq", "Hkv")
KEY_ORDER = ("B", "Hq", "Hkv", "D", "ps", "ctx", "r", "kept")   # how shapes read in the tables
DTYPE_ALIASES = {"float16": "f16", "fp16": "f16", "half": "f16", "bfloat16": "bf16",
                 "float32": "f32", "fp32": "f32", "float": "f32"}


# --------------------------------------------------------------------------------------------
# Loading and pairing
# --------------------------------------------------------------------------------------------
def load_rows(path):
    """JSON objects of a JSON-lines file (blank and unparsable lines skipped, with a note)."""
    rows, bad = [], 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(obj, dict):
                rows.append(obj)
    if bad:
        print(f"report: {path}: {bad} unparsable line(s) skipped", file=sys.stderr)
    return rows


def norm_dtype(v):
    v = str(v or "f16").lower()
    return DTYPE_ALIASES.get(v, v)


def norm_value(v):
    """Shape values compare as numbers where they are numbers (16 == 16.0, 0.02 == 0.0200000001)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if float(v).is_integer():
        return int(v)
    return round(float(v), 9)


def shape_key(shape):
    return tuple(sorted((str(k), norm_value(v)) for k, v in (shape or {}).items()))


def number(v):
    """v as a float, or None (strings such as "nan" from the peers' JSON are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def row_ok(row):
    """A row that measured a correct result."""
    ms = number(row.get("ms"))
    if ms is None or ms <= 0 or row.get("error") or row.get("skipped"):
        return False
    if row.get("correct") is False:
        return False
    err = row.get("err")
    if err is not None:
        e = number(err)
        if e is None or e > TOL:
            return False
    return True


def is_check_row(row):
    """Rows that check without timing (e.g. the peers' ragged_check): not part of the tables."""
    variant = str(row.get("variant") or "")
    if variant.endswith("_check"):
        return True
    return row.get("ms") is None and not row.get("error") and not row.get("skipped")


def role(row):
    """Which column a row feeds: tilejit, ours, yardstick, dense, or None."""
    wl = row.get("workload")
    impl = row.get("impl")
    peer = row.get("peer")
    if is_check_row(row):
        return None
    if row.get("variant") == "dense" and (impl in DENSE_IMPLS or peer in DENSE_IMPLS):
        return "dense"
    if impl == "tilejit":
        return "tilejit"
    if impl == OUR_PEER:
        return "ours"
    if peer is not None and peer == YARDSTICK.get(wl):
        return "yard"
    return None


def best(rows):
    """(fastest correct row or None, all rows) for one implementation and shape."""
    ok = [r for r in rows if row_ok(r)]
    return (min(ok, key=lambda r: float(r["ms"])) if ok else None), rows


class Table:
    """Rows of one (workload, dtype): entries by shape, in first-seen order (tilejit's first)."""

    def __init__(self, workload, dtype):
        self.workload = workload
        self.dtype = dtype
        self.entries = {}       # shape key -> {"shape": dict, "variant": str, role: [rows]}
        self.dense = []         # dense rows (matched to entries by the dense row's shape keys)
        self.sources = {}       # role -> set of (device, date, commit)

    def add(self, row, r):
        src = (row.get("device"), row.get("date"), row.get("commit"))
        self.sources.setdefault(r, set()).add(src)
        if r == "dense":
            self.dense.append(row)
            return
        key = (row.get("variant"), shape_key(row.get("shape")))
        e = self.entries.setdefault(key, {"shape": dict(row.get("shape") or {}), "variant": row.get("variant")})
        e.setdefault(r, []).append(row)

    def dense_for(self, shape):
        """Fastest correct dense row whose shape is a sub-shape of `shape` (ours preferred)."""
        sk = dict(shape_key(shape))
        for impl in DENSE_IMPLS:
            cands = [d for d in self.dense if (d.get("impl") or d.get("peer")) == impl
                     and all(sk.get(k) == v for k, v in shape_key(d.get("shape")))]
            b, _ = best(cands)
            if b is not None:
                return b
        return None


def build_tables(tilejit_rows, peer_rows):
    """{(workload, dtype): Table}. Only workloads that tilejit or one of our peers measured."""
    tables = {}
    order = []
    for rows in (tilejit_rows, peer_rows):
        for row in rows:
            r = role(row)
            # dequant_gemm and attention have their own tables (report_dequant.py,
            # report_attention.py): variants and backends, not a sparse/dense pair
            if r is None or row.get("workload") in (None, "ceiling", "dequant_gemm", "attention"):
                continue
            key = (row["workload"], norm_dtype(row.get("dtype")))
            if key not in tables:
                tables[key] = Table(*key)
                order.append(key)
            tables[key].add(row, r)
    # a table of peer rows alone (no tilejit or our rows for that workload/dtype) is noise
    keep = [k for k in order if any("tilejit" in e or "ours" in e for e in tables[k].entries.values())]
    return {k: tables[k] for k in keep}


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------
def fmt_us(ms):
    if ms is None:
        return "-"
    u = ms * 1e3
    return f"{u:.1f}" if u < 1000 else f"{u:.0f}"


def fmt_ms(ms):
    return "-" if ms is None else f"{ms:.3f}"


def fmt_x(x):
    return "-" if x is None else f"{x:.2f}x"


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def cell_time(entry, role_, unit=fmt_us):
    """Time of the fastest correct row; 'skipped' if every row was skipped (time budget), 'FAIL'
    if rows exist but none is correct, '-' if there are none."""
    rows = entry.get(role_)
    if not rows:
        return "-", None
    b, _ = best(rows)
    if b is None:
        return ("skipped" if all(r.get("skipped") for r in rows) else "FAIL"), None
    return unit(float(b["ms"])), b


def ordered_keys(keys):
    """Shape keys in KEY_ORDER first, then the others as they came."""
    return [k for k in KEY_ORDER if k in keys] + [k for k in keys if k not in KEY_ORDER]


def shape_label(shape, varying):
    return " ".join(f"{k}={shape[k]}" for k in ordered_keys(list(shape)) if k in varying)


def render_table(t):
    """Markdown for one Table and the summary numbers (dict) for tests and the summary lines."""
    entries = list(t.entries.values())
    main = [e for e in entries if e.get("variant") != "dense"]
    keys = []
    for e in main:
        for k in e["shape"]:
            if k not in keys:
                keys.append(k)
    keys = ordered_keys(keys)
    # sizes that every row shares and that do not name the case go above the table
    constant = [k for k in keys if k in HEADER_KEYS and len({norm_value(e["shape"].get(k)) for e in main}) == 1]
    varying = [k for k in keys if k not in constant]
    yard_name = YARDSTICK.get(t.workload, "-")
    head = ["shape", "tilejit µs", "tilejit config", "our Triton peer µs", "yardstick Triton µs",
            "vs ours", "vs yardstick", "tilejit GB/s", "floor µs", "% of floor", "dense (SDPA) ms",
            "vs dense"]
    align = ["---", "---:", "---"] + ["---:"] * (len(head) - 3)       # text left, numbers right
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    sp = {"ours": [], "yard": [], "dense": []}
    wins = {"ours": 0, "yard": 0, "dense": 0}
    worst = {"ours": None, "yard": None, "dense": None}
    pct_big = []
    ours_vs_yard, ours_direct_vs_yard = [], []   # yardstick time / our peer's time, per shape
    graph_vs_ours = []   # our peer's graph-replayed ms / tilejit's ms_graph: both from a CUDA graph
    n_tilejit = n_fail = 0
    for e in main:
        tj_cell, tj = cell_time(e, "tilejit")
        ours_cell, ours = cell_time(e, "ours")
        yard_cell, yard = cell_time(e, "yard")
        dense = t.dense_for(e["shape"])
        tj_ms = float(tj["ms"]) if tj else None
        if tj:
            n_tilejit += 1
        elif e.get("tilejit"):
            n_fail += 1
        ratios = {}
        for name, peer in (("ours", ours), ("yard", yard), ("dense", dense)):
            x = float(peer["ms"]) / tj_ms if (peer and tj_ms) else None
            ratios[name] = x
            if x is not None:
                sp[name].append(x)
                wins[name] += x > 1.0
                if worst[name] is None or x < worst[name][0]:
                    worst[name] = (x, shape_label(e["shape"], varying))
        if tj and ours and number(tj.get("ms_graph")) and ours.get("launch") == "cuda_graph":
            graph_vs_ours.append((float(ours["ms"]) / number(tj["ms_graph"]),
                                  shape_label(e["shape"], varying)))
        if ours and yard:
            ours_vs_yard.append((float(yard["ms"]) / float(ours["ms"]), shape_label(e["shape"], varying)))
            direct = number(ours.get("ms_direct"))
            if direct:
                ours_direct_vs_yard.append((float(yard["ms"]) / direct, shape_label(e["shape"], varying)))
        floor = None
        for src in (tj, ours, yard):
            if src and number(src.get("floor_ms")) is not None:
                floor = number(src["floor_ms"])
                break
        pct = 100.0 * floor / tj_ms if (floor and tj_ms) else None
        if pct is not None and floor > FLOOR_MIN_MS:
            pct_big.append((pct, shape_label(e["shape"], varying)))
        gbps = number(tj.get("gbps")) if tj else None
        cfg = str(tj.get("config", "-")) if tj else "-"
        lines.append("| " + " | ".join([
            shape_label(e["shape"], varying), tj_cell, cfg.replace("|", "\\|"), ours_cell, yard_cell,
            fmt_x(ratios["ours"]), fmt_x(ratios["yard"]),
            "-" if gbps is None else f"{gbps:.0f}", fmt_us(floor),
            "-" if pct is None else f"{pct:.0f}%",
            fmt_ms(float(dense["ms"])) if dense else "-", fmt_x(ratios["dense"])]) + " |")

    summary = {"shapes": len(main), "tilejit": n_tilejit, "tilejit_fail": n_fail}
    for name in sp:
        summary[name] = {"geomean": geomean(sp[name]), "min": worst[name], "wins": wins[name], "n": len(sp[name])}
    summary["pct_floor_big"] = pct_big
    summary["ours_vs_yard"] = ours_vs_yard
    summary["ours_direct_vs_yard"] = ours_direct_vs_yard
    summary["graph_vs_ours"] = graph_vs_ours
    summary["yardstick_name"] = yard_name
    out = [f"### {t.workload} ({t.dtype})", ""]
    if constant:
        out.append("All rows: " + ", ".join(f"{k}={main[0]['shape'][k]}" for k in constant) + ". "
                   "Times are medians with the L2 flushed before every call (CUDA events); speed-ups "
                   "are peer time / tilejit time (above 1: tilejit is faster).")
        out.append("")
    out += lines
    out.append("")
    out += summary_lines(t, summary)
    return "\n".join(out) + "\n", summary


def summary_lines(t, s):
    names = {"ours": f"our Triton peer ({OUR_PEER})", "yard": f"yardstick Triton ({s['yardstick_name']})",
             "dense": "dense attention (SDPA)"}
    out = [f"Summary ({s['tilejit']} of {s['shapes']} shapes have a correct tilejit result"
           + (f"; {s['tilejit_fail']} have tilejit rows but none correct" if s["tilejit_fail"] else "") + "):", ""]
    for name in ("ours", "yard", "dense"):
        v = s[name]
        if not v["n"]:
            out.append(f"- tilejit vs {names[name]}: no paired shapes")
            continue
        mn = v["min"]
        out.append(f"- tilejit vs {names[name]}: geometric-mean speed-up {v['geomean']:.2f}x over "
                   f"{v['n']} shapes; min {mn[0]:.2f}x ({mn[1]}); tilejit faster on {v['wins']}/{v['n']}")
    pairs = s.get("graph_vs_ours")
    if pairs:
        lo = min(pairs)
        out.append(f"- tilejit vs {names['ours']}, both replayed from a CUDA graph (tilejit's ms_graph): "
                   f"geometric-mean speed-up {geomean([x for x, _ in pairs]):.2f}x over {len(pairs)} "
                   f"shapes; min {lo[0]:.2f}x ({lo[1]}); tilejit faster on "
                   f"{sum(x > 1.0 for x, _ in pairs)}/{len(pairs)}")
    for key, how in (("ours_vs_yard", "as timed in its row"),
                     ("ours_direct_vs_yard", "launched from Python, the yardstick's way (ms_direct)")):
        pairs = s[key]
        if pairs:
            lo = min(pairs)
            out.append(f"- our Triton peer ({how}) vs the yardstick: geometric-mean speed-up "
                       f"{geomean([x for x, _ in pairs]):.2f}x over {len(pairs)} shapes; min {lo[0]:.2f}x "
                       f"({lo[1]}); at least as fast on {sum(x >= 1.0 for x, _ in pairs)}/{len(pairs)}")
    big = s["pct_floor_big"]
    if big:
        lo = min(big)
        out.append(f"- % of the HBM floor on the {len(big)} shapes whose floor is over "
                   f"{FLOOR_MIN_MS * 1e3:.0f} µs: min {lo[0]:.0f}% ({lo[1]}), "
                   f"mean {sum(p for p, _ in big) / len(big):.0f}%")
    else:
        out.append(f"- no shape with a tilejit result has a floor over {FLOOR_MIN_MS * 1e3:.0f} µs")
    for r, label in (("tilejit", "tilejit"), ("ours", "our peer"), ("dense", "dense"), ("yard", "yardstick")):
        srcs = t.sources.get(r)
        if not srcs:
            continue
        parts = sorted({", ".join(x for x in (d, dt, f"commit {c}" if c else None) if x) for d, dt, c in srcs} - {""})
        out.append(f"- {label} rows: " + ("; ".join(parts) if parts else "device and date not recorded in the rows"))
    devices = {d for srcs in t.sources.values() for d, _, _ in srcs if d}
    if len(devices) > 1:
        out.append(f"- WARNING: rows come from different devices ({', '.join(sorted(devices))}): "
                   "ratios across devices are not comparable")
    return out


def render(tables):
    """{workload: markdown} (all dtypes of a workload together) and {(workload, dtype): summary}."""
    md, summaries = {}, {}
    for key, t in tables.items():
        text, s = render_table(t)
        md[t.workload] = md.get(t.workload, "") + ("\n" if t.workload in md else "") + text
        summaries[key] = s
    return md, summaries


# --------------------------------------------------------------------------------------------
# README markers
# --------------------------------------------------------------------------------------------
def replace_between_markers(text, workload, body):
    """text with the part between the workload's markers replaced by body, or None if the
    markers are missing (or out of order)."""
    start = f"<!-- bench:{workload}:start -->"
    end = f"<!-- bench:{workload}:end -->"
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if i < 0 or j < 0:
        return None
    return text[:i + len(start)] + "\n" + body.rstrip("\n") + "\n" + text[j:]


def update_readme(path, md):
    with open(path) as f:
        text = f.read()
    new = text
    done, missing = [], []
    for workload, body in md.items():
        r = replace_between_markers(new, workload, body)
        if r is None:
            missing.append(workload)
        else:
            new = r
            done.append(workload)
    for w in missing:
        print(f"report: {path}: markers <!-- bench:{w}:start --> / <!-- bench:{w}:end --> not found; "
              f"no {w} table written there", file=sys.stderr)
    if new != text:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.replace(tmp, path)
    if done:
        print(f"report: {path}: replaced the {', '.join(done)} table(s)", file=sys.stderr)
    return done, missing


# --------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tilejit", required=True, nargs="+", help="tilejit bench JSON lines")
    ap.add_argument("--peers", default=[], nargs="+", help="peer JSON lines (ours and the yardstick's)")
    ap.add_argument("--markdown", default=None, help="write the tables here too")
    ap.add_argument("--readme", default=None, help="replace the text between the bench markers of this file")
    args = ap.parse_args(argv)
    tj, peers = [], []
    for paths, dest in ((args.tilejit, tj), (args.peers, peers)):
        for p in paths:
            if not os.path.exists(p):
                print(f"report: {p}: no such file", file=sys.stderr)
                return 2
            dest.extend(load_rows(p))
    # rows keep their role wherever they were given (a tilejit file may carry no peer rows, and
    # a peers file no tilejit rows, but nothing breaks if they do)
    tables = build_tables(tj, peers)
    import report_attention  # noqa: E402 (these import this module)
    import report_dequant  # noqa: E402
    dequant = report_dequant.render(tj, peers)
    attention = report_attention.render(tj, peers)
    if not tables and not dequant and not attention:
        print("report: no tilejit or triton_peer rows to report", file=sys.stderr)
        return 1
    md, _ = render(tables)
    for module, rendered in ((report_dequant, dequant), (report_attention, attention)):
        for dtype, (text, _) in rendered.items():
            w = module.WORKLOAD
            md[w] = md.get(w, "") + ("\n" if w in md else "") + text
    text = "\n".join(md.values())
    sys.stdout.write(text)
    if args.markdown:
        d = os.path.dirname(os.path.abspath(args.markdown))
        os.makedirs(d, exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.readme:
        if not os.path.exists(args.readme):
            print(f"report: {args.readme}: no such file", file=sys.stderr)
            return 2
        update_readme(args.readme, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
