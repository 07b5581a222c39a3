"""The package itself: it loads libtilejit.so, says where it looked when it cannot, reports
its version, and finds the same tuning database as the CLI."""

import os
import subprocess
import sys
from pathlib import Path

import tilejit

# Where the package under test was imported from (the checkout, or an installed copy).
PYTHON_DIR = str(Path(tilejit.__file__).resolve().parents[1])


def run_python(code, **env):
    e = dict(os.environ, PYTHONPATH=PYTHON_DIR, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


def test_version_names_the_build():
    assert tilejit.version().startswith("0.1.0")
    assert tilejit.__version__ == tilejit.version()


def test_a_missing_library_is_an_import_error_that_says_where_it_looked():
    r = run_python("import tilejit", TILEJIT_LIBRARY="/nonexistent/libtilejit.so")
    assert r.returncode != 0
    assert "libtilejit.so not found (looked at /nonexistent/libtilejit.so)" in r.stderr


def test_the_database_path_is_the_clis(tmp_path):
    db = str(tmp_path / "mine.db")
    r = run_python("import tilejit; print(tilejit.default_database_path())", TILEJIT_DB=db)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == db


def test_use_database_without_a_gpu_says_so(tmp_path):
    rt = tilejit.Runtime(arch="sm_90a", cache_dir="")
    if rt.has_gpu:
        return
    try:
        rt.use_database(str(tmp_path / "t.db"))
        raise AssertionError("use_database without a GPU returned")
    except tilejit.NoGpuError as e:
        assert "libcuda" in str(e) or "GPU" in str(e) or "device" in str(e)


def test_an_amd_runtimes_database_needs_an_amd_gpu(tmp_path):
    # A runtime made for an AMD target measures and keys its winners on an AMD GPU: without one
    # (here) its database says so, not the CUDA driver's "no NVIDIA GPU".
    for arch in ("gfx90a", "gfx1030"):
        rt = tilejit.Runtime(arch=arch, cache_dir="")
        try:
            rt.use_database(str(tmp_path / "t.db"))
            raise AssertionError(f"{arch}: use_database without an AMD GPU returned")
        except tilejit.NoGpuError as e:
            assert "no AMD GPU" in str(e), str(e)


def test_module_use_database_names_a_bad_device_and_needs_a_gpu(tmp_path):
    import random
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    drawn = [rng.choice([str(rng.randrange(8)), -rng.randrange(1, 2**40), rng.random() * 8,
                         [0], b"0", rng.random() > 2]) for _ in range(20)]
    for device in ["0", -1, 1.5, True] + drawn:  # seed printed on failure below
        try:
            tilejit.use_database(str(tmp_path / "t.db"), device=device)
            raise AssertionError(f"device={device!r} was accepted")
        except tilejit.TilejitError as e:
            assert f"device={device!r} is not a CUDA device ordinal" in str(e), (seed, str(e))
    if tilejit.runtime().has_gpu:
        return
    for device in [None, 0]:  # every GPU's, or one: without a GPU, said at once
        try:
            tilejit.use_database(str(tmp_path / "t.db"), device=device)
            raise AssertionError("use_database without a GPU returned")
        except tilejit.NoGpuError:
            pass


def test_bad_runtime_options_are_named():
    for kwargs, text in [({"compile_timeout": -1}, "compile_timeout must be seconds >= 0"),
                         ({"tune_on_first_use": "yes"}, "tune_on_first_use must be True"),
                         ({"debug": 1}, "debug must be True"),
                         ({"arch": "sm_1"}, "sm_1")]:
        try:
            tilejit.Runtime(**kwargs).arch  # noqa: B018 (the arch is checked when used)
            if "arch" in kwargs:
                tilejit.Runtime(**kwargs).load("embedded:examples/softmax.tile").compile(
                    *_softmax_arrays())
            raise AssertionError(f"{kwargs} was accepted")
        except tilejit.TilejitError as e:
            assert text in str(e), (kwargs, str(e))


def _softmax_arrays():
    import numpy
    return numpy.zeros((5, 7), numpy.float32), numpy.zeros((5, 7), numpy.float32)
