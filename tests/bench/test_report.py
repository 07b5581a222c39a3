#!/usr/bin/env python3
"""CPU tests for bench/report.py and the paged_sparse peer script (standard library only).

    python3 tests/bench/test_report.py

report.py runs on the fixtures in bench/fixtures (a tilejit sweep and a run of the shared
yardstick) and on rows made up here; its pairing, speed-ups, geometric means and README
replacement are checked against numbers computed independently from the same JSON. The peer
script is only compiled and imported (no torch needed): its shape grid must be WORKLOADS.md's.
Ends with the line 'N passed, M failed'; the exit status is 1 if any test failed.
"""
import importlib.util
import json
import math
import os
import py_compile
import re
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REPORT = os.path.join(ROOT, "bench", "report.py")
PEER = os.path.join(ROOT, "bench", "peers", "paged_sparse_peer.py")
FIX_TJ = os.path.join(ROOT, "bench", "fixtures", "run_a_tilejit.jsonl")
FIX_PEERS = os.path.join(ROOT, "bench", "fixtures", "run_a_peers.jsonl")
START, END = "<!-- bench:paged_sparse:start -->", "<!-- bench:paged_sparse:end -->"


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def skey(shape):
    return tuple(sorted((k, float(v) if isinstance(v, (int, float)) else v) for k, v in shape.items()))


def label(shape):
    return " ".join(f"{k}={shape[k]}" for k in ("D", "ps", "ctx", "r", "kept"))


def run_report(*args):
    p = subprocess.run([sys.executable, REPORT] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def table_rows(md):
    """{shape label: [cells]} of the markdown table rows."""
    out = {}
    for line in md.splitlines():
        if line.startswith("| D="):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out[cells[0]] = cells
    return out


COL = {"tj": 1, "cfg": 2, "ours": 3, "yard": 4, "vs_ours": 5, "vs_yard": 6, "gbps": 7, "floor": 8,
       "pct": 9, "dense": 10, "vs_dense": 11}


def expected_from_fixtures(tj_rows, peer_rows):
    """Independent pairing: {shape key: (shape, tilejit ms, yardstick ms, dense ms)}."""
    tj = {}
    for r in tj_rows:
        if r.get("workload") == "paged_sparse" and r.get("variant") == "sparse" and r.get("correct") is True:
            k = skey(r["shape"])
            if k not in tj or r["ms"] < tj[k][1]:
                tj[k] = (r["shape"], r["ms"], r)
    yard = {skey(r["shape"]): r["ms"] for r in peer_rows
            if r.get("peer") == "triton_splitk" and r.get("variant") == "sparse" and r.get("ms") is not None}
    dense = {(r["shape"]["D"], r["shape"]["ctx"]): r["ms"] for r in peer_rows
             if r.get("peer") == "sdpa_dense" and r.get("variant") == "dense"}
    return {k: (v[0], v[1], yard.get(k), dense.get((v[0]["D"], v[0]["ctx"])), v[2]) for k, v in tj.items()}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# --------------------------------------------------------------------------------------------
def test_scripts_compile():
    for path in (REPORT, PEER):
        py_compile.compile(path, cfile=os.path.join(tempfile.mkdtemp(), "x.pyc"), doraise=True)


def test_peer_help_without_gpu():
    p = subprocess.run([sys.executable, PEER, "--help"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for flag in ("--out", "--quick", "--budget", "--dtype"):
        assert flag in p.stdout, flag


def _import_peer():
    spec = importlib.util.spec_from_file_location("paged_sparse_peer", PEER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_peer_shapes_match_workloads_and_fixture():
    m = _import_peer()
    grid = m.shape_grid(False)
    assert len(grid) == 24 and len(set(grid)) == 24, grid
    assert {g[0] for g in grid} == {128, 256} and {g[1] for g in grid} == {16, 64}
    assert {g[2] for g in grid} == {32768, 131072} and {g[3] for g in grid} == {0.02, 0.04, 0.05}
    # the peer's shape objects are exactly the tilejit fixture's (so rows pair by shape)
    ours = {skey(m.shape_dict(*g)) for g in grid}
    theirs = {skey(r["shape"]) for r in load(FIX_TJ)}
    assert ours == theirs, ours ^ theirs
    quick = m.shape_grid(True)
    assert len(quick) == 5 and set(quick) <= set(grid)
    # run order groups shapes by (ctx, D): each dense context is built once
    keys = [(g[2], g[0]) for g in grid]
    assert all(keys.index(k) == i or keys[i - 1] == k for i, k in enumerate(keys))


def test_peer_cases_pick_shapes_of_the_grid():
    m = _import_peer()
    assert m.parse_case("D128/ps64/ctx32768/r0.02") == (128, 64, 32768, 0.02)
    picked = m.shape_grid(False, ["D256/ps16/ctx131072/r0.05", "D128/ps64/ctx32768/r0.02"])
    assert sorted(picked) == [(128, 64, 32768, 0.02), (256, 16, 131072, 0.05)]
    for bad in ("D128/ps64/ctx32768", "x128/ps64/ctx32768/r0.02", "D96/ps64/ctx32768/r0.02"):
        try:
            m.shape_grid(False, [bad])
        except ValueError as ex:
            assert bad in str(ex)
        else:
            raise AssertionError(f"{bad} accepted")


def test_peer_search_space():
    m = _import_peer()
    for D in (128, 256):
        vs = m.kernel_variants(D)
        assert 10 <= len(vs) <= 16 and len(set(vs)) == len(vs), (D, len(vs))
        assert all(v.block_n >= 16 for v in vs)            # tl.dot needs 16
        if D == 256:
            assert all(v.block_n <= 64 for v in vs)
        assert len(m.kernel_variants(D, quick=True)) <= 6
    for bn in (16, 32, 64, 128):
        for kept in (1, 33, 655, 1311, 2621, 6554, 20000):
            sizes = m.split_sizes(bn, kept)
            assert sizes, (bn, kept)
            for c in sizes:
                assert c % bn == 0 and c >= bn, (bn, kept, c)
                assert -(-kept // c) <= m.MAX_SPLITS, (bn, kept, c)
            assert sizes == sorted(set(sizes))
            assert sum(1 for c in sizes if c >= kept) <= 1      # no two sizes that both cover it all


def test_report_pairs_fixture_rows():
    rc, out, err = run_report("--tilejit", FIX_TJ, "--peers", FIX_PEERS)
    assert rc == 0, err
    rows = table_rows(out)
    exp = expected_from_fixtures(load(FIX_TJ), load(FIX_PEERS))
    assert len(rows) == 24 == len(exp), (len(rows), len(exp))
    for shape, tj_ms, yard_ms, dense_ms, tj_row in exp.values():
        cells = rows[label(shape)]
        assert cells[COL["tj"]] == f"{tj_ms * 1e3:.1f}", (cells, tj_ms)
        assert cells[COL["cfg"]] == tj_row["config"], cells
        assert cells[COL["ours"]] == "-", cells                 # the fixtures have no rows of ours
        assert cells[COL["vs_ours"]] == "-", cells
        assert cells[COL["yard"]] == f"{yard_ms * 1e3:.1f}", (cells, yard_ms)
        assert cells[COL["vs_yard"]] == f"{yard_ms / tj_ms:.2f}x", cells
        assert cells[COL["dense"]] == f"{dense_ms:.3f}", cells
        assert cells[COL["vs_dense"]] == f"{dense_ms / tj_ms:.2f}x", cells
        assert cells[COL["floor"]] == f"{tj_row['floor_ms'] * 1e3:.1f}", cells
        assert cells[COL["pct"]] == f"{100 * tj_row['floor_ms'] / tj_ms:.0f}%", cells
    assert "ragged" not in out                                  # check rows are not table rows


def test_report_summary_geomean():
    rc, out, err = run_report("--tilejit", FIX_TJ, "--peers", FIX_PEERS)
    assert rc == 0, err
    exp = list(expected_from_fixtures(load(FIX_TJ), load(FIX_PEERS)).values())
    yard = [y / t for _, t, y, _, _ in exp]
    dense = [d / t for _, t, _, d, _ in exp]
    line = next(l for l in out.splitlines() if "vs yardstick Triton" in l)
    m = re.search(r"speed-up ([0-9.]+)x over (\d+) shapes; min ([0-9.]+)x .* faster on (\d+)/(\d+)", line)
    assert m, line
    assert m.group(1) == f"{geomean(yard):.2f}" and m.group(2) == "24", line
    assert m.group(3) == f"{min(yard):.2f}", line
    assert int(m.group(4)) == sum(x > 1 for x in yard) and m.group(5) == "24", line
    line = next(l for l in out.splitlines() if "vs dense attention" in l)
    assert f"speed-up {geomean(dense):.2f}x over 24 shapes" in line, line
    assert "our Triton peer (triton_peer): no paired shapes" in out
    big = [100 * r["floor_ms"] / t for _, t, _, _, r in exp if r["floor_ms"] > 0.020]
    line = next(l for l in out.splitlines() if "% of the HBM floor" in l)
    assert f"on the {len(big)} shapes" in line and f"min {min(big):.0f}%" in line, line
    assert "NVIDIA H200" in out and "287080c" in out and "2026-11-22" in out


def test_report_uses_fastest_correct_and_our_rows():
    """Our peer's rows fill their column; incorrect or failed rows never count, even when faster."""
    tj = load(FIX_TJ)
    peers = load(FIX_PEERS)
    exp = expected_from_fixtures(tj, peers)
    shape0 = next(iter(exp.values()))[0]
    extra_tj = dict(tj[0], shape=shape0, ms=1e-6, correct=False, config="WRONG")
    ours = []
    for shape, tj_ms, _, _, _ in exp.values():
        ours.append({"workload": "paged_sparse", "variant": "sparse", "impl": "triton_peer", "shape": shape,
                     "dtype": "f16", "ms": tj_ms * 2.0, "ms_direct": tj_ms * 3.0, "launch": "cuda_graph", "err": 3e-4, "correct": True,
                     "device": "NVIDIA H200", "date": "2026-11-22"})
    ours.append(dict(ours[0], ms=1e-6, err="nan"))                 # NaN error: not correct
    ours.append(dict(ours[1], ms=1e-6, err=0.5))                   # too large an error
    ours.append(dict(ours[2], ms=None, error="CompilationError"))  # a failed row
    with tempfile.TemporaryDirectory() as d:
        tj_path, ours_path = os.path.join(d, "tj.jsonl"), os.path.join(d, "ours.jsonl")
        with open(tj_path, "w") as f:
            for r in tj + [extra_tj]:
                f.write(json.dumps(dict(r, ms_graph=r["ms"] * 0.5)) + "\n")
        with open(ours_path, "w") as f:
            for r in ours:
                f.write(json.dumps(r) + "\n")
        rc, out, err = run_report("--tilejit", tj_path, "--peers", FIX_PEERS, ours_path)
    assert rc == 0, err
    rows = table_rows(out)
    assert "WRONG" not in out
    for shape, tj_ms, _, _, _ in exp.values():
        cells = rows[label(shape)]
        assert cells[COL["ours"]] == f"{tj_ms * 2e3:.1f}", cells
        assert cells[COL["vs_ours"]] == "2.00x", cells
    assert "tilejit vs our Triton peer (triton_peer): geometric-mean speed-up 2.00x over 24 shapes" in out
    assert "faster on 24/24" in out
    # both sides replayed from a CUDA graph: our peer's ms (2 t) over ours (0.5 t)
    line = next(l for l in out.splitlines() if "both replayed from a CUDA graph" in l)
    assert "speed-up 4.00x over 24 shapes; min 4.00x" in line and "faster on 24/24" in line, line
    # our peer against the yardstick, as timed and launched the yardstick's way (ms_direct)
    for factor, how in ((2.0, "as timed in its row"), (3.0, "the yardstick's way")):
        ratios = [y / (t * factor) for _, t, y, _, _ in exp.values()]
        line = next(l for l in out.splitlines() if "our Triton peer (" in l and how in l)
        assert f"speed-up {geomean(ratios):.2f}x over 24 shapes; min {min(ratios):.2f}x" in line, line
        assert f"at least as fast on {sum(x >= 1 for x in ratios)}/24" in line, line


def test_report_dtype_and_shape_normalisation():
    """bf16 rows get their own table; numbers pair whatever their JSON spelling (16 vs 16.0)."""
    base = {"workload": "paged_sparse", "variant": "sparse", "correct": True, "floor_ms": 0.01,
            "shape": {"B": 3, "Hq": 32, "Hkv": 8, "D": 128, "ps": 16, "ctx": 32768, "r": 0.02, "kept": 655}}
    rows_tj = [dict(base, impl="tilejit", dtype="f16", ms=0.020, config="A"),
               dict(base, impl="tilejit", dtype="bf16", ms=0.030, config="B")]
    peer = dict(base, impl="triton_peer", ms=0.040, err=1e-4, dtype="float16",
                shape=dict(base["shape"], ps=16.0, r=0.0200000000001))
    yard = {"workload": "paged_sparse", "variant": "sparse", "peer": "triton_splitk", "ms": 0.060, "err": 1e-4,
            "shape": dict(base["shape"])}                          # no dtype: f16
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")
        with open(a, "w") as f:
            f.write("\n".join(json.dumps(r) for r in rows_tj) + "\n")
        with open(b, "w") as f:
            f.write(json.dumps(peer) + "\n" + json.dumps(yard) + "\n" + "not json\n")
        rc, out, err = run_report("--tilejit", a, "--peers", b)
    assert rc == 0, err
    assert "### paged_sparse (f16)" in out and "### paged_sparse (bf16)" in out
    f16, bf16 = out.split("### paged_sparse (bf16)")
    cells = list(table_rows(f16).values())[0]
    assert cells[COL["ours"]] == "40.0" and cells[COL["yard"]] == "60.0" and cells[COL["vs_yard"]] == "3.00x", cells
    cells = list(table_rows(bf16).values())[0]
    assert cells[COL["tj"]] == "30.0" and cells[COL["ours"]] == "-" and cells[COL["yard"]] == "-", cells
    assert "unparsable" in err


def test_report_readme_replacement():
    with tempfile.TemporaryDirectory() as d:
        readme, md = os.path.join(d, "README.md"), os.path.join(d, "out.md")
        before, after = "# Title\n\nIntro text.\n\n", "\n\n## Later section\nkept as is\n"
        with open(readme, "w") as f:
            f.write(before + START + "\nold table\n" + END + after)
        rc, out, err = run_report("--tilejit", FIX_TJ, "--peers", FIX_PEERS, "--markdown", md, "--readme", readme)
        assert rc == 0, err
        with open(readme) as f:
            text = f.read()
        with open(md) as f:
            table = f.read()
        assert table == out
        assert text.startswith(before + START + "\n") and text.endswith(END + after), text[:200]
        inner = text[len(before + START):text.index(END)]
        assert inner.strip() == table.strip() and "old table" not in text
        # a second run gives the same file
        rc, _, err = run_report("--tilejit", FIX_TJ, "--peers", FIX_PEERS, "--readme", readme)
        assert rc == 0, err
        with open(readme) as f:
            assert f.read() == text
        # without the markers the file is left alone, and the report says so
        plain = os.path.join(d, "PLAIN.md")
        with open(plain, "w") as f:
            f.write("# nothing to replace\n" + END + "\n" + START + "\n")   # out of order: not markers
        rc, _, err = run_report("--tilejit", FIX_TJ, "--peers", FIX_PEERS, "--readme", plain)
        assert rc == 0, err
        with open(plain) as f:
            assert f.read() == "# nothing to replace\n" + END + "\n" + START + "\n"
        assert "not found" in err, err


def dequant_rows():
    """tilejit and peer rows of two dequant_gemm shapes: qkv at M=1 (int4 3.5x fp16 and ahead of
    Marlin, int8 1.5x) and gate_up at M=16 (int4 2.0x); a wrong, faster int4 row that must not count."""
    def tj(variant, M, N, ms, correct=True, layer="qkv"):
        return {"workload": "dequant_gemm", "impl": "tilejit", "variant": variant, "dtype": "f16",
                "shape": {"M": M, "N": N, "K": 2560, "G": 128}, "problem": f"{variant}/M{M}/{layer}",
                "ms": ms, "correct": correct, "floor_ms": 0.003, "config": "linear:BN=64"}

    def peer(variant, name, M, N, ms, layer="qkv"):
        return {"workload": "dequant_gemm", "variant": variant, "peer": name, "dtype": "float16",
                "shape": {"M": M, "N": N, "K": 2560, "G": 128}, "layer": layer, "ms": ms}
    tjr = [tj("int4", 1, 6144, 0.006), tj("int4", 1, 6144, 0.001, correct=False), tj("int8", 1, 6144, 0.014),
           tj("int4", 16, 19456, 0.025, layer="gate_up")]
    peers = [peer("fp16", "cublas_fp16", 1, 6144, 0.021), peer("int4", "marlin", 1, 6144, 0.0066),
             peer("int4", "tinygemm", 1, 6144, 0.012), peer("fp16", "cublas_fp16", 16, 19456, 0.050, "gate_up"),
             peer("int4", "marlin", 16, 19456, 0.030, "gate_up"),
             {"workload": "paged_sparse", "peer": "cublas_fp16", "shape": {"M": 1}, "ms": 1.0}]
    return tjr, peers


def test_report_dequant_pairs_variants_and_checks_targets():
    tjr, peers = dequant_rows()
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "tj.jsonl"), os.path.join(d, "peers.jsonl")
        for path, rows in ((a, tjr), (b, peers)):
            with open(path, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))
        rc, out, err = run_report("--tilejit", a, "--peers", b)
    assert rc == 0, err
    assert "### dequant_gemm (f16)" in out, out
    rows = {}
    for line in out.splitlines():
        if line.startswith("| qkv") or line.startswith("| gate_up"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[(cells[0], cells[1])] = cells
    qkv, gu = rows[("qkv", "1")], rows[("gate_up", "16")]
    assert qkv[3:14] == ["21.0", "6.0", "3.50x", "6.6", "1.10x", "12.0", "2.00x", "-", "14.0", "1.50x", "-"], qkv
    assert qkv[14] == "50%", qkv                      # floor 3 us of 6 us
    assert gu[4:6] == ["25.0", "2.00x"], gu
    assert "int4 vs fp16 cuBLAS at M=1: min 3.50x (qkv)" in out and "target 3.00x met" in out, out
    assert "int4 vs fp16 cuBLAS at M=16: min 2.00x (gate_up)" in out and "target 2.50x NOT met" in out, out
    assert "int4 vs Marlin at M=1: min 1.10x" in out, out
    assert "int8 vs fp16 cuBLAS at M=1: min 1.50x (qkv)" in out and "target 1.80x NOT met" in out, out
    assert "paged_sparse" not in out                     # a stray row of another workload is no table


def test_report_attention_pairs_forward_and_backward_with_sdpa():
    """A tilejit attention row (the forward step 2.0 ms, the whole sequence 6.0 ms) beside the
    yardstick's SDPA rows: FA2 2.4 / 7.2 ms, cuDNN 1.6 / 5.0 ms, efficient 3.0 / 9.0 ms."""
    shape = {"B": 4, "H": 16, "N": 8192, "D": 128, "causal": False}
    tj = [{"workload": "attention", "impl": "tilejit", "variant": "fwd_bwd", "dtype": "bf16",
           "shape": shape, "problem": "B4/H16/N8192/D128", "ms": 6.0, "correct": True,
           "config": "forward:BM=128", "steps": [{"step": "forward", "ms": 2.0},
                                                 {"step": "backward", "ms": 3.5}]}]
    peers = []
    for peer, f, fb in (("sdpa_flash", 2.4, 7.2), ("sdpa_cudnn", 1.6, 5.0), ("sdpa_efficient", 3.0, 9.0)):
        for variant, ms in (("dense_fwd", f), ("dense_fwd_bwd", fb)):
            peers.append({"workload": "attention", "variant": variant, "peer": peer,
                          "shape": dict(shape, dtype="bfloat16"), "ms": ms, "err": 1e-3})
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "tj.jsonl"), os.path.join(d, "peers.jsonl")
        for path, rows in ((a, tj), (b, peers)):
            with open(path, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))
        rc, out, err = run_report("--tilejit", a, "--peers", b)
    assert rc == 0, err
    assert "### attention (bf16)" in out, out
    line = [x for x in out.splitlines() if x.startswith("| B=4 H=16 N=8192 D=128")]
    assert len(line) == 1, out
    cells = [c.strip() for c in line[0].strip().strip("|").split("|")]
    assert cells[1:13] == ["2.000", "2.400", "1.20x", "1.600", "0.80x", "6.000", "7.200", "1.20x",
                           "5.000", "0.83x", "5.000 (sdpa_cudnn)", "0.83x"], cells
    assert "forward vs FlashAttention-2: min 1.20x" in out and "target 1.00x met" in out, out


def test_report_attention_pairs_block_sparse_rows_with_flex():
    """tilejit block-sparse rows (density 0.09375 and 0.25) beside the yardstick's compiled
    flex_attention rows (density rounded to 4 decimals, a dtype in the shape), in their own
    table: 10% misses its 1.5x target, 25% meets its 1.2x."""
    base = {"B": 4, "H": 16, "N": 8192, "D": 128}
    tj, peers = [], []
    for density, t_f, t_fb, fx_f, fx_fb in ((0.09375, 1.0, 3.0, 0.6, 2.2), (0.25, 1.0, 4.0, 1.4, 5.0)):
        tj.append({"workload": "attention", "impl": "tilejit", "variant": "fwd_bwd", "dtype": "bf16",
                   "shape": dict(base, block=128, density=density), "ms": t_fb, "correct": True,
                   "config": "forward:BM=128", "steps": [{"step": "forward", "ms": t_f}]})
        for variant, ms in (("blocksparse_fwd", fx_f), ("blocksparse_fwd_bwd", fx_fb)):
            peers.append({"workload": "attention", "variant": variant, "peer": "flex_compiled",
                          "shape": dict(base, dtype="bfloat16", block=128, density=round(density, 4)),
                          "ms": ms, "err": 2e-3})
    # flex's 100% row is dense attention: no sparse table row of its own
    peers.append({"workload": "attention", "variant": "blocksparse_fwd", "peer": "flex_compiled",
                  "shape": dict(base, dtype="bfloat16", block=128, density=1.0), "ms": 5.0})
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "tj.jsonl"), os.path.join(d, "peers.jsonl")
        for path, rows in ((a, tj), (b, peers)):
            with open(path, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))
        rc, out, err = run_report("--tilejit", a, "--peers", b)
    assert rc == 0, err
    assert "### attention block-sparse (bf16)" in out, out
    rows = [x for x in out.splitlines() if x.startswith("| B=4 H=16 N=8192 D=128")]
    assert len(rows) == 2, out
    cells = [c.strip() for c in rows[0].strip().strip("|").split("|")]
    assert cells[1:8] == ["0.094", "1.000", "0.600", "0.60x", "3.000", "2.200", "0.73x"], cells
    cells = [c.strip() for c in rows[1].strip().strip("|").split("|")]
    assert cells[1:8] == ["0.250", "1.000", "1.400", "1.40x", "4.000", "5.000", "1.25x"], cells
    assert "- forward: min 0.60x (B=4 H=16 N=8192 D=128 at 0.094) over 2 shape(s); 1 target(s) NOT met" in out, out


def test_report_missing_file():
    rc, _, err = run_report("--tilejit", os.path.join(tempfile.gettempdir(), "no_such_file.jsonl"))
    assert rc == 2 and "no such file" in err, (rc, err)


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
        except Exception:
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
