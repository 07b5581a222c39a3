"""dequant_gemm's ops on the GPU (pytest -m gpu, on the device): repack_int4 + dequant_linear and
int8_linear against float64 on fresh random GPTQ / int8 weights, every group size, act-order,
odd M, N and K, both dtypes; outputs poisoned (NaN) first, every element checked."""

import pytest

torch = pytest.importorskip("torch")
import tilejit  # noqa: E402

pytestmark = pytest.mark.gpu


def nibbles(words, axis):
    """The eight 4-bit fields of each int32 along `axis`, expanded (field i = bits 4i..4i+3)."""
    shifts = 4 * torch.arange(8, device=words.device, dtype=torch.int32)
    w = words.unsqueeze(axis + 1)
    shape = [1] * w.dim()
    shape[axis + 1] = 8
    out = list(words.shape)
    out[axis] *= 8
    return ((w >> shifts.view(shape)) & 15).reshape(out)


def gptq(n, k, group, act_order, dtype, seed):
    """GPTQ tensors and W [N, K] float64 = (q - z[g(k)]) * s[g(k)]."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    g = k if group < 0 else group
    groups = -(-k // g)
    q = torch.randint(0, 16, (k, n), generator=gen, dtype=torch.int32)
    z = torch.randint(0, 16, (groups, -(-n // 8) * 8), generator=gen, dtype=torch.int32)
    s = (torch.rand(groups, n, generator=gen) * 0.02 + 0.002).to(dtype)
    group_of = torch.arange(k) // g
    if act_order:
        group_of = group_of[torch.randperm(k, generator=gen)]
    shifts = 4 * torch.arange(8, dtype=torch.int64)
    qweight = (q.reshape(k // 8, 8, n).to(torch.int64) << shifts[None, :, None]).sum(1)
    qzeros = (z.reshape(groups, -1, 8).to(torch.int64) << shifts[None, None, :]).sum(2)
    wrap = lambda t: torch.where(t >= 2**31, t - 2**32, t).to(torch.int32)  # noqa: E731
    w = ((q.double() - z[group_of][:, :n].double()) * s.double()[group_of]).t()
    cuda = dict(qweight=wrap(qweight).cuda(), scales=s.cuda(), qzeros=wrap(qzeros).cuda(),
                g_idx=group_of.to(torch.int32).cuda() if act_order else None)
    return cuda, w


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k, group, act_order", [
    (1, 2560, 4096, 128, False),
    (1, 6144, 2560, 128, True),
    (4, 300, 1024, 32, True),
    (17, 37, 1000, 64, False),   # odd N (a partial zero word), K not a multiple of the tile
    (3, 100, 640, -1, False),    # one group
    (64, 512, 768, 128, True),
])
def test_dequant_linear_matches_float64(dtype, m, n, k, group, act_order):
    t, w = gptq(n, k, group, act_order, dtype, seed=m * 1000 + n)
    packed = tilejit.ops.repack_int4(t["qweight"], t["scales"], t["qzeros"], t["g_idx"], group)
    assert packed.act_order == act_order and packed.group == (128 if group < 0 else group)
    x = torch.randn(m, k, device="cuda").to(dtype)
    y = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    out = tilejit.ops.dequant_linear(x, packed, out=y)
    assert out is y
    ref = x.double().cpu() @ w.t()
    torch.cuda.synchronize()
    assert not torch.isnan(y).any()
    err = ((y.double().cpu() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    # Allocated output, a second call (split-K scratch left clean): the same result, up to the
    # order in which the K slices' partial sums arrive.
    y2 = tilejit.ops.dequant_linear(x, packed)
    assert ((y2.double() - y.double()).norm() / y.double().norm()).item() < 1e-3


def test_dequant_linear_of_an_empty_batch_is_empty():
    t, _ = gptq(64, 256, 128, False, torch.float16, seed=1)
    packed = tilejit.ops.repack_int4(t["qweight"], t["scales"], t["qzeros"])
    y = tilejit.ops.dequant_linear(torch.empty(0, 256, device="cuda", dtype=torch.float16), packed)
    assert tuple(y.shape) == (0, 64)


def test_bad_g_idx_values_are_named():
    t, _ = gptq(64, 256, 64, True, torch.float16, seed=2)
    bad = t["g_idx"].clone()
    bad[5] = 9
    with pytest.raises(tilejit.TilejitError, match=r"g_idx\[5\] = 9 is out of range for 4 groups"):
        tilejit.ops.repack_int4(t["qweight"], t["scales"], t["qzeros"], bad, 64)
    uneven = torch.zeros(256, dtype=torch.int32, device="cuda")
    with pytest.raises(tilejit.TilejitError, match="puts 256 rows in group 0 but a group of size 64 holds 64"):
        tilejit.ops.repack_int4(t["qweight"], t["scales"], t["qzeros"], uneven, 64)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", [(1, 2560, 4096), (5, 301, 1157), (17, 64, 128)])
def test_int8_linear_matches_float64(dtype, m, n, k):
    gen = torch.Generator(device="cpu").manual_seed(m + n + k)
    w = torch.randint(-128, 128, (n, k), generator=gen, dtype=torch.int8)
    s = (torch.rand(n, generator=gen) * 0.02 + 0.001).to(dtype)
    x = torch.randn(m, k, generator=gen).to(dtype)
    y = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    tilejit.ops.int8_linear(x.cuda(), w.cuda(), s.cuda(), out=y)
    ref = x.double() @ (w.double() * s.double()[:, None]).t()
    err = ((y.double().cpu() - ref).norm() / ref.norm()).item()
    assert not torch.isnan(y).any() and err < 1e-2, err


def test_a_graph_capture_on_a_fresh_stream_asks_for_a_warm_up_there():
    """A launch's scratch (split-K sums here) is allocated on its first launch on a stream, which
    a CUDA-graph capture does not allow: the error says so; after a warm-up on the capturing
    stream the capture works and replays."""
    t, w = gptq(256, 1024, 128, False, torch.float16, seed=3)
    packed = tilejit.ops.repack_int4(t["qweight"], t["scales"], t["qzeros"])
    x = torch.randn(1, 1024, device="cuda", dtype=torch.float16)
    config = {"STEPS": 1}
    tilejit.ops.dequant_linear(x, packed, config=config)  # warm-up on the current stream only
    s = torch.cuda.Stream()
    with pytest.raises(tilejit.TilejitError, match="being captured into a CUDA graph"):
        with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=s):
            tilejit.ops.dequant_linear(x, packed, config=config)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        tilejit.ops.dequant_linear(x, packed, config=config)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        y = tilejit.ops.dequant_linear(x, packed, config=config)
    y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    ref = x.double().cpu() @ w.t()
    assert ((y.double().cpu() - ref).norm() / ref.norm()).item() < 1e-2
