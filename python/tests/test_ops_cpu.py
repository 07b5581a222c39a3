"""tilejit.ops.paged_sparse_decode's checks, without a GPU (host arrays: every check but the
device one comes first, so each bad tensor is named here as it would be on the GPU)."""

import numpy
import pytest

import tilejit

B, HQ, HKV, D, PS, PAGES, MAXP, MAXK = 3, 28, 4, 96, 16, 11, 5, 9


def inputs(dtype=numpy.float16):
    rng = numpy.random.default_rng()
    return dict(
        q=rng.standard_normal((B, HQ, D)).astype(dtype),
        k_cache=rng.standard_normal((PAGES, PS, HKV, D)).astype(dtype),
        v_cache=rng.standard_normal((PAGES, PS, HKV, D)).astype(dtype),
        block_table=rng.integers(0, PAGES, (B, MAXP), dtype=numpy.int32),
        seq_lens=rng.integers(1, MAXP * PS, (B,), dtype=numpy.int32),
        kept_idx=rng.integers(0, 10, (B, HKV, MAXK), dtype=numpy.int32),
        kept_len=rng.integers(0, MAXK, (B, HKV), dtype=numpy.int32))


def check(cpu_runtime, **changes):
    a = inputs()
    extra = {k: changes.pop(k) for k in ("out", "lse", "scale", "config") if k in changes}
    a.update(changes)
    return tilejit.ops.paged_sparse_decode(*a.values(), runtime=cpu_runtime, check_only=True,
                                           **extra)


def test_good_shapes_pass_every_check_but_the_device(cpu_runtime):
    # Group size 7, head dim 96: not the grid's shapes, and fine.
    with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
        check(cpu_runtime)


@pytest.mark.parametrize("change, message", [
    (lambda a: {"q": a["q"].astype(numpy.float32)}, r"tensor 'q' \(f32\[3, 28, 96\] cpu\) must be f16 or bf16"),
    (lambda a: {"q": a["q"][0]}, r"tensor 'q' .* must have 3 dimensions: \[B, Hq, D\]"),
    (lambda a: {"k_cache": a["k_cache"].astype(numpy.float32)}, "tensor 'k_cache' .* must be f16"),
    (lambda a: {"v_cache": a["v_cache"][:, :, :2]}, "tensor 'v_cache' .* must have k_cache's shape"),
    (lambda a: {"q": a["q"][:, :27]}, "Hq = 27 heads and k_cache Hkv = 4"),
    (lambda a: {"q": numpy.zeros((B, HQ, 80), numpy.float16)}, "head dim D = 80 is not one of"),
    (lambda a: {"k_cache": numpy.zeros((PAGES, 12, HKV, D), numpy.float16),
                "v_cache": numpy.zeros((PAGES, 12, HKV, D), numpy.float16)}, "page size 12"),
    (lambda a: {"block_table": a["block_table"].astype(numpy.int64)}, "tensor 'block_table' .* must be i32"),
    (lambda a: {"seq_lens": a["seq_lens"][:2]}, "tensor 'seq_lens' .* has 2 in dimension 0 but q's batch B = 3"),
    (lambda a: {"kept_idx": a["kept_idx"][:, :3]}, "tensor 'kept_idx' .* has 3 in dimension 1 but k_cache's kv heads Hkv = 4"),
    (lambda a: {"kept_len": a["kept_len"][None]}, "tensor 'kept_len' .* must have 2 dimensions"),
    (lambda a: {"out": numpy.zeros((B, HQ, D), numpy.float32)}, "tensor 'o' .* must be f16"),
    (lambda a: {"lse": numpy.zeros((B, HKV), numpy.float32)}, "tensor 'lse' .* has 4 in dimension 1 but q's heads Hq = 28"),
    (lambda a: {"q": numpy.zeros((B, HQ, 2 * D), numpy.float16)[:, :, ::2]}, "tensor 'q' .* must have stride 1 in its last dimension"),
    (lambda a: {"scale": float("nan")}, "scale = nan is not a finite number"),
    (lambda a: {"q": [1, 2, 3]}, "argument 'q' is a list, not a tensor"),
    (lambda a: {"config": {"CHUNK": 7}}, None),  # checked at launch, with the kernel
])
def test_each_bad_tensor_is_named(cpu_runtime, change, message):
    if message is None:
        pytest.skip("forced tunables are checked against the kernel at launch")
    with pytest.raises(tilejit.TilejitError, match=message):
        check(cpu_runtime, **change(inputs()))


def test_bf16_cannot_come_from_numpy_but_f16_and_outputs_given_can(cpu_runtime):
    a = inputs()
    out = numpy.empty_like(a["q"])
    lse = numpy.empty((B, HQ), numpy.float32)
    with pytest.raises(tilejit.TilejitError, match="host memory"):
        tilejit.ops.paged_sparse_decode(*a.values(), out=out, lse=lse, runtime=cpu_runtime,
                                        check_only=True)
