"""On the GPU (pytest -m gpu, on the device): the typed op against a float64 reference, the
generic launch against PyTorch, torch.compile through the registered op, streams and tuning.
Every output is poisoned (NaN) first and every element checked, on fresh random inputs."""

import math

import pytest

torch = pytest.importorskip("torch")
import tilejit  # noqa: E402

pytestmark = pytest.mark.gpu


def paged_problem(B, HQ, HKV, D, PS, seq_lens, kept, dtype, seed):
    """Random caches and tables (pages shuffled), kept positions ascending per (b, kv head)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    maxp = max(1, max(math.ceil(s / PS) for s in seq_lens) if seq_lens else 1)
    pages = B * maxp + 3
    perm = torch.randperm(pages, generator=g)[: B * maxp].reshape(B, maxp).to(torch.int32)
    k_cache = torch.randn(pages, PS, HKV, D, generator=g).to(dtype)
    v_cache = torch.randn(pages, PS, HKV, D, generator=g).to(dtype)
    q = torch.randn(B, HQ, D, generator=g).to(dtype)
    maxk = max([1] + [kept(s) for s in seq_lens])
    kept_idx = torch.full((B, HKV, maxk), -1, dtype=torch.int32)
    kept_len = torch.zeros(B, HKV, dtype=torch.int32)
    for b, s in enumerate(seq_lens):
        for h in range(HKV):
            n = min(kept(s), s)
            idx = torch.randperm(s, generator=g)[:n].sort().values if n else torch.zeros(0)
            kept_idx[b, h, :n] = idx.to(torch.int32)
            kept_len[b, h] = n
    cuda = lambda t: t.cuda()  # noqa: E731
    return [cuda(t) for t in (q, k_cache, v_cache, perm, torch.tensor(seq_lens, dtype=torch.int32),
                               kept_idx, kept_len)]


def paged_reference(q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len, scale):
    B, HQ, D = q.shape
    HKV = k_cache.shape[2]
    G = HQ // HKV
    PS = k_cache.shape[1]
    o = torch.zeros(B, HQ, D, dtype=torch.float64, device=q.device)
    lse = torch.full((B, HQ), -math.inf, dtype=torch.float64, device=q.device)
    for b in range(B):
        for h in range(HKV):
            n = int(kept_len[b, h])
            if n == 0:
                continue
            pos = kept_idx[b, h, :n].long()
            page = block_table[b, pos // PS].long()
            k = k_cache[page, pos % PS, h].double()
            v = v_cache[page, pos % PS, h].double()
            qs = q[b, h * G:(h + 1) * G].double()
            s = qs @ k.T * scale
            lse[b, h * G:(h + 1) * G] = torch.logsumexp(s, dim=1)
            o[b, h * G:(h + 1) * G] = torch.softmax(s, dim=1) @ v
    return o, lse


def check_paged(args, o, lse, scale):
    ref_o, ref_lse = paged_reference(*args, scale)
    assert not torch.isnan(o).any(), "unwritten (NaN) elements in o"
    empty = torch.isinf(ref_lse)
    assert torch.equal(torch.isinf(lse) & (lse < 0), empty), "lse is -inf exactly where nothing is kept"
    assert (o.double()[empty] == 0).all(), "o is 0 where nothing is kept"
    err_o = (o.double() - ref_o).norm() / max(ref_o.norm(), 1e-30)
    err_l = (lse.double()[~empty] - ref_lse[~empty]).norm() / max(ref_lse[~empty].norm(), 1e-30)
    assert err_o < 1e-2 and err_l < 1e-3, (float(err_o), float(err_l))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("B, HQ, HKV, D, PS, seq_lens, kept", [
    (3, 32, 8, 128, 16, [1000, 37, 4096], lambda s: max(1, s // 20)),
    (2, 28, 4, 96, 64, [513, 9], lambda s: s),              # G = 7, whole sequences kept
    (4, 16, 16, 64, 8, [300, 0, 1, 77], lambda s: min(s, 5)),  # G = 1, an empty sequence
    (1, 16, 1, 256, 32, [2049], lambda s: 0 if s > 2048 else s),  # nothing kept at all
])
def test_paged_sparse_decode_matches_float64(dtype, B, HQ, HKV, D, PS, seq_lens, kept):
    args = paged_problem(B, HQ, HKV, D, PS, seq_lens, kept, dtype, seed=torch.seed() % 2**31)
    out = torch.full((B, HQ, D), math.nan, dtype=dtype, device="cuda")
    lse = torch.full((B, HQ), math.nan, dtype=torch.float32, device="cuda")
    o, l = tilejit.ops.paged_sparse_decode(*args, out=out, lse=lse)
    torch.cuda.synchronize()
    assert o is out and l is lse
    check_paged(args, o, l, 1 / math.sqrt(D))
    # Outputs allocated by the op, and an explicit scale.
    o2, l2 = tilejit.ops.paged_sparse_decode(*args, scale=0.3)
    torch.cuda.synchronize()
    check_paged(args, o2, l2, 0.3)


def test_an_empty_batch_returns_empty_outputs():
    args = paged_problem(0, 8, 2, 64, 16, [], lambda s: s, torch.float16, seed=1)
    o, lse = tilejit.ops.paged_sparse_decode(*args)
    assert o.shape == (0, 8, 64) and lse.shape == (0, 8)


def test_bad_tensors_on_the_gpu_are_named():
    args = paged_problem(2, 8, 2, 64, 16, [100, 50], lambda s: 10, torch.float16, seed=2)
    cpu = list(args)
    cpu[4] = cpu[4].cpu()
    with pytest.raises(tilejit.TilejitError, match="tensor 'seq_lens' .* is in host memory"):
        tilejit.ops.paged_sparse_decode(*cpu)
    bad = list(args)
    bad[0] = bad[0].transpose(0, 1).contiguous().transpose(0, 1)  # strided, still [B, Hq, D]
    o, lse = tilejit.ops.paged_sparse_decode(*bad)  # any strides but the last: accepted
    torch.cuda.synchronize()
    check_paged(bad, o, lse, 1 / 8)


def test_torch_compile_calls_the_registered_op():
    args = paged_problem(2, 16, 4, 128, 16, [700, 333], lambda s: s // 10, torch.bfloat16, seed=3)

    def f(*a):
        o, lse = torch.ops.tilejit.paged_sparse_decode(*a)
        return o.float() * 2, lse

    compiled = torch.compile(f, fullgraph=True)
    o, lse = compiled(*args)
    torch.cuda.synchronize()
    check_paged(args, (o / 2).to(torch.bfloat16), lse, 1 / math.sqrt(128))


def test_a_tile_kernel_on_torch_tensors_matches_torch():
    k = tilejit.load("embedded:examples/softmax.tile")
    for dtype, shape in [(torch.float32, (37, 300)), (torch.float16, (5, 4099)),
                         (torch.bfloat16, (129, 64))]:
        x = torch.randn(*shape, device="cuda").to(dtype)
        y = torch.full_like(x, math.nan)
        k(x, y)
        torch.cuda.synchronize()
        ref = torch.softmax(x.double(), dim=1)
        err = (y.double() - ref).abs().max()
        assert not torch.isnan(y).any() and err < (1e-5 if dtype == torch.float32 else 1e-2), err
    # Forced configuration, and a launch on a side stream after work queued on it.
    x = torch.randn(64, 1000, device="cuda")
    y = torch.full_like(x, math.nan)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x2 = x * 3  # queued on s: the kernel must run after it
        k(x2, y, config={"BR": 4, "BC": 128})
    s.synchronize()
    assert torch.allclose(y, torch.softmax(x * 3, dim=1), atol=1e-5)


def test_tune_stores_a_winner_and_launches_take_it(tmp_path):
    rt = tilejit.Runtime()
    k = rt.load("embedded:examples/softmax.tile")
    x = torch.randn(4096, 1000, device="cuda")
    y = torch.full_like(x, math.nan)
    db = str(tmp_path / "tune.db")
    first = k.tune(x, y, database=db, trials=6, seconds=30)
    assert first["tuned"], first
    assert torch.isnan(y).all(), "tuning left the output as it was"
    again = k.tune(x, y, database=db, trials=6, seconds=30)
    assert not again["tuned"] and again["config"] == first["config"], again
    assert k.resolve(x, y)["config"] == first["config"]
    k(x, y)
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5)


def test_a_cuda_graph_replays_the_op():
    """Decode loops capture the op once (after a first launch of the shape on the capturing
    stream, which allocates that stream's scratch) and replay it with no host work per call;
    the replay reads the tensors' new contents."""
    args = paged_problem(2, 16, 4, 128, 16, [900, 64], lambda s: s // 8, torch.float16, seed=4)
    out = torch.full_like(args[0], math.nan)
    lse = torch.full(args[0].shape[:2], math.nan, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        tilejit.ops.paged_sparse_decode(*args, out=out, lse=lse)  # prepares the shape
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        tilejit.ops.paged_sparse_decode(*args, out=out, lse=lse)
    for step in range(3):
        args[0].copy_(torch.randn_like(args[0]))
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        check_paged(args, out, lse, 1 / math.sqrt(128))
