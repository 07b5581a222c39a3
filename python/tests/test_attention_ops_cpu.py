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


# tilejit.ops.BlockMask: the lists built once per (block, direction) and kept; a copy of the mask.

def test_a_block_mask_object_passes_like_its_tensor_and_keeps_its_lists(cpu_runtime):
    m = mask((B, 1, 1, 1))
    bm = tilejit.ops.BlockMask(m)
    assert bm.shape == (B, 1, 1, 1) and "BlockMask([2, 1, 1, 1])" in repr(bm)
    for call in (forward, backward):
        with pytest.raises(tilejit.TilejitError, match="tensor 'q' .* is in host memory"):
            call(cpu_runtime, block_mask=bm)
    # The forward's lists (per query block) and the backward's (per key block), each built once.
    first = {key: value for key, value in bm._lists.items()}
    assert set(first) == {False, True}
    for call in (forward, backward):
        with pytest.raises(tilejit.TilejitError, match="host memory"):
            call(cpu_runtime, block_mask=bm)
    assert all(bm._lists[key] is first[key] for key in first)


def test_a_block_mask_object_is_a_copy_and_lists_like_its_tensor():
    from tilejit.ops import _block_lists
    m = numpy.array([[[[1, 0, 1], [0, 0, 0], [1, 1, 0]]]], dtype=bool)
    q = numpy.zeros((1, 1, 300, 8), numpy.float16)
    bm = tilejit.ops.BlockMask(m)
    want = [_block_lists("t", m, q, transpose) for transpose in (False, True)]
    m[...] = False  # changing the tensor afterwards changes nothing in the BlockMask
    for transpose, (block, counts, indices) in zip((False, True), want):
        got = _block_lists("t", bm, q, transpose)
        assert got[0] == block == 128
        assert (got[1] == counts).all() and (got[2] == indices).all()
    # The same object over another sequence: N = 150 makes 3 blocks of 64.
    assert _block_lists("t", bm, numpy.zeros((1, 1, 150, 8), numpy.float16), False)[0] == 64


@pytest.mark.parametrize("made_of, message", [
    ([[True]], r"BlockMask: block_mask is a list, not a tensor"),
    (mask((1, 1, 1)), r"BlockMask: tensor 'block_mask' \[1, 1, 1\] must have 4 dimensions"),
    (mask((1, 1, 1, 2)), r"BlockMask: .* must have 4 dimensions \[B or 1, Hq or 1, NB, NB\]"),
    (mask((1, 1, 1, 1), numpy.float64), r"BlockMask: .* is float64: a block mask is bool"),
    (None, r"BlockMask: block_mask is a NoneType, not a tensor"),
])
def test_a_bad_block_mask_object_is_named_when_made(made_of, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        tilejit.ops.BlockMask(made_of)


@pytest.mark.parametrize("shape, message", [
    ((1, 1, 2, 2), r"has NB = 2 blocks a side, but N = 37 makes 1 blocks of 128 or 1 of 64"),
    ((3, 1, 1, 1), r"has 3 in dimension 0 but must have 1 or q's batch B = 2"),
    ((1, 3, 1, 1), r"has 3 in dimension 1 but must have 1 or q's heads Hq = 8"),
])
def test_a_block_mask_object_is_checked_against_each_calls_q(cpu_runtime, shape, message):
    bm = tilejit.ops.BlockMask(mask(shape))
    for call in (forward, backward):
        with pytest.raises(tilejit.TilejitError, match=message):
            call(cpu_runtime, block_mask=bm)


def test_random_block_mask_objects_are_used_or_named_never_a_crash(cpu_runtime):
    """A seeded sweep of what a BlockMask may be made of and used with (ranks, sizes, dtypes
    against q's batch, heads and sequence): each is used or refused with TilejitError."""
    rng = numpy.random.default_rng(20261129)
    dtypes = [bool, numpy.int8, numpy.int32, numpy.uint8, numpy.float16, numpy.float32]
    outcomes = set()
    for _ in range(300):
        rank = int(rng.integers(0, 6))
        shape = tuple(int(rng.integers(0, 4)) for _ in range(rank))
        if rank == 4 and rng.random() < 0.6:
            nb = int(rng.integers(0, 4))
            shape = (int(rng.choice([1, B, 3])), int(rng.choice([1, HQ, 3])), nb, nb)
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        try:
            bm = tilejit.ops.BlockMask(numpy.ones(shape, dtype))
        except tilejit.TilejitError as e:
            assert str(e).startswith("BlockMask: "), str(e)
            outcomes.add("refused when made")
            continue
        for call in (forward, backward):
            with pytest.raises(tilejit.TilejitError) as e:
                call(cpu_runtime, block_mask=bm)
            outcomes.add("reached the device check" if "host memory" in str(e.value)
                         else "refused at the call")
    assert outcomes == {"refused when made", "reached the device check", "refused at the call"}
