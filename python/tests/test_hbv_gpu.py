"""tilejit.ops.hbv on the GPU against a float64 reference of WORKLOADS.md section 5 written here
in PyTorch (its gradients by autograd, with the spec's tie rules: a min or max gives the gradient
to its first argument, clamp passes it at its bounds): every form of the derived backward, odd
B and T, one day, no days, no basins, several components (nmul), through autograd and
torch.ops.tilejit.hbv. Outputs given to the ops are poisoned with NaN first."""

import math

import pytest

torch = pytest.importorskip("torch")

import tilejit  # noqa: E402

pytestmark = pytest.mark.gpu

NEAR_KINK = 1e-5  # as workloads/hbv_reference.h's kHbvNearKink
RANGES = [(1, 6), (50, 1000), (0.05, 0.9), (0.01, 0.5), (0.001, 0.2), (0.2, 1), (0, 10),
          (0, 100), (-2.5, 2.5), (0.5, 10), (0, 0.1), (0, 0.2)]


@pytest.fixture(scope="module", autouse=True)
def needs_gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


def random_inputs(B, T, gen):
    u = lambda *shape: torch.rand(*shape, generator=gen, dtype=torch.float64)
    wet = u(B, T) < 0.5
    P = torch.where(wet, 50 * u(B, T), torch.zeros(B, T, dtype=torch.float64))
    TEMP = -20 + 50 * u(B, T)
    PET = 10 * u(B, T)
    lo = torch.tensor([r[0] for r in RANGES], dtype=torch.float64)
    hi = torch.tensor([r[1] for r in RANGES], dtype=torch.float64)
    params = lo + (hi - lo) * u(B, 12)
    dQ = 2 * u(B, T) - 1
    # The GPU's inputs, and the reference's the same values (f32-rounded).
    return [x.float().cuda() for x in (P, TEMP, PET, params, dQ)]


def reference(P, TEMP, PET, params, dQ):
    """Q and the four gradients of sum(dQ * Q) in float64, and per basin whether it stays clear
    of the kinks (ties f32 may resolve the other way are left out of the gradients' check)."""
    p, temp, pet, prm = (x.double().cpu().requires_grad_() for x in (P, TEMP, PET, params))
    B, T = p.shape
    BETA, FC, K0, K1, K2, LP, PERC, UZL, TT, CFMAX, CFR, CWH = prm.unbind(1)
    near = torch.full((B,), math.inf, dtype=torch.float64)

    def measure(diff, scale):
        nonlocal near
        with torch.no_grad():
            r = torch.where(scale > 0, diff.abs() / torch.where(scale > 0, scale, 1), math.inf)
            near = torch.minimum(near, r)

    def at_least(diff, scale):  # the branch diff >= 0, its margin measured
        measure(diff, scale)
        return diff >= 0

    zero = torch.zeros(B, dtype=torch.float64)
    sp = mw = sm = suz = slz = torch.full((B,), 0.001, dtype=torch.float64)
    qs = []
    for t in range(T):
        P_, TE, PE = p[:, t], temp[:, t], pet[:, t]
        rain = torch.where(TE >= TT, P_, zero)
        sp = sp + (P_ - rain)
        mr = CFMAX * (TE - TT)
        mp = torch.where(mr >= 0, mr, zero)
        melt = torch.where(at_least(sp - mp, sp.abs() + mp.abs()), mp, sp)
        mw = mw + melt
        sp = sp - melt
        rr = CFR * CFMAX * (TT - TE)
        rp = torch.where(rr >= 0, rr, zero)
        refr = torch.where(at_least(mw - rp, mw.abs() + rp.abs()), rp, mw)
        sp = sp + refr
        mw = mw - refr
        w = mw - CWH * sp
        tosoil = torch.where(at_least(w, mw.abs() + (CWH * sp).abs()), w, zero)
        mw = mw - tosoil
        pw = torch.pow(sm / FC, BETA)
        measure(1 - pw, torch.ones_like(pw))
        wet = torch.clamp(pw, 0, 1)
        recharge = (rain + tosoil) * wet
        sm = sm + rain + tosoil - recharge
        excess = torch.where(at_least(sm - FC, sm.abs() + FC.abs()), sm - FC, zero)
        sm = sm - excess
        v = sm / (LP * FC)
        measure(1 - v, torch.ones_like(v))
        ef = torch.clamp(v, 0, 1)
        pet_ef = PE * ef
        et = torch.where(at_least(pet_ef - sm, pet_ef.abs() + sm.abs()), sm, pet_ef)
        d = sm - et
        sm = torch.where(at_least(d - 1e-5, sm.abs() + et.abs()), d, torch.full_like(d, 1e-5))
        suz = suz + recharge + excess
        perc = torch.where(at_least(PERC - suz, PERC.abs() + suz.abs()), suz, PERC)
        suz = suz - perc
        u = torch.where(at_least(suz - UZL, suz.abs() + UZL.abs()), suz - UZL, zero)
        q0 = K0 * u
        suz = suz - q0
        q1 = K1 * suz
        suz = suz - q1
        slz = slz + perc
        q2 = K2 * slz
        slz = slz - q2
        qs.append(q0 + q1 + q2)
    Q = torch.stack(qs, 1) if qs else torch.zeros(B, 0, dtype=torch.float64)
    if Q.requires_grad:
        (Q * dQ.double().cpu()).sum().backward()
    grads = [x.grad if x.grad is not None else torch.zeros_like(x) for x in (p, temp, pet, prm)]
    clear = near >= NEAR_KINK
    if 2 * int(clear.sum()) < B:  # as hbv_basins_to_compare: then every basin
        clear = torch.ones(B, dtype=torch.bool)
    return Q.detach(), grads, clear


def rel_err(got, want):
    got, want = got.double().cpu(), want.double()
    assert torch.isfinite(got).all(), "NaN or inf in the output"
    norm = want.norm()
    return float((got - want).norm() / norm) if norm > 1e-9 else float((got - want).norm())


def check(Q, grads, ref):
    Q_ref, g_ref, clear = ref
    assert rel_err(Q, Q_ref) < 1e-4
    for name, g, want in zip(("d_P", "d_TEMP", "d_PET", "d_params"), grads, g_ref):
        assert g.shape == want.shape, name
        assert rel_err(g.cpu()[clear], want[clear]) < 1e-3, name


def nan_like(t):
    return torch.full_like(t, math.nan)


@pytest.mark.parametrize("B, T, segment", [
    (37, 50, -1), (37, 50, 0), (37, 50, 8), (37, 50, 256), (300, 100, 16), (1, 1, -1),
    (65, 129, 64), (5, 3, 0), (70, 200, 0)])
def test_forward_and_backward_match_the_float64_reference(B, T, segment):
    gen = torch.Generator().manual_seed(B * 1000 + T + segment)
    P, TEMP, PET, params, dQ = random_inputs(B, T, gen)
    ref = reference(P, TEMP, PET, params, dQ)
    Q = tilejit.ops.hbv_forward(P, TEMP, PET, params, out=nan_like(P))
    Qt, starts, form = tilejit.ops.hbv_forward(P, TEMP, PET, params, training=True,
                                               segment=segment, out=nan_like(P))
    assert form == tilejit.ops.hbv_backward_form(B, T, segment)
    assert starts is not None  # each segment's start, or every 64th day's states (form 0)
    grads = tuple(nan_like(x) for x in (P, TEMP, PET, params))
    tilejit.ops.hbv_backward(P, TEMP, PET, params, dQ, segment=form, starts=starts, grads=grads)
    torch.cuda.synchronize()
    check(Q, grads, ref)
    assert rel_err(Qt, ref[0]) < 1e-4
    # Without the training forward's starts: a segment form runs that forward itself, segment 0
    # the kernel that reruns the forward for its own checkpoints.
    again = tilejit.ops.hbv_backward(P, TEMP, PET, params, dQ, segment=segment)
    check(Q, again, ref)


def test_autograd_and_the_torch_operator():
    gen = torch.Generator().manual_seed(7)
    P, TEMP, PET, params, dQ = random_inputs(257, 200, gen)
    ref = reference(P, TEMP, PET, params, dQ)
    for fn in (tilejit.ops.hbv, torch.ops.tilejit.hbv):
        leaves = [x.clone().requires_grad_() for x in (P, TEMP, PET, params)]
        Q = fn(*leaves)
        (Q * dQ).sum().backward()
        check(Q.detach(), [x.grad for x in leaves], ref)


@pytest.mark.parametrize("nmul", [3, 4, 16])  # repeated forcings; one kernel; one kernel
def test_components_are_averaged_and_their_gradients_summed(nmul):
    B, T = 9, 40
    gen = torch.Generator().manual_seed(11 + nmul)
    P, TEMP, PET, _, dQ = random_inputs(B, T, gen)
    params = random_inputs(B * nmul, 1, gen)[3].view(B, nmul, 12).permute(0, 2, 1).contiguous()
    # The reference: B * nmul models, Q averaged, each forcing's gradient summed over them;
    # a basin's gradients compared when every one of its components is clear of kinks (as long
    # as half the basins are, else every basin, as hbv_basins_to_compare).
    flat = params.permute(0, 2, 1).reshape(B * nmul, 12)
    rows = [x.repeat_interleave(nmul, 0) for x in (P, TEMP, PET)]
    Q_ref, g_ref, clear = reference(*rows, flat, dQ.repeat_interleave(nmul, 0) / nmul)
    basins = clear.view(B, nmul).all(1)
    if 2 * int(basins.sum()) < B:
        basins = torch.ones(B, dtype=torch.bool)
    # tilejit.ops.hbv (2, 4, 8, 16: one kernel; others: repeated rows) and, with params
    # [B, 12, nmul] as they are, torch.ops.tilejit.hbv (one kernel for 2, 4, 8, 16 only).
    calls = [lambda *x: tilejit.ops.hbv(*x, nmul=nmul)]
    if nmul in (2, 4, 8, 16):  # also the segment form, asked for
        calls += [torch.ops.tilejit.hbv, lambda *x: tilejit.ops.hbv(*x, nmul=nmul, segment=16)]
    for fn in calls:
        leaves = [x.clone().requires_grad_() for x in (P, TEMP, PET, params)]
        Q = fn(*leaves)
        assert Q.shape == (B, T)
        (Q * dQ).sum().backward()
        assert rel_err(Q.detach(), Q_ref.view(B, nmul, T).mean(1)) < 1e-4
        for g, want in zip(leaves[:3], g_ref[:3]):
            assert rel_err(g.grad.cpu()[basins], want.view(B, nmul, T).sum(1)[basins]) < 1e-3
        want = g_ref[3].view(B, nmul, 12).permute(0, 2, 1)
        assert leaves[3].grad.shape == (B, 12, nmul)
        assert rel_err(leaves[3].grad.cpu()[basins], want[basins]) < 1e-3


@pytest.mark.parametrize("B, T", [(0, 10), (6, 0), (0, 0)])
def test_no_basins_or_no_days(B, T):
    P = torch.rand(B, T, device="cuda")
    params = torch.rand(B, 12, device="cuda")
    Q = tilejit.ops.hbv_forward(P, P.clone(), P.clone(), params)
    assert Q.shape == (B, T)
    grads = tuple(nan_like(x) for x in (P, P, P, params))
    tilejit.ops.hbv_backward(P, P.clone(), P.clone(), params, torch.rand(B, T, device="cuda"),
                             grads=grads)
    torch.cuda.synchronize()
    for g in grads:  # no days: every gradient is zero (d_params too)
        assert g.shape[0] == B and bool((g == 0).all())
