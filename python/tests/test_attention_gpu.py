"""tilejit.ops.attention on the GPU (pytest -m gpu, on the device): the forward against a
float64 reference (o and lse), and the gradients of tilejit.ops.attention through autograd
against PyTorch autograd of the float64 math reference, for GQA, causal and not, odd N and head
dims, bf16/f16/f32 (TF32 and exact); outputs given poisoned (NaN) first, every element checked."""

import math

import pytest

torch = pytest.importorskip("torch")
import tilejit  # noqa: E402

pytestmark = pytest.mark.gpu


def reference(q, k, v, causal, scale):
    """float64 o and lse (and the graph for autograd)."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    return torch.softmax(s, dim=-1) @ v, lse


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


CASES = [  # dtype, B, HQ, HKV, N, D, causal, exact
    (torch.bfloat16, 2, 8, 2, 1000, 128, False, False),
    (torch.float16, 1, 6, 3, 333, 64, True, False),
    # Width 64 not causal: on Hopper the backward's wide tile (8 warps, producer warps) and
    # attn_dq's 8-warp tile of 128 query rows (workloads/attention_tiles.h).
    (torch.bfloat16, 2, 6, 2, 1000, 64, False, False),
    (torch.float16, 1, 2, 1, 129, 40, True, False),
    (torch.float32, 1, 4, 4, 257, 64, False, False),
    (torch.float32, 1, 4, 2, 200, 64, True, True),
    # Past N = 8192 without causal masking, D = 128 takes dq by attn_dq on Hopper
    # (workloads/attention_tiles.h), and the ops' Hopper tiles where nothing was tuned.
    (torch.bfloat16, 1, 2, 1, 8200, 128, False, False),
]


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, exact", CASES)
def test_forward_against_float64(dtype, b, hq, hkv, n, d, causal, exact):
    torch.manual_seed(n * d + hq)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype)
    k = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype)
    v = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((b, hq, n), float("nan"), device="cuda")
    o, l = tilejit.ops.attention_forward(q, k, v, causal=causal, exact=exact, out=out, lse=lse)
    ro, rl = reference(q.double(), k.double(), v.double(), causal, 1 / math.sqrt(d))
    tol = 1e-2 if dtype != torch.float32 else (1e-5 if exact else 5e-3)
    assert not torch.isnan(o).any() and not torch.isnan(l).any()
    assert rel(o, ro) <= tol
    assert (l.double() - rl).abs().max().item() <= (2e-3 if dtype != torch.float32 else 3e-3)


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, exact", CASES)
def test_gradients_against_autograd_of_the_math(dtype, b, hq, hkv, n, d, causal, exact):
    torch.manual_seed(n + d)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype, requires_grad=True)
    dout = torch.randn(b, hq, n, d, device="cuda", dtype=dtype)
    o = tilejit.ops.attention(q, k, v, causal=causal, exact=exact)
    o.backward(dout)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ro, _ = reference(q64, k64, v64, causal, 1 / math.sqrt(d))
    ro.backward(dout.double())
    tol = 3e-2 if dtype != torch.float32 else (1e-4 if exact else 1e-2)
    for got, want in ((q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad)):
        assert not torch.isnan(got).any()
        assert rel(got, want) <= tol


def test_strided_heads_view_and_empty_batch():
    """q.transpose(1, 2) of [B, N, H, D] (rows dense, other strides free) and B = 0."""
    x = torch.randn(2, 77, 4, 64, device="cuda", dtype=torch.float16)
    q = x.transpose(1, 2)
    o, _ = tilejit.ops.attention_forward(q, q[:, :2], q[:, :2])
    ro, _ = reference(q.double(), q[:, :2].double(), q[:, :2].double(), False, 1 / 8)
    assert rel(o, ro) <= 1e-2
    e = torch.empty(0, 4, 16, 64, device="cuda", dtype=torch.float16)
    o, lse = tilejit.ops.attention_forward(e, e[:, :2], e[:, :2])
    assert o.shape == e.shape and lse.shape == (0, 4, 16)


def masked_reference(q, k, v, causal, scale, block_mask, blk):
    """float64 o, lse and graph of attention under a block mask: rows that keep no key give
    o = 0 and lse = -inf (and no gradient)."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    n = q.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    keep = block_mask.bool().repeat_interleave(blk, -1).repeat_interleave(blk, -2)[..., :n, :n]
    if causal:
        keep = keep & ~torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    s = s.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s.masked_fill(~keep.any(-1, keepdim=True), 0), dim=-1) * keep.any(-1, keepdim=True)
    return p @ v, lse


def check_poisoned_backward(q, k, v, dout, causal, mask, config, blk=128):
    """The forward, then the backward with `config` into NaN-poisoned dq, dk, dv, each against
    float64 autograd of the reference (block-masked when `mask` is given)."""
    d = q.shape[-1]
    o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
    dq, dk, dv = (torch.full_like(t, math.nan) for t in (q, k, k))
    tilejit.ops.attention_backward(q, k, v, o, lse, dout, causal=causal, block_mask=mask, dq=dq,
                                   dk=dk, dv=dv, config=config)
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    if mask is None:
        ro, _ = reference(q64, k64, v64, causal, 1 / math.sqrt(d))
    else:
        ro, _ = masked_reference(q64, k64, v64, causal, 1 / math.sqrt(d), mask, blk)
    ro.backward(dout.double())
    for name, got, want in (("dq", dq, q64.grad), ("dk", dk, k64.grad), ("dv", dv, v64.grad)):
        assert not torch.isnan(got).any(), name
        assert rel(got, want) <= 3e-2, name


SPARSE_CASES = [  # dtype, B, HQ, HKV, N, D, causal, mask batch, mask heads, block, density
    (torch.bfloat16, 2, 8, 2, 1000, 128, False, 1, 8, 128, 0.3),
    (torch.float16, 1, 4, 4, 777, 64, True, 1, 1, 64, 0.4),
    (torch.float32, 2, 2, 1, 300, 64, True, 2, 1, 128, 0.5),
    (torch.bfloat16, 1, 4, 2, 1000, 64, False, 1, 4, 128, 0.3),
]


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, mb, mh, blk, density", SPARSE_CASES)
def test_block_mask_forward_and_gradients(dtype, b, hq, hkv, n, d, causal, mb, mh, blk, density):
    """block_mask: masked blocks skipped, one row of blocks with nothing kept (o = 0, lse = -inf,
    zero gradients), the rest against float64 math and its autograd."""
    torch.manual_seed(n + d + blk)
    nb = (n + blk - 1) // blk
    block_mask = torch.rand(mb, mh, nb, nb, device="cuda") < density
    block_mask |= torch.eye(nb, dtype=torch.bool, device="cuda")
    block_mask[:, :, 1] = False  # query block 1 keeps nothing
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(b, hkv, n, d, device="cuda", dtype=dtype, requires_grad=True)
    dout = torch.randn(b, hq, n, d, device="cuda", dtype=dtype)
    o, lse = tilejit.ops.attention_forward(q.detach(), k.detach(), v.detach(), causal=causal,
                                           block_mask=block_mask)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ro, rl = masked_reference(q64, k64, v64, causal, 1 / math.sqrt(d), block_mask, blk)
    empty = slice(blk, min(2 * blk, n))
    assert (o[:, :, empty] == 0).all() and (lse[:, :, empty] == -math.inf).all()
    assert rel(o, ro.detach()) <= (1e-2 if dtype != torch.float32 else 5e-3)
    finite = torch.isfinite(rl)
    assert torch.equal(torch.isfinite(lse), finite)
    assert (lse.double()[finite] - rl.detach()[finite]).abs().max().item() <= 3e-3
    out = tilejit.ops.attention(q, k, v, causal=causal, block_mask=block_mask)
    out.backward(dout)
    ro.backward(dout.double())
    assert (q.grad[:, :, empty] == 0).all()
    tol = 3e-2 if dtype != torch.float32 else 1e-2
    for got, want in ((q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad)):
        assert not torch.isnan(got).any()
        assert rel(got, want) <= tol


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, mb, mh, blk, density", SPARSE_CASES)
@pytest.mark.parametrize("atomic_dq", [None, "0", "1"])
def test_block_mask_backward_each_dq_path(dtype, b, hq, hkv, n, d, causal, mb, mh, blk, density,
                                          atomic_dq):
    """The block-sparse backward's dq by atomics (ATOMIC_DQ=1), by attn_dq_sparse over the
    forward's lists (0) and by the op's own choice (None: attn_dq_sparse on Hopper at 16-bit
    widths 64 and 128), into NaN-poisoned outputs, each gradient against float64 autograd."""
    torch.manual_seed(7 * n + d + blk)
    nb = (n + blk - 1) // blk
    block_mask = torch.rand(mb, mh, nb, nb, device="cuda") < density
    block_mask[:, :, 1] = False  # query block 1 keeps nothing
    q, dout = (torch.randn(b, hq, n, d, device="cuda", dtype=dtype) for _ in range(2))
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=block_mask)
    dq, dk, dv = (torch.full_like(t, math.nan) for t in (q, k, k))
    config = None if atomic_dq is None else {"ATOMIC_DQ": atomic_dq}
    tilejit.ops.attention_backward(q, k, v, o, lse, dout, causal=causal, block_mask=block_mask,
                                   dq=dq, dk=dk, dv=dv, config=config)
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    ro, _ = masked_reference(q64, k64, v64, causal, 1 / math.sqrt(d), block_mask, blk)
    ro.backward(dout.double())
    tol = 3e-2 if dtype != torch.float32 else 1e-2
    for name, got, want in (("dq", dq, q64.grad), ("dk", dk, k64.grad), ("dv", dv, v64.grad)):
        assert not torch.isnan(got).any(), name
        assert rel(got, want) <= tol, name


def test_a_block_mask_object_matches_its_tensor_and_is_a_copy():
    """tilejit.ops.BlockMask (lists built once, kept): through autograd it gives what its boolean
    tensor gives, bit for bit (the same kernels on the same lists), call after call; changing the
    tensor afterwards changes nothing in it."""
    torch.manual_seed(11)
    b, hq, hkv, n, d, blk = 2, 4, 2, 700, 128, 128
    nb = (n + blk - 1) // blk
    mask = torch.rand(1, hq, nb, nb, device="cuda") < 0.4
    mask[:, :, 2] = False  # query block 2 keeps nothing
    bm = tilejit.ops.BlockMask(mask)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))
    dout = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16)

    def step(block_mask):
        o = tilejit.ops.attention(q, k, v, causal=True, block_mask=block_mask)
        return (o,) + torch.autograd.grad(o, (q, k, v), dout)

    want = step(mask)
    for _ in range(2):
        got = step(bm)
        for name, x, y in zip(("o", "dq", "dk", "dv"), got, want):
            assert torch.equal(x, y), name
    mask.fill_(True)
    for name, x, y in zip(("o", "dq", "dk", "dv"), step(bm), want):
        assert torch.equal(x, y), name


WORK_LIST_CASES = [  # dtype, B, HQ, HKV, N, D, causal, mask batch, mask heads, density
    (torch.bfloat16, 2, 8, 2, 1000, 128, False, 1, 8, 0.15),
    (torch.float16, 1, 4, 4, 777, 64, True, 1, 1, 0.25),
    (torch.bfloat16, 3, 2, 1, 5000, 128, True, 3, 1, 0.1),
    (torch.bfloat16, 2, 6, 3, 2500, 64, False, 2, 6, 0.2),
    (torch.float16, 1, 2, 2, 128, 128, False, 1, 1, 0.0),
]


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, mb, mh, density", WORK_LIST_CASES)
def test_a_sparse_block_mask_takes_the_work_list(dtype, b, hq, hkv, n, d, causal, mb, mh,
                                                 density):
    """A BlockMask keeping under 30% of the blocks: the forward runs attn_fwd_sparse_items over
    its work list on Hopper. Into NaN-poisoned o and lse, every element against the mask
    tensor's attn_fwd_sparse (the same arithmetic: bit for bit) and float64 math; rows with
    nothing kept (o = 0, lse = -inf); gradients through autograd as the tensor's."""
    torch.manual_seed(n + d + hq)
    nb = (n + 127) // 128
    mask = torch.rand(mb, mh, nb, nb, device="cuda") < density
    if nb > 2:
        mask[:, :, 2] = False  # query block 2 keeps nothing
    bm = tilejit.ops.BlockMask(mask)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype, requires_grad=True)
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype, requires_grad=True)
            for _ in range(2))
    if torch.cuda.get_device_capability()[0] == 9:
        assert bm.work_list(q, k) is not None
    o, lse = (torch.full_like(q, math.nan), torch.full(q.shape[:3], math.nan, device="cuda"))
    tilejit.ops.attention_forward(q.detach(), k.detach(), v.detach(), causal=causal,
                                  block_mask=bm, out=o, lse=lse)
    want_o, want_lse = tilejit.ops.attention_forward(q.detach(), k.detach(), v.detach(),
                                                     causal=causal, block_mask=mask)
    assert torch.equal(o, want_o) and torch.equal(lse, want_lse)
    q64, k64, v64 = (t.detach().double() for t in (q, k, v))
    ro, rl = masked_reference(q64, k64, v64, causal, 1 / math.sqrt(d), mask, 128)
    assert rel(o, ro) <= 1e-2 or ro.abs().max() == 0
    assert torch.equal(torch.isfinite(lse), torch.isfinite(rl))
    if nb > 2:
        assert (o[:, :, 256:384] == 0).all() and (lse[:, :, 256:384] == -math.inf).all()
    dout = torch.randn_like(q)
    grads = [torch.autograd.grad(tilejit.ops.attention(q, k, v, causal=causal, block_mask=m),
                                 (q, k, v), dout) for m in (bm, mask)]
    for name, x, y in zip(("dq", "dk", "dv"), *grads):
        assert torch.equal(x, y), name


def test_the_work_list_is_built_without_a_synchronisation():
    """The BlockMask reads its counts when made; the first forward of a shape then builds the
    work list without waiting for the GPU (so that a call may be captured in a CUDA graph)."""
    b, hq, n, d = 2, 4, 2000, 128
    nb = (n + 127) // 128
    mask = torch.eye(nb, dtype=torch.bool, device="cuda")[None, None].expand(1, hq, nb, nb)
    bm = tilejit.ops.BlockMask(mask.contiguous())
    q, k, v = (torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        o, _ = tilejit.ops.attention_forward(q, k, v, block_mask=bm)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    want, _ = tilejit.ops.attention_forward(q, k, v, block_mask=mask)
    assert torch.equal(o, want)


def test_a_dense_block_mask_keeps_attn_fwd_sparse():
    """Over 30% of the blocks kept (where the work list was not faster) or blocks of 64, f32, a
    head dim rounding to 80: no work list."""
    nb = 8
    q, k = (torch.randn(1, 2, 1000, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    dense = torch.ones(1, 2, nb, nb, dtype=torch.bool, device="cuda")
    assert tilejit.ops.BlockMask(dense).work_list(q, k) is None
    blocks64 = torch.eye(16, dtype=torch.bool, device="cuda")[None, None]
    assert tilejit.ops.BlockMask(blocks64).work_list(q, k) is None
    sparse = torch.eye(nb, dtype=torch.bool, device="cuda")[None, None]
    if torch.cuda.get_device_capability()[0] == 9:
        assert tilejit.ops.BlockMask(sparse).work_list(q, k) is not None
    assert tilejit.ops.BlockMask(sparse).work_list(q.float(), k.float()) is None
    q80 = torch.randn(1, 2, 1000, 72, device="cuda", dtype=torch.bfloat16)
    assert tilejit.ops.BlockMask(sparse).work_list(q80, q80) is None


@pytest.mark.parametrize("atomic_dq", ["0", "1"])
@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False),
    (torch.bfloat16, 1, 8, 8, 777, 128, True),
    (torch.float16, 2, 4, 1, 555, 64, True),
])
def test_backward_with_dv_dk_issued_early(dtype, b, hq, hkv, n, d, causal, atomic_dq):
    """attn_bwd's ISSUE = 1 (dv's and dk's wgmma products left running under ds's trip through
    shared memory and dq: dot(..., issue = 1)) at the Hopper tiles, dq by atomics and by attn_dq,
    into NaN-poisoned outputs, against float64 autograd; and block-sparse with atomics."""
    torch.manual_seed(3 * n + d)
    q, dout = (torch.randn(b, hq, n, d, device="cuda", dtype=dtype) for _ in range(2))
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    config = {"ISSUE": 1, "ATOMIC_DQ": atomic_dq}
    check_poisoned_backward(q, k, v, dout, causal, None, config)
    nb = (n + 127) // 128
    mask = torch.rand(1, hq, nb, nb, device="cuda") < 0.5
    check_poisoned_backward(q, k, v, dout, causal, mask, config)


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False),
    (torch.bfloat16, 1, 8, 8, 777, 128, True),
    (torch.float16, 2, 4, 1, 555, 64, True),
])
def test_forward_with_pv_issued_early(dtype, b, hq, hkv, n, d, causal):
    """attn_fwd's ISSUE = 1 (p v's wgmma product left running under the row sums: dot(...,
    issue = 1)) at the Hopper tiles, into NaN-poisoned outputs, against float64."""
    torch.manual_seed(5 * n + d)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype)
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    out = torch.full_like(q, math.nan)
    lse = torch.full((b, hq, n), math.nan, device="cuda")
    o, l = tilejit.ops.attention_forward(q, k, v, causal=causal, out=out, lse=lse,
                                         config={"ISSUE": 1})
    ro, rl = reference(q.double(), k.double(), v.double(), causal, 1 / math.sqrt(d))
    assert not torch.isnan(o).any() and not torch.isnan(l).any()
    assert rel(o, ro) <= 1e-2
    assert (l.double() - rl).abs().max().item() <= 2e-3


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None),
    (torch.float16, 1, 8, 8, 777, 64, True, None),
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3),
    (torch.float16, 2, 2, 1, 300, 72, True, 0.5),
])
def test_backward_dq_atomics_by_the_bulk_copy_engine(dtype, b, hq, hkv, n, d, causal, density):
    """attn_bwd's and attn_bwd_sparse's BULK = 1 with dq by atomics (ATOMIC_DQ = 1): each
    block's dq rows staged in shared memory and added by cp.reduce.async.bulk (atomic_add's
    bulk; D = 72: rows of 72 floats from a tile 80 wide), into NaN-poisoned outputs, against
    float64 autograd."""
    torch.manual_seed(11 * n + d)
    q, dout = (torch.randn(b, hq, n, d, device="cuda", dtype=dtype) for _ in range(2))
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    nb = (n + 127) // 128
    mask = None if density is None else torch.rand(1, hq, nb, nb, device="cuda") < density
    check_poisoned_backward(q, k, v, dout, causal, mask, {"ATOMIC_DQ": 1, "BULK": 1})


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None),
    (torch.float16, 2, 4, 1, 555, 64, True, None),
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3),
    (torch.bfloat16, 1, 2, 2, 64, 128, False, None),  # one query block
    (torch.float16, 2, 2, 1, 300, 72, True, 0.5),  # D = 72: no TMA rows, not taken
])
def test_producer_warps_add_dq_by_the_bulk_copy_engine(dtype, b, hq, hkv, n, d, causal,
                                                       density):
    """PRODUCER = 1 with dq by bulk atomics (ATOMIC_DQ = 1, BULK = 1): the threads stage each
    iteration's dq tile and a warp of the producer warpgroup adds it (FlashAttention-3's dq
    writer), dense and block-sparse, into NaN-poisoned outputs, against float64 autograd: a
    tile overwritten before the warp's additions read it, or an iteration the warp skips,
    shows up as a wrong dq (or a launch that fails instead of hanging)."""
    torch.manual_seed(13 * n + d)
    q, dout = (torch.randn(b, hq, n, d, device="cuda", dtype=dtype) for _ in range(2))
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    nb = (n + 127) // 128
    mask = None if density is None else torch.rand(1, hq, nb, nb, device="cuda") < density
    for issue in (0, 1):
        check_poisoned_backward(q, k, v, dout, causal, mask,
                                {"ATOMIC_DQ": 1, "BULK": 1, "PRODUCER": 1, "ISSUE": issue})


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density, issue, ahead", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None, 0, 0),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None, 1, 0),
    (torch.float16, 2, 4, 1, 555, 64, True, None, 0, 0),
    (torch.bfloat16, 1, 6, 2, 1111, 64, False, None, 1, 0),
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None, 0, 1),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None, 1, 1),
    (torch.float16, 2, 4, 1, 555, 64, True, None, 1, 1),
    (torch.bfloat16, 1, 6, 2, 100, 64, False, None, 0, 1),  # one key tile: the loop runs once
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3, 0, 0),  # attn_fwd_sparse: no ISSUE
    (torch.float16, 1, 4, 4, 900, 64, True, 0.5, 0, 0),
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3, 0, 1),
    (torch.float16, 1, 4, 4, 900, 64, True, 0.5, 0, 1),
    (torch.bfloat16, 2, 2, 2, 1000, 128, True, 0.1, 0, 1),  # rows with no kept block
])
def test_forward_with_q_read_through_a_descriptor(dtype, b, hq, hkv, n, d, causal, density,
                                                  issue, ahead):
    """attn_fwd's and attn_fwd_sparse's SA = 1 (q's tile read by the tensor cores through a
    descriptor, dot's shared_a; swizzled in shared memory) at the Hopper tiles, and their
    AHEAD = 1 (the next key tile's scores issued before this tile's softmax), into NaN-poisoned
    outputs: against float64, and bit-equal to q in registers (SA = 0, AHEAD = 0), the same
    products in the same order."""
    torch.manual_seed(7 * n + d)
    q = torch.randn(b, hq, n, d, device="cuda", dtype=dtype)
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    blk = 128
    nb = (n + blk - 1) // blk
    mask = None if density is None else torch.rand(1, hq, nb, nb, device="cuda") < density
    got = []
    for sa in (1, 0):
        out = torch.full_like(q, math.nan)
        lse = torch.full((b, hq, n), math.nan, device="cuda")
        config = {"SA": sa, "AHEAD": ahead if sa else 0}
        if mask is None:
            config["ISSUE"] = issue
        got.append(tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask,
                                                 out=out, lse=lse, config=config))
    (o, l), (o0, l0) = got
    if mask is None:
        ro, rl = reference(q.double(), k.double(), v.double(), causal, 1 / math.sqrt(d))
    else:
        ro, rl = masked_reference(q.double(), k.double(), v.double(), causal, 1 / math.sqrt(d),
                                  mask, blk)
    assert not torch.isnan(o).any() and not torch.isnan(l).any()
    assert rel(o, ro) <= 1e-2
    finite = torch.isfinite(rl)
    assert torch.equal(torch.isfinite(l), finite)
    assert (l.double() - rl)[finite].abs().max().item() <= 2e-3
    assert torch.equal(o, o0) and torch.equal(l, l0)


def poisoned_forward_backward(q, k, v, dout, causal, mask):
    """o, lse, dq, dk, dv of the ops at their defaults, into NaN-poisoned outputs."""
    out = torch.full_like(q, math.nan)
    lse = torch.full(q.shape[:3], math.nan, device="cuda")
    o, l = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask, out=out,
                                         lse=lse)
    dq, dk, dv = (torch.full_like(t, math.nan) for t in (q, k, k))
    tilejit.ops.attention_backward(q, k, v, o, l, dout, causal=causal, block_mask=mask,
                                   dq=dq, dk=dk, dv=dv)
    return o, l, dq, dk, dv


def random_case(seed, dtype, b, hq, hkv, n, d, density):
    """q, k, v, dout and (with a density) a random [1, hq, nb, nb] block mask, seeded."""
    torch.manual_seed(seed)
    q, dout = (torch.randn(b, hq, n, d, device="cuda", dtype=dtype) for _ in range(2))
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=dtype) for _ in range(2))
    mask = None
    if density:
        nb = (n + 127) // 128
        mask = torch.rand(1, hq, nb, nb, device="cuda") < density
    return q, k, v, dout, mask


def assert_bit_equal_outputs(got, want):
    """o, lse, dq, dk, dv of two runs: none NaN, each bit-equal."""
    for name, x, y in zip(("o", "lse", "dq", "dk", "dv"), got, want):
        assert not torch.isnan(x).any(), name
        assert torch.equal(x, y), name


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None),
    (torch.float16, 2, 4, 1, 555, 64, True, None),
    (torch.bfloat16, 1, 6, 2, 1111, 64, False, None),
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3),
    (torch.float16, 1, 4, 4, 900, 64, True, 0.5),
])
def test_slot_release_is_bit_equal_to_the_block_barrier(monkeypatch, dtype, b, hq, hkv, n, d,
                                                        causal, density):
    """The pipelines' per-slot release (mbarriers, the default) only changes how the warps wait:
    o, lse, dq, dk and dv bit-equal to the kernels compiled with a block barrier at every
    iteration's top (TILEJIT_PIPELINE_RELEASE=barrier, a variant of its own in the process), on
    the Hopper tiles (every ring filled by TMA), dense and block-sparse; a slot refilled before
    every thread read it, or a tile read before it landed, shows up as a difference."""
    q, k, v, dout, mask = random_case(7 * n + d, dtype, b, hq, hkv, n, d, density)
    monkeypatch.setenv("TILEJIT_PIPELINE_RELEASE", "barrier")
    want = poisoned_forward_backward(q, k, v, dout, causal, mask)
    monkeypatch.setenv("TILEJIT_PIPELINE_RELEASE", "mbarrier")
    for _ in range(3):  # a race shows up on some runs only
        assert_bit_equal_outputs(poisoned_forward_backward(q, k, v, dout, causal, mask), want)


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3),
    (torch.float16, 1, 4, 4, 900, 64, True, 0.5),
    (torch.bfloat16, 2, 2, 1, 700, 128, True, 0.1),  # rows with no kept block
    (torch.bfloat16, 1, 2, 2, 130, 128, False, 1.0),  # two blocks, the second nearly empty
])
def test_early_index_reads_are_bit_equal(monkeypatch, dtype, b, hq, hkv, n, d, causal, density):
    """The block-sparse loops read their next kept block's index an iteration before its
    copies (the default) or with them (TILEJIT_PIPELINE_EARLY_INPUTS=0, a variant of its own in
    the process): o, lse, dq, dk and dv bit-equal, into NaN-poisoned outputs; an index carried
    into the wrong iteration copies the wrong block and shows up as a difference."""
    q, k, v, dout, mask = random_case(5 * n + d, dtype, b, hq, hkv, n, d, density)
    monkeypatch.setenv("TILEJIT_PIPELINE_EARLY_INPUTS", "0")
    want = poisoned_forward_backward(q, k, v, dout, causal, mask)
    monkeypatch.setenv("TILEJIT_PIPELINE_EARLY_INPUTS", "1")
    assert_bit_equal_outputs(poisoned_forward_backward(q, k, v, dout, causal, mask), want)


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None),
    (torch.float16, 2, 4, 1, 555, 64, True, None),
    (torch.bfloat16, 1, 2, 2, 100, 128, False, None),  # one key tile: the loop runs once
    (torch.bfloat16, 1, 4, 2, 1500, 128, False, 0.3),
    (torch.float16, 1, 4, 4, 900, 128, True, 0.5),
    (torch.bfloat16, 2, 2, 1, 1000, 128, False, 0.02),  # rows with no kept block
])
def test_forward_producer_warps_are_bit_equal(dtype, b, hq, hkv, n, d, causal, density):
    """attn_fwd and attn_fwd_sparse with their loop's copies issued by producer warps
    (PRODUCER = 1) against the same kernel without: o and lse bit-equal into NaN-poisoned
    outputs, dense and block-sparse (the copy thread reads the kept blocks' indices itself)."""
    q, k, v, _, mask = random_case(17 * n + d, dtype, b, hq, hkv, n, d, density)
    runs = []
    for config in ({"PRODUCER": 0, "ISSUE": 0}, {"PRODUCER": 1, "ISSUE": 0},
                   {"PRODUCER": 1, "ISSUE": 1}):
        out = torch.full_like(q, math.nan)
        lse = torch.full(q.shape[:3], math.nan, device="cuda")
        tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask, out=out, lse=lse,
                                      config=config)
        runs.append((out, lse))
    for run in runs[1:]:
        for name, x, y in zip(("o", "lse"), run, runs[0]):
            assert not torch.isnan(x).any(), name
            assert torch.equal(x, y), name
    if mask is not None:  # a row with no kept block: lse = -inf
        empty = ~mask[0].any(-1)
        assert torch.isinf(runs[2][1][0, empty.repeat_interleave(128, -1)[:, :n]]).all()


@pytest.mark.parametrize("dtype, b, hq, hkv, n, d, causal, density", [
    (torch.bfloat16, 2, 4, 2, 1000, 128, False, None),
    (torch.bfloat16, 1, 8, 8, 777, 128, True, None),
    (torch.float16, 2, 4, 1, 555, 64, True, None),
    (torch.bfloat16, 1, 6, 2, 1111, 64, False, None),
    (torch.bfloat16, 1, 2, 2, 64, 128, False, None),  # one query block: the loop runs once
    (torch.float16, 1, 3, 1, 200, 72, False, None),  # D = 72 (width 80, no TMA rows: not taken)
    (torch.bfloat16, 2, 4, 2, 1500, 128, False, 0.3),
    (torch.float16, 1, 4, 4, 900, 128, True, 0.05),  # rows and columns with no kept block
])
def test_producer_warps_are_bit_equal(dtype, b, hq, hkv, n, d, causal, density):
    """attn_bwd, attn_dq and their block-sparse forms with their pipelines' copies issued by
    producer warps (PRODUCER = 1: a warpgroup more, setmaxnreg) against the same kernels
    without (dq by attn_dq and by atomics): dq, dk and dv bit-equal into NaN-poisoned outputs;
    a slot refilled before every thread read it, a tile read before it landed or a wrong
    iteration count shows up as a difference (or a launch that fails instead of hanging)."""
    q, k, v, dout, mask = random_case(3 * n + d, dtype, b, hq, hkv, n, d, density)
    if mask is not None:
        mask = tilejit.ops.BlockMask(mask)  # with the forward's block lists: attn_dq_sparse
    o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
    for atomic in ("0", "1"):
        grads = []
        for producer in ("0", "1"):
            dq, dk, dv = (torch.full_like(t, math.nan) for t in (q, k, k))
            tilejit.ops.attention_backward(q, k, v, o, lse, dout, causal=causal, dq=dq, dk=dk,
                                           dv=dv, block_mask=mask,
                                           config={"ATOMIC_DQ": atomic, "PRODUCER": producer})
            grads.append((dq, dk, dv))
        for name, x, y in zip(("dq", "dk", "dv"), grads[1], grads[0]):
            assert not torch.isnan(x).any(), (atomic, name)
            if atomic == "0":
                assert torch.equal(x, y), (atomic, name)
            else:  # atomics add in whatever order they land
                torch.testing.assert_close(x, y, rtol=1e-2, atol=1e-2)
