"""Any .tile kernel from Python without a GPU: load, its declaration, the configuration a
launch would take, compiling (NVRTC, sm_90a), and every bad input with an error that names it."""

import numpy
import pytest

import tilejit

SOFTMAX = "embedded:examples/softmax.tile"


def arrays(*shapes, dtype=numpy.float32):
    rng = numpy.random.default_rng()
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def test_a_kernel_shows_its_declaration(cpu_runtime):
    k = cpu_runtime.load(SOFTMAX)
    assert k.name == "softmax"
    assert [p["name"] for p in k.info["params"]] == ["X", "Y"]
    assert k.info["params"][0]["dims"] == ["R", "C"]
    assert [g["name"] for g in k.info["generics"]] == ["T"]
    assert {t["name"] for t in k.info["tunables"]} >= {"BR", "BC"}
    assert repr(k) == "<tilejit.Kernel softmax(X: T[R, C], Y: T[R, C])>"


def test_compile_gives_the_generated_cuda_and_its_resources(cpu_runtime):
    k = cpu_runtime.load(SOFTMAX)
    x, y = arrays((37, 300), (37, 300))
    r = k.compile(x, y, config={"BR": 4})
    assert r["kernel"] == "softmax" and r["arch"] == "sm_90a" and r["language"] == "cuda"
    assert r["config"]["BR"] == "4" and r["config"]["T"] == "f32"
    assert "#line" in r["source"] and "softmax.tile" in r["source"]
    assert r["registers"] > 0 and r["threads"] > 0 and r["binary_bytes"] > 0
    half = k.compile(*arrays((8, 64), (8, 64), dtype=numpy.float16))
    assert half["config"]["T"] == "f16"


def test_resolve_says_where_the_configuration_comes_from(cpu_runtime):
    k = cpu_runtime.load(SOFTMAX)
    x, y = arrays((3, 5), (3, 5))
    assert k.resolve(x, y)["why"] == "defaults"
    forced = k.resolve(x, y, config={"BC": 512})
    assert forced["config"]["BC"] == "512"


def test_a_tile_file_from_disk_and_its_errors(cpu_runtime, tmp_path):
    good = tmp_path / "scale.tile"
    good.write_text("kernel scale(X: f32[N], Y: f32[N], s: f32) grid (cdiv(N, 128)) {\n"
                    "  let i = program_id(0) * 128;\n"
                    "  store(Y[i : i + 128], load(X[i : i + 128]) * s);\n}\n")
    k = cpu_runtime.load(good)
    x, y = arrays((1000,), (1000,))
    assert k.compile(x, y, 2.5)["kernel"] == "scale"
    bad = tmp_path / "bad.tile"
    bad.write_text("kernel k(X: f32[N]) grid (1) {\n  let a = ;\n}\n")
    with pytest.raises(tilejit.TilejitError, match=r"bad.tile:2:\d+: error"):
        cpu_runtime.load(bad)
    with pytest.raises(tilejit.TilejitError, match="nope.tile"):
        cpu_runtime.load(tmp_path / "nope.tile")
    with pytest.raises(tilejit.TilejitError, match="directory"):
        cpu_runtime.load(tmp_path)


def test_bad_arguments_are_named(cpu_runtime, tmp_path):
    k = cpu_runtime.load(SOFTMAX)
    x, y = arrays((3, 5), (3, 5))
    cases = [
        ((x,), {}, r"kernel 'softmax' takes 2 arguments \(X, Y\), got 1"),
        ((x, "y"), {}, "argument 'Y' is a str, not a tensor"),
        ((x, y.astype(numpy.complex64)), {}, "element type <c8 is not supported"),
        ((x, y[:, :4]), {}, "Y"),  # shapes disagree: the runtime names the tensor
        ((x, y), {"config": {"BR": 3}}, "BR"),  # not one of BR's choices
        ((x, y), {"config": {"ZZZ": 1}}, "ZZZ"),
        ((x, y), {"config": {"B;R": 1}}, "is not a name and a value"),
        ((x, y), {"config": [("BR", 2)]}, "config must be a dict"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(tilejit.TilejitError, match=message):
            k.resolve(*args, **kwargs)


def test_scalars_are_checked_against_their_dsl_type(cpu_runtime, tmp_path):
    f = tmp_path / "add.tile"
    f.write_text("kernel add(X: i32[N], n: i32) grid (cdiv(N, 128)) {\n"
                 "  let i = program_id(0) * 128;\n"
                 "  store(X[i : i + 128], load(X[i : i + 128]) + n);\n}\n")
    k = cpu_runtime.load(f)
    (x,) = arrays((10,), dtype=numpy.int32)
    for value, message in [("3", "must be a number"), (2.5, "must be an integer"),
                           (1 << 40, "does not fit in i32"), (True, "must be a number")]:
        with pytest.raises(tilejit.TilejitError, match=message):
            k.compile(x, value)
    assert k.compile(x, 7)["kernel"] == "add"


def test_a_launch_without_a_gpu_says_so(cpu_runtime):
    if cpu_runtime.has_gpu:
        pytest.skip("this machine has a GPU")
    k = cpu_runtime.load(SOFTMAX)
    with pytest.raises(tilejit.NoGpuError, match="libcuda"):
        k(*arrays((3, 5), (3, 5)))
    with pytest.raises(tilejit.NoGpuError):
        k.tune(*arrays((3, 5), (3, 5)))
    for bad in [{"trials": 0}, {"seconds": -1}, {"repeats": 0}, {"trials": 2.5}]:
        with pytest.raises(tilejit.TilejitError, match="tune budget"):
            k.tune(*arrays((3, 5), (3, 5)), **bad)
