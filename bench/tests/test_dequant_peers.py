"""pytest tests for the dequant_gemm peers (bench/peers/dequant_gemm_peer.py and
dequant_decode_step.py), on the CPU.

    python3 -m pytest bench/tests -q

Shape and peer-list parsing, the candidate lists, the byte counts, the check of the staged
Marlin source and the child-process runner need only Python. The rest needs torch (skipped
without it, as in CI): the GPTQ, tinygemm and Marlin formats (packing round trips, the float64
dequantization), the error measure, and CPU dry runs of both scripts (DEV swapped to "cpu": fp16
and int8 peers run, Marlin and tinygemm in their own processes, the GPU-only ones record why not)
that check the rows, including a child process that dies (a stand-in for a kernel that kills its
CUDA context). Marlin's packing is tested only when its source is staged
(bench/peers/stage_marlin.sh), the candidate superset only when a copy of the shared yardstick is
at .peers or ../shared/peers.
"""
import importlib.util
import json
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "peers")
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, PEERS)

import dequant_gemm_peer as DG  # noqa: E402  (imports without torch)
import dequant_decode_step as DS  # noqa: E402


def need_torch():
    return pytest.importorskip("torch")


@pytest.fixture
def cpu():
    """The scripts' module globals swapped for a CPU run (and back)."""
    torch = need_torch()
    saved = (DG.DEV, DG.HALF, torch.get_num_threads())
    DG.DEV, DG.HALF = "cpu", torch.float16
    torch.set_num_threads(1)         # tiny matrices: threads only add wake-up latency
    torch.manual_seed(0)
    yield torch
    DG.DEV, DG.HALF = saved[0], saved[1]
    torch.set_num_threads(saved[2])


def yardstick_dir():
    for d in (os.path.join(REPO, ".peers"), os.path.join(REPO, "..", "shared", "peers")):
        if os.path.exists(os.path.join(d, "dequant_gemm.py")):
            return d
    return None


def marlin_pkg():
    d = DG.default_marlin_dir()
    if not os.path.exists(os.path.join(d, "marlin", "__init__.py")):
        pytest.skip("Marlin not staged (bench/peers/stage_marlin.sh)")
    pytest.importorskip("numpy")
    return DG.load_marlin_package(d)


# --------------------------------------------------------------------------------------------
# Shapes and candidates (no torch)
# --------------------------------------------------------------------------------------------
def test_parse_lists_and_shapes():
    assert DG.parse_int_list("1,4,16") == (1, 4, 16)
    with pytest.raises(ValueError):
        DG.parse_int_list("1,x")
    with pytest.raises(ValueError):
        DG.parse_int_list("0")
    assert DG.parse_shapes("qkv,o") == [("qkv", 6144, 2560), ("o", 2560, 4096)]
    assert [s[0] for s in DG.parse_shapes("all")] == ["qkv", "o", "gate_up", "down", "lm_head"]
    assert DG.parse_shapes("lm_head")[0] == ("lm_head", 151936, 2560)
    assert DG.parse_shapes("256x128,qkv,256x128") == [("256x128", 256, 128), ("qkv", 6144, 2560)]
    for bad in ("nope", "12x7", "x", ""):
        with pytest.raises(ValueError):
            DG.parse_shapes(bad)


def test_parse_grid_merges_m_per_shape():
    grid = DG.parse_grid("1,4,16@all;64,256,2048@qkv,gate_up")
    assert [g[0] for g in grid] == ["qkv", "o", "gate_up", "down", "lm_head"]
    by = {g[0]: g for g in grid}
    assert by["qkv"] == ("qkv", 6144, 2560, (1, 4, 16, 64, 256, 2048))
    assert by["o"][3] == (1, 4, 16)
    assert by["gate_up"][3] == (1, 4, 16, 64, 256, 2048)
    assert DG.parse_grid(DG.QUICK_GRID) == [("qkv", 6144, 2560, (1, 16, 2048)), ("down", 2560, 9728, (1, 16, 2048))]
    for bad in ("1,4", "@qkv", "1@", ";"):
        with pytest.raises(ValueError):
            DG.parse_grid(bad)


def test_args_and_shape_keys_pair_with_the_yardstick():
    a = DG.parse_args(["--m", "1,4", "--shapes", "qkv"])
    assert a.m == "1,4" and a.group == 128 and a.marlin_dir == DG.default_marlin_dir()
    assert a.yardstick_dir == os.path.join(REPO, ".peers")
    with pytest.raises(SystemExit):
        DG.parse_args(["--shapes", "bogus"])
    with pytest.raises(SystemExit):
        DG.parse_args(["--group", "100"])
    # the yardstick's rows carry exactly {M, N, K, G}
    assert DG.shape_dict(1, 6144, 2560, 128) == {"M": 1, "N": 6144, "K": 2560, "G": 128}


def test_peer_lists_and_grid_text():
    assert DG.parse_peer_list("all") == tuple(p for _, p in DG.PEERS)
    assert DG.parse_peer_list("marlin,cublas_fp16") == ("cublas_fp16", "marlin")     # table order
    assert DG.parse_peer_list("none", allow_none=True) == ()
    for bad in ("none", "marlin,bogus", ""):
        with pytest.raises(ValueError):
            DG.parse_peer_list(bad)
    assert DG.peer_variant("tinygemm") == "int4" and DG.peer_variant("torch_naive") == "int8"
    grid = DG.parse_grid("1,4,16@all;64,256,2048@qkv,gate_up;2@256x128")
    assert DG.parse_grid(DG.grid_text(grid)) == grid
    a = DG.parse_args(["--peers", "cublas_fp16,marlin"])
    assert a.peers == "cublas_fp16,marlin" and a.isolate == "marlin,tinygemm" and not a.child
    for bad in (["--peers", "cublas"], ["--isolate", "marlin,nope"]):
        with pytest.raises(SystemExit):
            DG.parse_args(bad)


def test_marlin_source_warning(tmp_path):
    kernel = tmp_path / "marlin" / "marlin_cuda_kernel.cu"
    kernel.parent.mkdir()
    kernel.write_text('asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], %2, p;\\n");')
    assert "cache hint" in DG.marlin_source_warning(str(tmp_path))
    kernel.write_text('asm volatile("cp.async.cg.shared.global [%0], [%1], %2;\\n");')
    assert DG.marlin_source_warning(str(tmp_path)) is None
    assert DG.marlin_source_warning(str(tmp_path / "nowhere")) is None


def test_run_child_echoes_reports_and_kills(capsys):
    rc, timed_out, secs, tail = DG.run_child(
        [sys.executable, "-c", "import os; print('one'); print('RuntimeError: boom', flush=True); os.abort()"], 30, "t")
    assert rc < 0 and not timed_out and tail == ["one", "RuntimeError: boom"]
    assert "[t] one" in capsys.readouterr().out
    why = DG.child_failure("marlin", rc, timed_out, secs, tail)
    assert "signal SIGABRT" in why and why.endswith("its last error: RuntimeError: boom")
    t0 = time.time()
    rc, timed_out, secs, tail = DG.run_child([sys.executable, "-c", "import time; time.sleep(60)"], 1, "t")
    assert timed_out and time.time() - t0 < 30
    assert "killed after" in DG.child_failure("tinygemm", rc, timed_out, secs, tail)
    rc, timed_out, _, _ = DG.run_child([sys.executable, "-c", "pass"], None, "t")
    assert rc == 0 and not timed_out


def test_marlin_candidates():
    assert [tuple(c) for c in DG.marlin_candidates(1, 6144, 2560, 128)] == [(128, 128, 16), (64, 256, 16)]
    assert [tuple(c) for c in DG.marlin_candidates(64, 6144, 2560, 128)] == [(64, 256, 16)]
    assert [tuple(c) for c in DG.marlin_candidates(2048, 19456, 2560, 128)] == [(64, 256, 16), (64, 256, 32)]
    # lm_head: N = 151936 is a multiple of 128, not of 256
    assert [tuple(c) for c in DG.marlin_candidates(16, 151936, 2560, 128)] == [(128, 128, 16)]
    assert DG.marlin_candidates(64, 151936, 2560, 128) == []
    assert "256" in DG.marlin_unsupported(64, 151936, 2560, 128)
    assert "G=64" in DG.marlin_unsupported(1, 6144, 2560, 64)
    assert DG.marlin_unsupported(1, 6144, 2560, -1) is None


def test_triton_candidates_are_a_superset_of_the_yardstick():
    d = yardstick_dir()
    if d is None:
        pytest.skip("no copy of the shared yardstick at .peers or ../shared/peers")
    spec = importlib.util.spec_from_file_location("yard_dg", os.path.join(d, "dequant_gemm.py"))
    yard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(yard)          # imports without torch or triton too
    for name, (N, K) in DG.LAYERS.items():
        for M in DG.M_VALUES:
            for quick in (False, True):
                ycs = yard.gptq_candidates(M, N, K, 128, quick=quick)
                ours = DG.triton_candidates(M, N, K, 128, ycs, quick=quick)
                keys = [DG.triton_key(c) for c in ours]
                assert len(keys) == len(set(keys))
                assert {DG.triton_key(c) for c in ycs} <= set(keys), (name, M)
                assert len(ours) >= len(ycs)
                for c in ours:   # the kernel's rules: BLOCK_K divides the group, BK * SPLIT_K divides K
                    assert 128 % c["BLOCK_K"] == 0 and K % (c["BLOCK_K"] * c["SPLIT_K"]) == 0


def test_weight_bytes():
    assert DG.weight_bytes("int4", 6144, 2560, 128) == 6144 * 2560 // 2 + 20 * 6144 * 2 + 20 * 6144 // 2
    assert DG.weight_bytes("int4", 6144, 2560, 128, zeros=False) == 6144 * 2560 // 2 + 20 * 6144 * 2
    assert DG.weight_bytes("int4", 64, 256, -1, zeros=False) == 64 * 256 // 2 + 64 * 2
    assert DG.weight_bytes("int8", 10, 20, 128) == 220
    assert DG.weight_bytes("fp16", 10, 20, 128) == 400
    ceil = {"hbm_gbps": 1000.0, "bf16_tflops": 1.0}
    assert DG.floor_ms(1e9, 0, ceil) == pytest.approx(1.0)
    assert DG.floor_ms(0, 2e12, ceil) == pytest.approx(2000.0)


def test_decode_plan_and_dims():
    plan = DS.step_plan()
    assert len(plan) == 36 * 4 + 1
    assert plan[:4] == [("qkv", 6144, 2560), ("o", 2560, 4096), ("gate_up", 19456, 2560), ("down", 2560, 9728)]
    assert plan[-1] == ("lm_head", 151936, 2560)
    assert DS.parse_dims(None) is None
    d = DS.parse_dims("64x32,32x64,128x32,32x128,256x32")
    assert d["down"] == (32, 128) and DS.step_plan(2, d)[-1] == ("lm_head", 256, 32)
    with pytest.raises(ValueError):
        DS.parse_dims("64x32")
    assert set(DS.DEFAULT_BACKENDS) <= set(DS.BACKENDS)


# --------------------------------------------------------------------------------------------
# Formats and the reference (torch, CPU)
# --------------------------------------------------------------------------------------------
def test_gptq_round_trip_and_dequant(cpu):
    torch = cpu
    K, N, G = 256, 64, 128
    q = torch.randint(0, 16, (K, N), dtype=torch.int32)
    qw = DG.pack_gptq_qweight(q)
    assert qw.shape == (K // 8, N) and qw.dtype == torch.int32
    assert torch.equal(DG.unpack_gptq_qweight(qw), q)
    # nibble i of row r is k = 8r + i
    assert int(qw[0, 0]) & 0xF == int(q[0, 0]) and (int(qw[0, 0]) >> 28) & 0xF == int(q[7, 0])
    z = torch.randint(0, 16, (K // G, N), dtype=torch.int32)
    qz = DG.pack_gptq_qzeros(z)
    assert qz.shape == (K // G, N // 8) and torch.equal(DG.unpack_gptq_qzeros(qz), z)
    s = DG.random_scales(K // G, N, "cpu")
    W = DG.dequant_gptq(qw, qz, s, G)
    assert W.shape == (N, K) and W.dtype == torch.float64
    k, n = 200, 5
    assert float(W[n, k]) == (int(q[k, n]) - int(z[k // G, n])) * float(s[k // G, n])
    qw1, qz1, s1 = DG.make_gptq(N, K, -1, "cpu")      # one group
    assert qz1.shape == (1, N // 8) and s1.shape == (1, N)


def test_tinygemm_conversion_matches_gptq(cpu):
    torch = cpu
    N, K, G = 32, 256, 128
    qw, qz, s = DG.make_gptq(N, K, G, "cpu")
    W = DG.dequant_gptq(qw, qz, s, G)
    w_u8, sz = DG.gptq_to_tinygemm(qw, qz, s)
    assert w_u8.shape == (N, K // 2) and w_u8.dtype == torch.uint8 and sz.shape == (K // G, N, 2)
    assert DG.rel_err(DG.tinygemm_dequant(w_u8, sz, G), W) < 5e-3       # bf16 scales and zeros
    w_sw, sz_sw = DG.gptq_to_tinygemm(qw, qz, s, swap_nibbles=True)
    assert DG.rel_err(DG.tinygemm_dequant(w_sw, sz_sw, G, swap_nibbles=True), W) < 5e-3
    assert DG.rel_err(DG.tinygemm_dequant(w_sw, sz_sw, G), W) > 0.1


def test_rel_err(cpu):
    torch = cpu
    ref = torch.randn(4, 8, dtype=torch.float64)
    assert DG.rel_err(ref.half(), ref) < 1e-3
    assert DG.rel_err(ref, ref) == 0.0
    bad = ref.clone()
    bad[0, 0] = float("nan")
    assert DG.rel_err(bad, ref) == float("inf")
    with pytest.raises(ValueError):
        DG.rel_err(ref[:1], ref)


def test_poison_next_output(cpu):
    torch = cpu
    DG.poison_next_output((2, 3), torch.float16)   # runs on the CPU (the allocator trick is CUDA's)


@pytest.mark.parametrize("K,N,G", [(256, 256, 128), (512, 384, 128), (256, 128, -1), (384, 256, -1)])
def test_marlin_pack_round_trip(cpu, K, N, G):
    torch = cpu
    pkg = marlin_pkg()
    q = torch.randint(0, 16, (K, N), dtype=torch.int32)
    s = DG.random_scales(K // DG.group_rows(K, G), N, "cpu")
    B, sp = DG.marlin_pack(pkg, q, s, G)
    assert B.shape == (K // 16, 2 * N) and B.dtype == torch.int32 and sp.shape == s.shape
    assert not torch.equal(sp, s)           # Marlin permutes the scales
    q2, s2 = DG.marlin_unpack(pkg, B, sp, K, N, G)
    assert torch.equal(q2, q) and torch.equal(s2, s)
    W = DG.marlin_dequant(q, s, G)
    g = DG.group_rows(K, G)
    assert W.shape == (N, K) and float(W[3, K - 1]) == (int(q[K - 1, 3]) - 8) * float(s[(K - 1) // g, 3])
    # Marlin multiplies in fp16: its weights are these rounded to fp16, at most 2^-11 apart
    assert float(((W.half().double() - W).abs() / W.abs().clamp_min(1e-30)).max()) <= 2.0 ** -11


def test_marlin_unpack_of_random_bits_is_a_valid_weight(cpu):
    torch = cpu
    pkg = marlin_pkg()
    K, N = 256, 256
    B = torch.randint(-2 ** 31, 2 ** 31, (K // 16, 2 * N), dtype=torch.int32)
    s = DG.random_scales(K // 128, N, "cpu")
    q, s2 = DG.marlin_unpack(pkg, B, s, K, N, 128)
    assert int(q.min()) >= 0 and int(q.max()) <= 15
    B2, sp2 = DG.marlin_pack(pkg, q, s2, 128)
    assert torch.equal(B2, B) and torch.equal(sp2, s)    # the decode step's random bits round-trip


# --------------------------------------------------------------------------------------------
# CPU dry runs: the driver code and the rows
# --------------------------------------------------------------------------------------------
def read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_peer_dry_run_rows(cpu, tmp_path, capsys):
    out = tmp_path / "peer.jsonl"
    rc = DG.main(["--shapes", "256x256,128x512", "--m", "1,5", "--out", str(out), "--commit", "abc1234"])
    assert rc == 0
    rows = read_rows(out)
    cases = [r for r in rows if "M" in r["shape"]]
    assert len({(r["layer"], r["shape"]["M"]) for r in cases}) == 4
    by = {}
    for r in cases:
        assert r["workload"] == "dequant_gemm" and set(r["shape"]) == {"M", "N", "K", "G"}
        assert r["shape"]["G"] == 128 and r["commit"] == "abc1234" and r["dtype"] == "f16"
        by.setdefault((r["variant"], r["peer"]), []).append(r)
    for vp in (("fp16", "cublas_fp16"), ("int8", "torch_naive"), ("int8", "weight_int8pack_mm")):
        assert len(by[vp]) == 4, vp
        for r in by[vp]:
            assert r["correct"] is True and r["err"] <= 1e-2 and r["ms"] > 0 and r["reps"] == DG.FINAL_REPS
            assert r["gbps"] > 0 and r["floor_ms"] > 0
            assert vp[0] == "fp16" or r["speedup_vs_fp16"] > 0
    for vp in (("int4", "marlin"), ("int4", "triton_gptq_wide")):
        assert len(by[vp]) == 4 and all(r["ms"] is None and "CUDA" in r["error"] for r in by[vp])
    assert len(by[("int4", "tinygemm")]) == 4     # runs or says why not, depending on the torch
    table = capsys.readouterr().out
    assert "cublas_fp16 us" in table and "256x256" in table


def test_peer_dry_run_budget_skips(cpu, tmp_path):
    out = tmp_path / "peer.jsonl"
    assert DG.main(["--shapes", "128x128", "--m", "1", "--budget", "0", "--out", str(out)]) == 0
    rows = read_rows(out)
    assert {r["peer"] for r in rows} == {p for _, p in DG.PEERS}      # the isolated ones too
    assert {r.get("skipped") for r in rows} == {"time budget"}


def test_peer_subset_and_a_child_that_dies(cpu, tmp_path, monkeypatch):
    """A child process that writes one row and dies (as a kernel's illegal instruction kills its
    CUDA context): its row is kept, the cases it left get errors naming the signal and its last
    error line, and the parent's peers are untouched."""
    def dying_child(args, peer, out, grid, ceil, commit, budget_s):
        row = {"workload": "dequant_gemm", "variant": "int4", "peer": peer, "layer": "256x256",
               "shape": {"M": 1, "N": 256, "K": 256, "G": 128}, "ms": 0.5, "err": 1e-3, "correct": True}
        code = (f"import json, os; open({out!r}, 'a').write(json.dumps({row!r}) + '\\n'); "
                "print('torch.AcceleratorError: CUDA error: an illegal instruction was encountered', flush=True); "
                "os.abort()")
        return [sys.executable, "-c", code]
    monkeypatch.setattr(DG, "child_command", dying_child)
    out = tmp_path / "peer.jsonl"
    assert DG.main(["--shapes", "256x256", "--m", "1,5", "--peers", "cublas_fp16,marlin", "--out", str(out)]) == 0
    rows = read_rows(out)
    assert {r["peer"] for r in rows} == {"cublas_fp16", "marlin"}
    fp16 = {r["shape"]["M"]: r for r in rows if r["peer"] == "cublas_fp16"}
    assert all(r["correct"] for r in fp16.values()) and set(fp16) == {1, 5}
    marlin = {r["shape"]["M"]: r for r in rows if r["peer"] == "marlin"}
    assert marlin[1]["ms"] == 0.5 and marlin[1]["speedup_vs_fp16"] == pytest.approx(fp16[1]["ms"] / 0.5)
    assert marlin[5]["ms"] is None and "SIGABRT" in marlin[5]["error"] and "illegal instruction" in marlin[5]["error"]


def test_a_lost_context_only_writes_errors(cpu):
    res = DG.Results(None, echo=False)
    peers = DG.Peers(DG.parse_args([]), ("cublas_fp16", "torch_naive"))
    peers.dead = "not run: this process's CUDA context was lost earlier (an illegal instruction)"
    case = DG.Case(res, DG.CPU_CEILINGS, "qkv", 1, 6144, 2560, 128)
    DG.run_case(case, peers, None)                       # no weights needed: nothing runs
    assert [(r["peer"], r["error"]) for r in res.rows] == [("cublas_fp16", peers.dead), ("torch_naive", peers.dead)]


def test_decode_step_dry_run_and_plugin(cpu, tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import torch\n"
        "def register(register_backend):\n"
        "    def make(kind, N, K):\n"
        "        w = torch.randn(N, K, dtype=torch.float16)\n"
        "        f = lambda x: torch.nn.functional.linear(x, w)\n"
        "        f.weight64 = lambda: w.double()\n"
        "        return f\n"
        "    register_backend('plugged', make, 'fp16', 'a test backend')\n")
    out = tmp_path / "step.jsonl"
    try:
        rc = DS.main(["--layers", "2", "--dims", "64x32,32x64,128x32,32x128,256x32", "--reps", "3",
                      "--plugin", str(plugin), "--isolate", "marlin,tinygemm,plugged", "--out", str(out)])
    finally:
        DS.BACKENDS.pop("plugged", None)
    assert rc == 0
    rows = {r["peer"]: r for r in read_rows(out)}
    assert set(rows) == set(DS.DEFAULT_BACKENDS) | {"plugged"}
    for name in ("fp16", "int8_pack", "int8_naive", "plugged"):
        r = rows[name]
        assert r["workload"] == "dequant_gemm" and r["variant"] == "decode_step"
        assert r["shape"] == {"M": 1, "layers": 2, "model": "custom"}
        assert r["calls"] == 9 and r["correct"] is True and r["err"] <= 1e-2
        assert r["tokens_per_s"] == pytest.approx(1e3 / r["ms"])
    assert rows["fp16"]["weight_bytes"] == 2 * sum(n * k for _, n, k in DS.step_plan(2, DS.parse_dims(
        "64x32,32x64,128x32,32x128,256x32")))
    assert rows["marlin"]["error"] and rows["tinygemm"]["error"]
    assert "CUDA" in rows["marlin"]["error"]        # its own process said why (no GPU), it did not die


def test_decode_step_child_that_dies(cpu, tmp_path, monkeypatch):
    monkeypatch.setattr(DS, "child_command", lambda *a: [sys.executable, "-c", "import os; os.abort()"])
    out = tmp_path / "step.jsonl"
    rc = DS.main(["--layers", "1", "--dims", "64x32,32x64,128x32,32x128,256x32", "--reps", "3",
                  "--backends", "fp16,marlin", "--out", str(out)])
    assert rc == 0
    rows = {r["peer"]: r for r in read_rows(out)}
    assert rows["fp16"]["correct"] is True
    assert rows["marlin"]["ms"] is None and "SIGABRT" in rows["marlin"]["error"]
    assert DS.isolated_backends("auto", ["fp16", "marlin", "tinygemm", "int8_pack", "mine"]) == ["marlin", "tinygemm"]
    assert DS.isolated_backends("mine,marlin", ["marlin", "mine"]) == ["mine", "marlin"]
    assert DS.isolated_backends("none", ["marlin"]) == []


def test_build_step_is_importable(cpu):
    step = DS.build_step("int8_naive", layers=1, dims=DS.parse_dims("16x32,32x16,16x32,32x16,64x32"))
    outs = step()
    assert [tuple(o.shape) for o in outs] == [(1, 16), (1, 32), (1, 16), (1, 32), (1, 64)]
    assert step.check() <= 1e-2
