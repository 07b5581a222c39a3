"""tilejit.ops.attention_forward / attention_backward / attention checks, without a GPU (host
arrays: every check but the device one comes first, so each bad tensor is named here as it
would be on the GPU). The checks are the C++ ops' (<tilejit/ops.h>)."""

import numpy
import pytest

import tilejit

B, HQ, HKV, N, D = 2, 8, 2, 37, 40


def qkv(dtype=numpy.float16, hq=HQ, hkv=HKV, n=N, d=D):
    rng = numpy.random.default_rng()
    return dict(q=rng.random((B, hq, n, d)).astype(dtype),
                k=rng.random((B, hkv, n, d)).astype(dtype),
                v=rng.random((B, hkv, n, d)).astype(dtype))


def forward(cpu_runtime, **changes):
    a = qkv()
    options = {key: changes.pop(key) for key in ("causal", "scale", "exact", "out", "lse",
                                                 "block_mask") if key in changes}
    a.update(changes)
    return tilejit.ops.attention_forward(a["q"], a["k"], a["v"], runtime=cpu_runtime,
                                         check_only=True, **options)


def backward(cpu_runtime, **changes):
    a = qkv()
    o = a["q"].copy()
    lse = numpy.zeros((B, HQ, N), numpy.float32)
    t = dict(q=a["q"], k=a["k"], v=a["v"], o=o, lse=lse, dout=o.copy())
    options = {key: changes.pop(key) for key in ("causal", "scale", "exact", "dq", "dk", "dv",
                                                 "block_mask") if key in changes}
    t.update(changes)
    return tilejit.ops.attention_backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["dout"],
                                          runtime=cpu_runtime, check_only=True, **options)


@pytest.mark.parametrize("dtype", [numpy.float16, numpy.float32])
def test_good_tensors_pass_every_check_but_the_device(cpu_runtime, dtype):
    a = qkv(dtype)
    with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
        tilejit.ops.attention_forward(a["q"], a["k"], a["v"], causal=True, runtime=cpu_runtime,
                                      check_only=True)
    with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
        backward(cpu_runtime)


@pytest.mark.parametrize("change, message", [
    (lambda a: {"k": numpy.zeros((B, 3, N, D), numpy.float16), "v": numpy.zeros((B, 3, N, D), numpy.float16)}, r"attention_forward: tensor 'k' \(f16\[2, 3, 37, 40\] cpu\) has 3 heads, which do not divide q's 8 \(GQA: Hq must be a multiple of Hkv\)"),
    (lambda a: {"k": a["k"][..., :32]}, r"tensor 'k' .* has 32 in dimension 3 but q's head dim D = 40"),
    (lambda a: {"v": a["v"][:, :, :30]}, r"tensor 'v' .* has 30 in dimension 2 but k's = 37"),
    (lambda a: {"k": a["k"][:1]}, r"tensor 'k' .* has 1 in dimension 0 but q's batch B = 2"),
    (lambda a: {"q": a["q"][..., :36], "k": a["k"][..., :36], "v": a["v"][..., :36]}, r"tensor 'q' .* head dim D = 36 is not a multiple of 8 from 8 to 256"),
    (lambda a: {"q": a["q"][0]}, r"tensor 'q' .* must have 4 dimensions: \[B, Hq, N, D\]"),
    (lambda a: {"q": a["q"].astype(numpy.int32)}, r"tensor 'q' .* must be f16 or bf16 or f32"),
    (lambda a: {"v": a["v"].astype(numpy.float32)}, r"tensor 'v' .* must be f16"),
    (lambda a: {"q": numpy.zeros((B, HQ, N, 2 * D), numpy.float16)[..., ::2]}, r"tensor 'q' .* must have stride 1 in its last dimension"),
    (lambda a: {"out": numpy.zeros((B, HQ, N, D), numpy.float32)}, r"tensor 'o' .* must be f16"),
    (lambda a: {"lse": numpy.zeros((B, HQ, N + 1), numpy.float32)}, r"tensor 'lse' .* has 38 in dimension 2 but q's = 37"),
    (lambda a: {"scale": float("inf")}, r"scale = inf is not a finite number"),
    (lambda a: {"scale": -0.5}, r"scale = -0.5 is negative \(the kernels take a scale >= 0"),
    (lambda a: {"causal": 1}, r"causal = 1 must be True or False"),
    (lambda a: {"k": [1, 2]}, r"argument 'k' is a list, not a tensor"),
])
def test_each_bad_forward_argument_is_named(cpu_runtime, change, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        forward(cpu_runtime, **change(qkv()))


@pytest.mark.parametrize("change, message", [
    (lambda t: {"o": t["o"][:, :, :5]}, r"attention_backward: tensor 'o' .* has 5 in dimension 2 but q's shape and dtype = 37"),
    (lambda t: {"dout": t["dout"].astype(numpy.float32)}, r"tensor 'dout' .* must be f16"),
    (lambda t: {"lse": t["lse"].astype(numpy.float16)}, r"tensor 'lse' .* must be f32"),
    (lambda t: {"dk": numpy.zeros((B, HQ, N, D), numpy.float16)}, r"tensor 'dk' .* has 8 in dimension 1 but k's shape and dtype = 2"),
    (lambda t: {"exact": "yes"}, r"exact = 'yes' must be True or False"),
])
def test_each_bad_backward_argument_is_named(cpu_runtime, change, message):
    a = qkv()
    o = a["q"].copy()
    t = dict(o=o, lse=numpy.zeros((B, HQ, N), numpy.float32), dout=o.copy())
    with pytest.raises(tilejit.TilejitError, match=message):
        backward(cpu_runtime, **change(t))


def mask(shape, dtype=bool):
    return (numpy.random.default_rng().random(shape) < 0.5).astype(dtype)


@pytest.mark.parametrize("mask_shape", [(1, 1, 1, 1), (B, HQ, 1, 1), (1, HQ, 1, 1)])
def test_good_block_masks_pass_every_check_but_the_device(cpu_runtime, mask_shape):
    a = qkv()
    with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
        tilejit.ops.attention_forward(a["q"], a["k"], a["v"], block_mask=mask(mask_shape),
                                      runtime=cpu_runtime, check_only=True)
    with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
        backward(cpu_runtime, block_mask=mask(mask_shape, numpy.int32))


@pytest.mark.parametrize("block_mask, message", [
    ([[True]], r"block_mask is a list, not a tensor"),
    (mask((1, 1, 1)), r"tensor 'block_mask' \[1, 1, 1\] must have 4 dimensions"),
    (mask((1, 1, 1, 2)), r"must have 4 dimensions \[B or 1, Hq or 1, NB, NB\]"),
    (mask((1, 1, 1, 1), numpy.float32), r"tensor 'block_mask' \[1, 1, 1, 1\] is float32: a block mask is bool"),
    (mask((1, 1, 2, 2)), r"has NB = 2 blocks a side, but N = 37 makes 1 blocks of 128 or 1 of 64"),
    (mask((3, 1, 1, 1)), r"has 3 in dimension 0 but must have 1 or q's batch B = 2"),
    (mask((1, 3, 1, 1)), r"has 3 in dimension 1 but must have 1 or q's heads Hq = 8"),
])
def test_each_bad_block_mask_is_named(cpu_runtime, block_mask, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        forward(cpu_runtime, block_mask=block_mask)
    with pytest.raises(tilejit.TilejitError, match=message):
        backward(cpu_runtime, block_mask=block_mask)


def test_block_lists_keep_the_kept_blocks_first_and_transpose_for_the_backward():
    from tilejit.ops import _block_lists
    m = numpy.array([[[[1, 0, 1], [0, 0, 0], [1, 1, 0]]]], dtype=bool)
    q = numpy.zeros((1, 1, 300, 8), numpy.float16)  # 3 blocks of 128
    block, counts, indices = _block_lists("op", m, q, transpose=False)
    assert block == 128
    assert counts.tolist() == [[[2, 0, 2]]]
    assert indices[0, 0, 0, :2].tolist() == [0, 2] and indices[0, 0, 2, :2].tolist() == [0, 1]
    block, counts, indices = _block_lists("op", m, q, transpose=True)
    assert counts.tolist() == [[[2, 1, 1]]]
    assert indices[0, 0, 0, :2].tolist() == [0, 2] and indices[0, 0, 1, :1].tolist() == [2]
    q = numpy.zeros((1, 1, 300, 8), numpy.float16)
    assert _block_lists("op", numpy.ones((1, 1, 5, 5), bool), q, transpose=False)[0] == 64
