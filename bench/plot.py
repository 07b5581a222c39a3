#!/usr/bin/env python3
"""Draw one workload's benchmark results: speed-up bars per shape and a roofline-style chart.

    python3 bench/plot.py --tilejit A.jsonl --peer B.jsonl [--peer C.jsonl ...]
                          [--workload paged_sparse] [--dtype f16] --out PREFIX
    python3 bench/plot.py --results bench/results/DATE-COMMIT-paged_sparse-h100 [--out PREFIX]

--results PREFIX reads PREFIX-tilejit.jsonl and whichever of PREFIX-peer.jsonl and
PREFIX-yardstick.jsonl exist (the names tools/device_full.sh's files get in bench/results/), and
writes next to them unless --out says otherwise. Writes PREFIX-bars.png and PREFIX-roofline.png.

Rows pair exactly as in report.py, which this imports: by (workload, dtype, variant, shape), the
fastest correct row of each implementation counting, a dense row pairing with every sparse shape
that contains its sizes; the peers are report.py's (our Triton peer, the yardstick's Triton
kernel, dense SDPA). Shapes without a correct tilejit row are left out (with a note).

- bars: per shape, the speed-up of tilejit over each peer, peer median time / tilejit median time
  (report.py's "vs" columns), on a log scale from 1x; the legend gives the geometric mean.
- roofline: per shape, the bandwidth each implementation achieves on the bytes of the floor,
  against the ceiling. What the rows record, and so what is drawn: a `tilejit bench` row carries
  `gbps` = floor bytes / median time and `copy_bandwidth_gbps`, the device-to-device copy
  bandwidth (bytes read + written) measured at the start of its run, over which `floor_ms` is
  the floor bytes; no row records the floor's bytes themselves, so they are taken as gbps x ms of
  the tilejit row. Every implementation is charged those same bytes (a dense peer too, though it
  reads more): its point is floor bytes / its median time, so the points' ratios are the
  speed-ups and tilejit's point over the ceiling is the report's "% of floor". The ceiling line is
  the tilejit rows' copy_bandwidth_gbps (measured, not the nominal HBM figure). No row records
  a FLOP count or a compute ceiling (`tilejit bench` measures none), so only byte floors are drawn.

Titles name the device, date and commit that the rows carry. Errors about the inputs (a missing
or empty file, no rows of the workload, peer rows that pair with no tilejit shape) end the
program with a message naming the file, not a traceback. Needs matplotlib (Agg backend).
"""
import argparse
import os
import statistics
import sys

# report.py lives beside this file; put its folder on the path so that importing plot from
# elsewhere (the tests) finds it too
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

PEER_ROLES = ("ours", "yard", "dense")
COLORS = {"tilejit": "#d62728", "ours": "#1f77b4", "yard": "#ff7f0e", "dense": "#7f7f7f"}
MARKERS = {"tilejit": "o", "ours": "s", "yard": "^", "dense": "v"}
DPI = 100


def role_label(role, workload):
    return {"tilejit": "tilejit",
            "ours": f"our Triton peer ({report.OUR_PEER})",
            "yard": f"yardstick Triton ({report.YARDSTICK.get(workload, '-')})",
            "dense": "dense attention (SDPA)"}[role]


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
def fail(msg):
    raise SystemExit(f"plot: {msg}")


def read_rows(path):
    try:
        rows = report.load_rows(path)
    except OSError as e:    # missing, a directory, unreadable: the system's words say which
        fail(f"{path}: {e.strerror.lower()}")
    if not rows:
        fail(f"{path}: no JSON rows (the file is empty, or none of its lines parses)")
    return rows


def what_is_there(rows):
    """A few (workload, implementation) names of rows, to say what a file holds instead."""
    names = sorted({f"{r.get('workload')}/{r.get('impl') or r.get('peer')}" for r in rows})
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


def pair_key(row):
    return report.norm_dtype(row.get("dtype")), row.get("variant"), report.shape_key(row.get("shape"))


def pairs_with(row, tj_keys):
    """Whether a peer row has a tilejit row to pair with: report.py's rules (the same dtype,
    variant and shape; for a dense row, a shape that contains all of its sizes)."""
    dtype, variant, shape = pair_key(row)
    if report.role(row) != "dense":
        return (dtype, variant, shape) in tj_keys
    return any(d == dtype and set(shape) <= set(s) for d, _, s in tj_keys)


def check_files(workload, tj_files, peer_files):
    """Fail, naming the file, unless every tilejit file has tilejit rows of the workload and
    every peer file peer rows of it, some of which pair with a tilejit row."""
    tj_keys = set()
    for path, rows in tj_files.items():
        mine = [r for r in rows if r.get("workload") == workload and report.role(r) == "tilejit"]
        if not mine:
            fail(f"{path}: no tilejit rows of workload {workload} (rows there: {what_is_there(rows)})")
        tj_keys |= {pair_key(r) for r in mine}
    for path, rows in peer_files.items():
        mine = [r for r in rows if r.get("workload") == workload and report.role(r) in PEER_ROLES]
        if not mine:
            fail(f"{path}: no peer rows of workload {workload} (impl {report.OUR_PEER}, the "
                 f"yardstick's, or dense; rows there: {what_is_there(rows)})")
        if not any(pairs_with(r, tj_keys) for r in mine):
            _, _, tj_shape = next(iter(tj_keys))
            _, _, shape = pair_key(mine[0])
            fail(f"{path}: none of its {len(mine)} {workload} rows has the dtype and shape of a "
                 f"tilejit row (tilejit has e.g. {dict(tj_shape)}, this file {dict(shape)})")


def pick_table(tables, workload, dtype, tj_paths):
    dtypes = sorted(d for w, d in tables if w == workload)
    if dtype is not None:
        dtype = report.norm_dtype(dtype)
        if dtype not in dtypes:
            fail(f"{', '.join(tj_paths)}: no {workload} rows of dtype {dtype} (dtypes there: {', '.join(dtypes)})")
    elif len(dtypes) > 1:
        fail(f"{workload} rows of several dtypes ({', '.join(dtypes)}): choose one with --dtype")
    return tables[(workload, dtype or dtypes[0])]


# --------------------------------------------------------------------------------------------
# What is drawn
# --------------------------------------------------------------------------------------------
def varying_keys(shapes):
    """Keys that go into the shape labels; report.py's rule: B, Hq, Hkv go to the title when
    every shape shares them."""
    keys = report.ordered_keys(list(dict.fromkeys(k for s in shapes for k in s)))
    constant = [k for k in keys if k in report.HEADER_KEYS
                and len({report.norm_value(s.get(k)) for s in shapes}) == 1]
    return [k for k in keys if k not in constant], constant


def collect(table):
    """One point per shape with a correct tilejit row: the shape, tilejit's ms, the floor's
    bytes and the copy bandwidth from that row, and each peer's ms ({role: ms})."""
    points, dropped = [], 0
    for e in table.entries.values():
        if e.get("variant") == "dense":
            continue
        tj, _ = report.best(e.get("tilejit", []))
        if tj is None:
            dropped += bool(e.get("tilejit"))
            continue
        peers = {r: report.best(e.get(r, []))[0] for r in ("ours", "yard")}
        peers["dense"] = table.dense_for(e["shape"])
        ms = float(tj["ms"])
        gbps = report.number(tj.get("gbps"))
        points.append({"shape": e["shape"], "ms": ms,
                       "bytes": gbps * ms * 1e6 if gbps else None,
                       "ceiling_gbps": report.number(tj.get("copy_bandwidth_gbps")),
                       "peers": {r: float(p["ms"]) for r, p in peers.items() if p is not None}})
    if dropped:
        print(f"plot: {dropped} shape(s) with tilejit rows but none correct left out", file=sys.stderr)
    alone = [report.shape_key(p["shape"]) for p in points if not p["peers"]]
    if alone:
        print(f"plot: {len(alone)} tilejit shape(s) with no correct peer row, e.g. {dict(alone[0])}",
              file=sys.stderr)
    return points


def provenance(table):
    """'device, date, commit' from the rows of every side that records them."""
    srcs = [s for side in table.sources.values() for s in side]
    parts = []
    for i, prefix in ((0, ""), (1, ""), (2, "commit ")):
        values = sorted({s[i] for s in srcs if s[i]})
        if values:
            parts.append(prefix + " / ".join(values))
    return ", ".join(parts) or "device, date and commit not recorded in the rows"


def title(table, constant, shapes, what):
    sizes = " ".join(f"{k}={shapes[0][k]}" for k in constant)
    return f"{table.workload} ({table.dtype}{', ' + sizes if sizes else ''}): {what}\n{provenance(table)}"


# --------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------
def pyplot():
    """matplotlib with the Agg backend, imported here so that the input checks and --help work
    without it, and so that a missing one says which interpreter lacks it."""
    try:
        import matplotlib
    except ImportError:
        fail(f"matplotlib is not installed for {sys.executable} (Debian: apt-get install "
             "python3-matplotlib, for /usr/bin/python3)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_bars(plt, table, points, varying, constant, roles, path):
    n = len(points)
    h = 0.8 / len(roles)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.14 * n * (len(roles) + 1)))
    y = range(n)
    for i, r in enumerate(roles):
        xs = [p["peers"][r] / p["ms"] if r in p["peers"] else None for p in points]
        have = [(yy + (i - (len(roles) - 1) / 2) * h, x) for yy, x in zip(y, xs) if x is not None]
        got = [x for _, x in have]
        legend = (f"vs {role_label(r, table.workload)}: geometric mean {report.geomean(got):.2f}x, "
                  f"tilejit faster on {sum(x > 1 for x in got)}/{len(got)}")
        # bars start at 1x so that a loss points left and a win right
        ax.barh([yy for yy, _ in have], [x - 1 for x in got], left=1, height=h,
                color=COLORS[r], label=legend)
        for yy, x in have:
            ax.text(x * (1.02 if x >= 1 else 0.98), yy, f"{x:.2f}x", va="center",
                    ha="left" if x >= 1 else "right", fontsize=6)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis, "x")
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_yticks(y, [report.shape_label(p["shape"], varying) for p in points], fontsize=7)
    ax.margins(y=0.01)
    ax.invert_yaxis()   # the first shape on top, as in report.py's table
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * 1.25)     # room for the labels of the longest bars
    ax.set_xlabel("speed-up of tilejit: peer median time / tilejit median time (log; > 1: tilejit faster)")
    ax.set_title(title(table, constant, [p["shape"] for p in points], "speed-up of tilejit per shape"),
                 fontsize=9)
    # below the axis: inside, it would cover the last shapes' bars
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.045))
    ax.grid(axis="x", which="both", alpha=0.3)
    save(plt, fig, path)


def draw_roofline(plt, table, points, varying, constant, roles, path):
    ceiling = statistics.median(p["ceiling_gbps"] for p in points)
    # smallest floor first: the small shapes, far from the ceiling, to the left
    pts = sorted(points, key=lambda p: (p["bytes"], report.shape_label(p["shape"], varying)))
    fig, ax = plt.subplots(figsize=(12, 6.5))
    x = range(len(pts))
    for r in ("tilejit",) + tuple(roles):
        ms = [p["ms"] if r == "tilejit" else p["peers"].get(r) for p in pts]
        have = [(i, p["bytes"] / m / 1e6) for i, p, m in zip(x, pts, ms) if m]
        ax.plot([i for i, _ in have], [g for _, g in have], linestyle="none", marker=MARKERS[r],
                markersize=7 if r == "tilejit" else 5, color=COLORS[r], label=role_label(r, table.workload))
    ax.axhline(ceiling, color="black", linestyle="--", linewidth=1,
               label=f"ceiling: device-to-device copy, {ceiling:.0f} GB/s (read + write, measured by tilejit bench)")
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_ylim(top=ceiling * 4)     # room for the legend above the ceiling, clear of the points
    pct = ax.secondary_yaxis("right", functions=(lambda g: 100 * g / ceiling, lambda p: p * ceiling / 100))
    plain_log_ticks(pct.yaxis, "%")
    pct.set_ylabel("% of the ceiling (tilejit's point: the report's % of floor)")
    labels = [f"{report.shape_label(p['shape'], varying)}  ({p['bytes'] / 1e6:.0f} MB)" for p in pts]
    ax.set_xticks(list(x), labels, rotation=50, ha="right", fontsize=7)
    ax.set_ylabel("floor bytes / median time, GB/s (log)")
    ax.set_title(title(table, constant, [p["shape"] for p in pts],
                       "achieved bandwidth on the floor's bytes, per shape (smallest floor first)"), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    ax.grid(axis="y", which="both", alpha=0.3)
    save(plt, fig, path)


def plain_log_ticks(axis, unit=""):
    """Log-axis ticks at 1, 2 and 5 x 10^k written as plain numbers, which read faster than 10^k."""
    from matplotlib import ticker
    axis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}{unit}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def save(plt, fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"plot: wrote {path}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tilejit", action="extend", nargs="+", default=[], help="tilejit bench JSON lines")
    ap.add_argument("--peer", action="extend", nargs="+", default=[], help="peer JSON lines (repeatable)")
    ap.add_argument("--results", help="PREFIX of PREFIX-tilejit.jsonl, PREFIX-peer.jsonl, PREFIX-yardstick.jsonl")
    ap.add_argument("--workload", default="paged_sparse")
    ap.add_argument("--dtype", default=None, help="which dtype, when the rows have several")
    ap.add_argument("--out", help="write OUT-bars.png and OUT-roofline.png (default: the --results prefix)")
    args = ap.parse_args(argv)
    if args.results:
        if args.tilejit or args.peer:
            ap.error("--results names the files itself: leave out --tilejit and --peer")
        args.tilejit = [args.results + "-tilejit.jsonl"]
        args.peer = [p for p in (args.results + "-peer.jsonl", args.results + "-yardstick.jsonl")
                     if os.path.exists(p)]
        if not args.peer:
            fail(f"{args.results}-peer.jsonl: no such file (nor {args.results}-yardstick.jsonl)")
        args.out = args.out or args.results
    if not args.tilejit or not args.peer or not args.out:
        ap.error("give --tilejit, at least one --peer and --out (or --results PREFIX)")
    return args


def main(argv=None):
    args = parse_args(argv)
    tj_files = {p: read_rows(p) for p in args.tilejit}
    peer_files = {p: read_rows(p) for p in args.peer}
    check_files(args.workload, tj_files, peer_files)
    tables = report.build_tables([r for rows in tj_files.values() for r in rows],
                                 [r for rows in peer_files.values() for r in rows])
    table = pick_table(tables, args.workload, args.dtype, list(tj_files))
    points = collect(table)
    if not points:
        fail(f"{', '.join(tj_files)}: no correct tilejit row of {args.workload} ({table.dtype})")
    if any(p["bytes"] is None or p["ceiling_gbps"] is None for p in points):
        fail(f"{', '.join(tj_files)}: tilejit rows without gbps or copy_bandwidth_gbps: the floor's "
             "bytes or its ceiling are unknown")
    roles = [r for r in PEER_ROLES if any(r in p["peers"] for p in points)]
    if not roles:
        fail(f"{', '.join(peer_files)}: no correct peer row pairs with a tilejit shape")
    varying, constant = varying_keys([p["shape"] for p in points])
    plt = pyplot()
    draw_bars(plt, table, points, varying, constant, roles, args.out + "-bars.png")
    draw_roofline(plt, table, points, varying, constant, roles, args.out + "-roofline.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
