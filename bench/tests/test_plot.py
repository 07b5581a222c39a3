"""pytest tests for bench/plot.py, on small JSON-lines files written here (no GPU).

    python3 -m pytest bench/tests -q

The rows copy the fields of real ones (bench/results/2026-11-24-2cbd935-paged_sparse-h100-*):
tilejit bench rows, our peer's rows (with its ceiling and dense rows) and the yardstick's.
"""
import importlib.util
import json
import os

import pytest

PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plot.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
META = {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-24", "commit": "2cbd935"}
BW = 3000.0                       # copy_bandwidth_gbps of the tilejit rows


def load_plot():
    spec = importlib.util.spec_from_file_location("plot", PLOT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


plot = load_plot()


def shape(D, kept):
    return {"B": 3, "Hq": 32, "Hkv": 8, "D": D, "ps": 16, "ctx": 131072, "r": 0.02, "kept": kept}


def kv_bytes(s):
    return s["B"] * s["Hkv"] * s["kept"] * s["D"] * 2 * 2


def tilejit_row(s, ms, correct=True):
    gbps = kv_bytes(s) / (ms * 1e-3) / 1e9
    return {"workload": "paged_sparse", "variant": "sparse", "impl": "tilejit", "shape": s,
            "dtype": "f16", "ms": ms, "correct": correct, "gbps": gbps,
            "floor_ms": kv_bytes(s) / (BW * 1e9) * 1e3, "copy_bandwidth_gbps": BW,
            "config": "CHUNK=768,BN=64,STAGES=3,WARPS=4,PF=0", **META}


def peer_rows():
    return [
        {"workload": "ceiling", "variant": "d2d_copy", "impl": "torch.copy_", "shape": {"bytes": 1 << 30},
         "ms": 0.715, "gbps": 3001.8, **META},
        {"workload": "paged_sparse", "variant": "ragged_check", "impl": "triton_peer",
         "shape": {**shape(128, 0), "ctx": "ragged", "kept": "ragged(0,1,..)"}, "ms": None,
         "err": 1.8e-4, "correct": True, **META},
        {"workload": "paged_sparse", "variant": "dense", "impl": "torch_sdpa_dense",
         "shape": {"B": 3, "Hq": 32, "Hkv": 8, "D": 128, "ctx": 131072}, "ms": 0.564, "err": 2.9e-4,
         "correct": True, "dtype": "f16", **META},
        {"workload": "paged_sparse", "variant": "sparse", "impl": "triton_peer", "shape": shape(128, 2621),
         "ms": 0.0275, "err": 2.7e-4, "correct": True, "dtype": "f16", "launch": "cuda_graph", **META},
        {"workload": "paged_sparse", "variant": "sparse", "impl": "triton_peer", "shape": shape(256, 2621),
         "ms": 0.0430, "err": 2.7e-4, "correct": True, "dtype": "f16", "launch": "cuda_graph", **META},
    ]


def yardstick_rows():
    # the yardstick records neither dtype nor device: f16, as report.py reads it
    return [{"workload": "paged_sparse", "variant": "sparse", "peer": "triton_splitk", "shape": shape(128, 2621),
             "ms": 0.1008, "err": 2.7e-4, "gbps": 319.6, "tflops": None, "floor_ms": 0.0106}]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def files(tmp_path):
    tj = [tilejit_row(shape(128, 2621), 0.0264), tilejit_row(shape(256, 2621), 0.0412),
          tilejit_row(shape(256, 2621), 0.0300, correct=False)]    # faster but wrong: not counted
    return {"tilejit": write(tmp_path / "r-tilejit.jsonl", tj),
            "peer": write(tmp_path / "r-peer.jsonl", peer_rows()),
            "yardstick": write(tmp_path / "r-yardstick.jsonl", yardstick_rows()),
            "prefix": str(tmp_path / "r")}


def assert_png(path):
    assert os.path.isfile(path), path
    assert os.path.getsize(path) > len(PNG_MAGIC)
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC


def error_of(argv):
    with pytest.raises(SystemExit) as e:
        plot.main(argv)
    return str(e.value.code)


def test_writes_both_pngs(files, tmp_path):
    out = str(tmp_path / "out" / "pic")
    assert plot.main(["--tilejit", files["tilejit"], "--peer", files["peer"],
                      "--peer", files["yardstick"], "--workload", "paged_sparse", "--out", out]) == 0
    assert_png(out + "-bars.png")
    assert_png(out + "-roofline.png")


def test_results_prefix_finds_the_files_and_writes_beside_them(files):
    assert plot.main(["--results", files["prefix"]]) == 0
    assert_png(files["prefix"] + "-bars.png")
    assert_png(files["prefix"] + "-roofline.png")


def test_points_are_the_reports_pairs(files):
    import report     # plot put bench/ on the path
    tables = report.build_tables(report.load_rows(files["tilejit"]),
                                 report.load_rows(files["peer"]) + report.load_rows(files["yardstick"]))
    points = plot.collect(tables[("paged_sparse", "f16")])
    assert [p["ms"] for p in points] == [0.0264, 0.0412]          # the wrong 0.0300 row is left out
    first, second = points
    assert first["peers"] == {"ours": 0.0275, "yard": 0.1008, "dense": 0.564}
    assert second["peers"] == {"ours": 0.0430}                      # no dense row has D=256
    assert first["bytes"] == pytest.approx(kv_bytes(shape(128, 2621)))
    assert first["ceiling_gbps"] == BW


def test_missing_file(files, tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    msg = error_of(["--tilejit", missing, "--peer", files["peer"], "--out", str(tmp_path / "x")])
    assert missing in msg and "no such file" in msg


def test_empty_file(files, tmp_path):
    empty = write(tmp_path / "empty.jsonl", [])
    msg = error_of(["--tilejit", files["tilejit"], "--peer", empty, "--out", str(tmp_path / "x")])
    assert empty in msg and "empty" in msg


def test_peer_rows_that_pair_with_no_tilejit_shape(files, tmp_path):
    other = [dict(r, shape=dict(r["shape"], ctx=32768)) for r in peer_rows() if r["workload"] == "paged_sparse"]
    unpaired = write(tmp_path / "other-peer.jsonl", other)
    msg = error_of(["--tilejit", files["tilejit"], "--peer", unpaired, "--out", str(tmp_path / "x")])
    assert unpaired in msg and "shape of a tilejit row" in msg and "32768" in msg


def test_tilejit_file_without_tilejit_rows(files, tmp_path):
    msg = error_of(["--tilejit", files["peer"], "--peer", files["peer"], "--out", str(tmp_path / "x")])
    assert files["peer"] in msg and "no tilejit rows of workload paged_sparse" in msg


def test_other_workload(files, tmp_path):
    msg = error_of(["--tilejit", files["tilejit"], "--peer", files["peer"], "--workload", "gemm",
                    "--out", str(tmp_path / "x")])
    assert files["tilejit"] in msg and "gemm" in msg
