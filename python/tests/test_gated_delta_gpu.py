"""tilejit.ops.linear_attn and gated_delta_rule on the GPU (pytest -m gpu, on the device):
linear attention's forward and, through autograd, its gradients against PyTorch autograd of a
float64 reference; the gated delta rule's forward and final state against the float64
recurrence step by step, and its gradients (q, k, v, g, beta, initial state) through autograd
against PyTorch autograd of that recurrence, also on packed sequences (cu_seqlens, an empty
one among them); odd T and head dims, Dk != Dv, both 16-bit dtypes, h0 or not; outputs given
poisoned (NaN) first, every element checked; a g above 0 refused by name."""

import pytest

torch = pytest.importorskip("torch")
import tilejit  # noqa: E402

pytestmark = pytest.mark.gpu


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def linear_reference(q, k, v, scale):
    """float64, [B, T, H, D]: o_t = scale * sum_{s <= t} (q_t . k_s) v_s."""
    a = torch.einsum("bthd,bshd->bhts", q, k) * scale
    t = q.shape[1]
    a = a.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), 0)
    return torch.einsum("bhts,bshd->bthd", a, v)


@pytest.mark.parametrize("dtype, b, t, h, dk, dv", [
    (torch.bfloat16, 2, 1000, 3, 128, 128),
    (torch.float16, 3, 257, 2, 40, 72),
    (torch.float16, 1, 1, 1, 8, 8),
    # Heads up to 64 wide: dk and dv from one reverse pass (linear_attn_bwd_kv).
    (torch.bfloat16, 4, 300, 2, 32, 32),
    (torch.float16, 2, 129, 3, 24, 40),
])
def test_linear_attn_forward_and_gradients(dtype, b, t, h, dk, dv):
    torch.manual_seed(t + dk)
    q = torch.randn(b, t, h, dk, device="cuda", dtype=dtype) / dk ** 0.5
    k = torch.randn(b, t, h, dk, device="cuda", dtype=dtype) / dk ** 0.5
    v = torch.randn(b, t, h, dv, device="cuda", dtype=dtype)
    out = torch.full_like(v, float("nan"))
    o = tilejit.ops.linear_attn_forward(q, k, v, out=out)
    ref = linear_reference(q.double(), k.double(), v.double(), dk ** -0.5)
    assert torch.isfinite(o).all() and rel(o, ref) < 2e-2
    qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
    do = torch.randn_like(v)
    tilejit.ops.linear_attn(qg, kg, vg).backward(do)
    q64, k64, v64 = (x.detach().double().requires_grad_(True) for x in (q, k, v))
    linear_reference(q64, k64, v64, dk ** -0.5).backward(do.double())
    for name, got, want in (("dq", qg.grad, q64.grad), ("dk", kg.grad, k64.grad),
                            ("dv", vg.grad, v64.grad)):
        assert torch.isfinite(got).all(), name
        assert rel(got, want) < 2e-2, name


def delta_reference(q, k, v, g, beta, h0, scale, normalize):
    """float64, step by step (differentiable): o [B, T, H, Dv] and the final state
    [B, H, Dk, Dv]."""
    if normalize:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    b, t, h, dk = q.shape
    s = h0.clone() if h0 is not None else q.new_zeros(b, h, dk, v.shape[-1])
    o = []
    for i in range(t):
        s = s * torch.exp(g[:, i])[..., None, None]
        u = beta[:, i][..., None] * (v[:, i] - torch.einsum("bhk,bhkv->bhv", k[:, i], s))
        s = s + torch.einsum("bhk,bhv->bhkv", k[:, i], u)
        o.append(scale * torch.einsum("bhk,bhkv->bhv", q[:, i], s))
    return torch.stack(o, 1), s


def check_rule_gradients(ins, ref_ins, h0, ref_h0):
    """Every gradient (q, k, v, g, beta; h0 when given) finite and within 3e-2 of the float64
    recurrence's."""
    pairs = list(zip(("dq", "dk", "dv", "dg", "dbeta"), ins, ref_ins))
    if h0 is not None:
        pairs.append(("dh0", h0, ref_h0))
    for name, got, want in pairs:
        assert got.grad is not None and torch.isfinite(got.grad).all(), name
        assert rel(got.grad, want.grad) < 3e-2, name


def rule_inputs(dtype, b, t, h, dk, dv, normalize, with_h0):
    """WORKLOADS.md's ranges: q, v in [-1, 1), k too (scaled by 1/sqrt(Dk) unless normalised),
    g in [-0.5, 0), beta in [0.05, 0.95), h0 in [-1, 1) (or None)."""
    kmax = 1.0 if normalize else dk ** -0.5
    q = torch.rand(b, t, h, dk, device="cuda", dtype=dtype) * 2 - 1
    k = ((torch.rand(b, t, h, dk, device="cuda") * 2 - 1) * kmax).to(dtype)
    v = torch.rand(b, t, h, dv, device="cuda", dtype=dtype) * 2 - 1
    g = -0.5 * torch.rand(b, t, h, device="cuda")
    beta = 0.05 + 0.9 * torch.rand(b, t, h, device="cuda")
    h0 = torch.rand(b, h, dk, dv, device="cuda") * 2 - 1 if with_h0 else None
    return q, k, v, g, beta, h0


@pytest.mark.parametrize("dtype, b, t, h, dk, dv, chunk, normalize, with_h0", [
    (torch.bfloat16, 2, 500, 3, 128, 128, 64, True, True),
    (torch.float16, 3, 257, 2, 40, 72, 32, True, False),
    (torch.float16, 1, 100, 2, 32, 32, 16, False, True),
    (torch.bfloat16, 1, 1, 1, 8, 8, 64, True, False),
])
def test_gated_delta_rule_forward(dtype, b, t, h, dk, dv, chunk, normalize, with_h0):
    torch.manual_seed(t + dv)
    q, k, v, g, beta, h0 = rule_inputs(dtype, b, t, h, dk, dv, normalize, with_h0)
    out = torch.full_like(v, float("nan"))
    state = torch.full((b, h, dk, dv), float("nan"), device="cuda")
    o, ht = tilejit.ops.gated_delta_rule_forward(q, k, v, g, beta, initial_state=h0,
                                                 normalize=normalize, chunk=chunk, out=out,
                                                 final_state=state)
    assert o.data_ptr() == out.data_ptr() and ht.data_ptr() == state.data_ptr()
    ro, rs = delta_reference(q.double(), k.double(), v.double(), g.double(), beta.double(),
                             None if h0 is None else h0.double(), dk ** -0.5, normalize)
    assert torch.isfinite(o).all() and torch.isfinite(ht).all()
    assert rel(o, ro) < 2e-2
    assert rel(ht, rs) < 2e-2


@pytest.mark.parametrize("dtype, b, t, h, dk, dv, chunk, normalize, with_h0", [
    (torch.bfloat16, 2, 200, 2, 64, 64, 32, True, True),
    (torch.float16, 1, 77, 3, 40, 24, 16, False, False),
    (torch.bfloat16, 2, 1, 3, 8, 8, 64, True, True),
])
def test_gated_delta_rule_gradients(dtype, b, t, h, dk, dv, chunk, normalize, with_h0):
    torch.manual_seed(7 * t + dk)
    q, k, v, g, beta, h0 = rule_inputs(dtype, b, t, h, dk, dv, normalize, with_h0)
    do = torch.rand_like(v) * 2 - 1
    dht = torch.rand(b, h, dk, dv, device="cuda") * 2 - 1
    ins = [x.detach().requires_grad_(True) for x in (q, k, v, g, beta)]
    h0g = h0.detach().requires_grad_(True) if with_h0 else None
    o, ht = tilejit.ops.gated_delta_rule(*ins, initial_state=h0g, normalize=normalize,
                                         chunk=chunk)
    ((o.float() * do.float()).sum() + (ht * dht).sum()).backward()
    ref_ins = [x.detach().double().requires_grad_(True) for x in (q, k, v, g, beta)]
    rh0 = h0.detach().double().requires_grad_(True) if with_h0 else None
    ro, rs = delta_reference(*ref_ins, rh0, dk ** -0.5, normalize)
    ((ro * do.double()).sum() + (rs * dht.double()).sum()).backward()
    check_rule_gradients(ins, ref_ins, h0g, rh0)


def test_gated_delta_rule_refuses_a_positive_g():
    q = torch.randn(1, 8, 1, 16, device="cuda", dtype=torch.bfloat16)
    g = torch.zeros(1, 8, 1, device="cuda")
    g[0, 3, 0] = 0.1
    with pytest.raises(tilejit.TilejitError, match="tensor 'g' has values above 0"):
        tilejit.ops.gated_delta_rule(q, q, q, g, torch.rand(1, 8, 1, device="cuda"))


def varlen_reference(q, k, v, g, beta, h0, cu, scale):
    """The step-by-step recurrence on each packed sequence from its own state (float64):
    o [1, T, H, Dv] and the final states [N, H, Dk, Dv]."""
    outs, states = [], []
    for n in range(len(cu) - 1):
        a, b = cu[n], cu[n + 1]
        s0 = h0[n:n + 1] if h0 is not None else None
        if a == b:  # an empty sequence: its state as it came
            states.append(s0 if s0 is not None else q.new_zeros(1, q.shape[2], q.shape[3],
                                                                v.shape[3]))
            continue
        o, s = delta_reference(q[:, a:b], k[:, a:b], v[:, a:b], g[:, a:b], beta[:, a:b], s0,
                               scale, True)
        outs.append(o)
        states.append(s)
    return torch.cat(outs, 1), torch.cat(states, 0)


@pytest.mark.parametrize("dtype, lens, h, dk, dv, chunk, with_h0", [
    (torch.bfloat16, [37, 0, 130, 64, 1], 2, 64, 32, 32, True),
    (torch.float16, [200, 57], 3, 40, 72, 64, False),
    (torch.bfloat16, [5], 1, 16, 16, 16, True),
])
def test_gated_delta_rule_packed_sequences(dtype, lens, h, dk, dv, chunk, with_h0):
    """cu_seqlens: each packed sequence from its own state (an empty one too), outputs given
    poisoned, every element checked; gradients through autograd against the reference's."""
    torch.manual_seed(sum(lens) + dk)
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    t, n_seq = cu[-1], len(lens)
    q, k, v, g, beta, _ = rule_inputs(dtype, 1, t, h, dk, dv, True, False)
    h0 = torch.rand(n_seq, h, dk, dv, device="cuda") * 2 - 1 if with_h0 else None
    out = torch.full_like(v, float("nan"))
    state = torch.full((n_seq, h, dk, dv), float("nan"), device="cuda")
    o, ht = tilejit.ops.gated_delta_rule_forward(
        q, k, v, g, beta, initial_state=h0, chunk=chunk, out=out, final_state=state,
        cu_seqlens=torch.tensor(cu, device="cuda", dtype=torch.int32))
    f64 = [x.double() for x in (q, k, v, g, beta)]
    ro, rs = varlen_reference(*f64, None if h0 is None else h0.double(), cu, dk ** -0.5)
    assert torch.isfinite(o).all() and torch.isfinite(ht).all()
    assert rel(o, ro) < 2e-2 and rel(ht, rs) < 2e-2
    do = torch.rand_like(v) * 2 - 1
    dht = torch.rand(n_seq, h, dk, dv, device="cuda") * 2 - 1
    ins = [x.detach().requires_grad_(True) for x in (q, k, v, g, beta)]
    h0g = h0.detach().requires_grad_(True) if with_h0 else None
    o, ht = tilejit.ops.gated_delta_rule(*ins, initial_state=h0g, chunk=chunk, cu_seqlens=cu)
    ((o.float() * do.float()).sum() + (ht * dht).sum()).backward()
    ref_ins = [x.detach().double().requires_grad_(True) for x in (q, k, v, g, beta)]
    rh0 = h0.detach().double().requires_grad_(True) if with_h0 else None
    ro, rs = varlen_reference(*ref_ins, rh0, cu, dk ** -0.5)
    ((ro * do.double()).sum() + (rs * dht.double()).sum()).backward()
    check_rule_gradients(ins, ref_ins, h0g, rh0)
