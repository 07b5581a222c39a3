"""tilejit.ops.repack_int4 / dequant_linear / int8_linear checks, without a GPU (host arrays:
every check but the device one comes first, so each bad tensor is named here as it would be on
the GPU). The checks are the C++ ops' (<tilejit/ops.h>)."""

import numpy
import pytest

import tilejit

K, N, G = 256, 40, 64  # N not a multiple of 8: qzeros' last word is partial


def gptq(group=G, k=K, n=N):
    rng = numpy.random.default_rng()
    groups = 1 if group < 0 else -(-k // group)
    return dict(
        qweight=rng.integers(-2**31, 2**31 - 1, (k // 8, n), dtype=numpy.int32),
        scales=(rng.random((groups, n)) * 0.02 + 0.001).astype(numpy.float16),
        qzeros=rng.integers(-2**31, 2**31 - 1, (groups, -(-n // 8)), dtype=numpy.int32))


def repack(cpu_runtime, group=G, **changes):
    a = gptq(group)
    g_idx = changes.pop("g_idx", None)
    a.update(changes)
    return tilejit.ops.repack_int4(a["qweight"], a["scales"], a["qzeros"], g_idx, group,
                                   runtime=cpu_runtime, check_only=True)


@pytest.mark.parametrize("group", [32, 64, 128, -1])
def test_good_gptq_tensors_pass_every_check_but_the_device(cpu_runtime, group):
    with pytest.raises(tilejit.TilejitError, match="tensor 'qweight' .* is in host memory"):
        repack(cpu_runtime, group)


@pytest.mark.parametrize("change, message", [
    (lambda a: {"qweight": a["qweight"].astype(numpy.int64)}, r"repack_int4: tensor 'qweight' \(i64\[32, 40\] cpu\) must be i32"),
    (lambda a: {"qweight": a["qweight"][0]}, r"tensor 'qweight' .* must have 2 dimensions: \[K/8, N\]"),
    (lambda a: {"scales": a["scales"][:3]}, "tensor 'scales' .* has 3 in dimension 0 but the groups of K = 8 \\* qweight's rows, K/G = 4"),
    (lambda a: {"scales": a["scales"][:, :39]}, "tensor 'scales' .* has 39 in dimension 1 but qweight's columns N = 40"),
    (lambda a: {"scales": a["scales"].astype(numpy.float32)}, "tensor 'scales' .* must be f16 or bf16"),
    (lambda a: {"qzeros": a["qzeros"][:2]}, "tensor 'qzeros' .* has 2 in dimension 0 but the groups of K, K/G = 4"),
    (lambda a: {"qzeros": a["qzeros"][:, :4]}, "tensor 'qzeros' .* has 4 in dimension 1 but qweight's columns N / 8, rounded up = 5"),
    (lambda a: {"g_idx": numpy.zeros(K - 8, numpy.int32)}, "tensor 'g_idx' .* has 248 in dimension 0 but K = 8 \\* qweight's rows = 256"),
    (lambda a: {"g_idx": numpy.zeros(K, numpy.int64)}, "tensor 'g_idx' .* must be i32"),
    (lambda a: {"scales": a["scales"].T.copy().T}, "tensor 'scales' .* must be contiguous"),
    (lambda a: {"qweight": [1, 2]}, "argument 'qweight' is a list, not a tensor"),
])
def test_each_bad_gptq_tensor_is_named(cpu_runtime, change, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        repack(cpu_runtime, **change(gptq()))


@pytest.mark.parametrize("group, message", [
    (16, "group_size = 16 is not one of 32, 64, 128, -1"),
    (0, "group_size = 0 is not one of"),
    (1.5, "group_size = 1.5 is not an integer"),
    (True, "group_size = True is not an integer"),
])
def test_bad_group_sizes(cpu_runtime, group, message):
    a = gptq()
    with pytest.raises(tilejit.TilejitError, match=message):
        tilejit.ops.repack_int4(a["qweight"], a["scales"], a["qzeros"], None, group,
                                runtime=cpu_runtime, check_only=True)


def packed(group=G, act_order=False, k=K, n=N):
    """An Int4Weights of host arrays with the packed form's shapes (for the checks)."""
    g = 128 if group < 0 else group
    return tilejit.ops.Int4Weights(
        numpy.zeros((n, k // 8), numpy.int32), numpy.zeros((-(-k // g), n), numpy.float16),
        numpy.zeros((-(-k // g), -(-n // 8)), numpy.int32), numpy.arange(k, dtype=numpy.int32),
        g, act_order)


@pytest.mark.parametrize("x, out, message", [
    (numpy.zeros((3, K), numpy.float16), None, "tensor 'x' .* is in host memory"),
    (numpy.zeros((3, K - 8), numpy.float16), None, "tensor 'x' .* has 248 in dimension 1 but the weights' K \\(8 \\* qweight's rows\\) = 256"),
    (numpy.zeros((3, 250), numpy.float16), None, r"tensor 'x' \(f16\[3, 250\] cpu\): K = 250 is not a multiple of 8"),
    (numpy.zeros((3, K), numpy.float32), None, "tensor 'x' .* must be f16"),
    (numpy.zeros((K,), numpy.float16), None, r"tensor 'x' .* must have 2 dimensions: \[M, K\]"),
    (numpy.zeros((3, K), numpy.float16), numpy.zeros((3, N + 1), numpy.float16), "tensor 'y' .* has 41 in dimension 1 but the weights' N = 40"),
    (numpy.zeros((3, K), numpy.float16), numpy.zeros((2, N), numpy.float16), "tensor 'y' .* has 2 in dimension 0 but x's rows M = 3"),
])
def test_dequant_linear_names_the_bad_tensor(cpu_runtime, x, out, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        tilejit.ops.dequant_linear(x, packed(), out=out, runtime=cpu_runtime, check_only=True)


def test_dequant_linear_checks_the_weights(cpu_runtime):
    x = numpy.zeros((1, K), numpy.float16)
    w = packed()
    w.scales = w.scales[:2]
    with pytest.raises(tilejit.TilejitError, match="tensor 'weights.scales' .* has 2 in dimension 0 but K/G = 4"):
        tilejit.ops.dequant_linear(x, w, runtime=cpu_runtime, check_only=True)
    w = packed()
    w.group = 100
    with pytest.raises(tilejit.TilejitError, match="weights.group = 100 is not 32, 64 or 128"):
        tilejit.ops.dequant_linear(x, w, runtime=cpu_runtime, check_only=True)
    with pytest.raises(tilejit.TilejitError, match="weights must come from tilejit.ops.repack_int4, not dict"):
        tilejit.ops.dequant_linear(x, {}, runtime=cpu_runtime, check_only=True)


@pytest.mark.parametrize("change, message", [
    ({}, "tensor 'x' .* is in host memory"),
    ({"w": numpy.zeros((N, K), numpy.uint8)}, "tensor 'w' .* must be i8"),
    ({"w": numpy.zeros((N, K + 1), numpy.int8)}, "tensor 'w' .* has 257 in dimension 1 but x's K = 256"),
    ({"scales": numpy.zeros((N - 1,), numpy.float16)}, "tensor 'scales' .* has 39 in dimension 0 but w's rows N = 40"),
    ({"scales": numpy.zeros((N,), numpy.float32)}, "tensor 'scales' .* must be f16"),
])
def test_int8_linear_names_the_bad_tensor(cpu_runtime, change, message):
    a = dict(x=numpy.zeros((2, K), numpy.float16), w=numpy.zeros((N, K), numpy.int8),
             scales=numpy.zeros((N,), numpy.float16))
    a.update(change)
    with pytest.raises(tilejit.TilejitError, match=message):
        tilejit.ops.int8_linear(a["x"], a["w"], a["scales"], runtime=cpu_runtime, check_only=True)
