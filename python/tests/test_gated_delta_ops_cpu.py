"""tilejit.ops.linear_attn_forward / linear_attn_backward / gated_delta_rule checks, without a
GPU (host arrays: every check but the device one comes first, so each bad tensor is named here
as it would be on the GPU). The checks are the C++ ops' (<tilejit/ops.h>)."""

import numpy
import pytest

import tilejit

B, T, H, DK, DV = 2, 37, 3, 24, 40


def tensors(dtype=numpy.float16):
    rng = numpy.random.default_rng()
    return dict(q=rng.random((B, T, H, DK)).astype(dtype),
                k=rng.random((B, T, H, DK)).astype(dtype),
                v=rng.random((B, T, H, DV)).astype(dtype),
                g=-rng.random((B, T, H)).astype(numpy.float32),
                beta=rng.random((B, T, H)).astype(numpy.float32))


def la_forward(rt, **changes):
    a = tensors()
    options = {key: changes.pop(key) for key in ("scale", "out") if key in changes}
    a.update(changes)
    return tilejit.ops.linear_attn_forward(a["q"], a["k"], a["v"], runtime=rt, check_only=True,
                                           **options)


def la_backward(rt, **changes):
    a = tensors()
    a["dout"] = a["v"].copy()
    options = {key: changes.pop(key) for key in ("scale", "dq", "dk", "dv") if key in changes}
    a.update(changes)
    return tilejit.ops.linear_attn_backward(a["q"], a["k"], a["v"], a["dout"], runtime=rt,
                                            check_only=True, **options)


def rule(rt, **changes):
    a = tensors()
    options = {key: changes.pop(key) for key in ("scale", "initial_state", "normalize", "chunk",
                                                 "out", "final_state", "cu_seqlens")
               if key in changes}
    a.update(changes)
    return tilejit.ops.gated_delta_rule_forward(a["q"], a["k"], a["v"], a["g"], a["beta"],
                                                runtime=rt, check_only=True, **options)


def rule_backward(rt, **changes):
    a = tensors()
    options = {key: changes.pop(key) for key in ("scale", "initial_state", "normalize", "chunk",
                                                 "dht", "cu_seqlens") if key in changes}
    a.update(changes)
    a.setdefault("dout", a["v"].copy())
    return tilejit.ops.gated_delta_rule_backward(a["q"], a["k"], a["v"], a["g"], a["beta"],
                                                 a["dout"], runtime=rt, check_only=True,
                                                 **options)


def test_good_tensors_pass_every_check_but_the_device(cpu_runtime):
    host = r"tensor 'q' .* is in host memory"
    with pytest.raises(tilejit.TilejitError, match="linear_attn_forward: " + host):
        la_forward(cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match="linear_attn_backward: " + host):
        la_backward(cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_forward: " + host):
        rule(cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_backward: " + host):
        rule_backward(cpu_runtime, dht=numpy.zeros((B, H, DK, DV), numpy.float32),
                      initial_state=numpy.zeros((B, H, DK, DV), numpy.float32), chunk=32)
    h0 = numpy.zeros((B, H, DK, DV), numpy.float32)
    with pytest.raises(tilejit.TilejitError, match=host):
        rule(cpu_runtime, initial_state=h0, normalize=False, chunk=16, scale=0.5)


@pytest.mark.parametrize("call, change, message", [
    (la_forward, lambda a: {"k": a["k"][:, :, :2]}, r"linear_attn_forward: tensor 'k' .* has 2 in dimension 2 but q's = 3"),
    (la_forward, lambda a: {"v": a["v"][:, :, :2]}, r"tensor 'v' .* has 2 in dimension 2 but q's heads H = 3"),
    (la_forward, lambda a: {"v": a["v"][:, :30]}, r"tensor 'v' .* has 30 in dimension 1 but q's length T = 37"),
    (la_forward, lambda a: {"q": numpy.zeros((B, T, H, 300), numpy.float16), "k": numpy.zeros((B, T, H, 300), numpy.float16)}, r"tensor 'q' .* head dim 300 is not from 1 to 256"),
    (la_forward, lambda a: {"q": a["q"].astype(numpy.float32)}, r"tensor 'q' .* must be f16 or bf16"),
    (la_forward, lambda a: {"v": a["v"].astype(numpy.float32)}, r"tensor 'v' .* must be f16"),
    (la_forward, lambda a: {"q": a["q"][0]}, r"tensor 'q' .* must have 4 dimensions: \[B, T, H, Dk\]"),
    (la_forward, lambda a: {"out": numpy.zeros((B, T, H, DK), numpy.float16)}, r"tensor 'o' .* has 24 in dimension 3 but v's shape and dtype = 40"),
    (la_forward, lambda a: {"scale": float("nan")}, r"scale = nan is not a finite number"),
    (la_backward, lambda a: {"dout": a["q"]}, r"linear_attn_backward: tensor 'dout' .* has 24 in dimension 3 but v's shape and dtype = 40"),
    (la_backward, lambda a: {"dk": numpy.zeros((B, T, H, DK), numpy.float32)}, r"tensor 'dk' .* must be f16"),
    (rule, lambda a: {"g": a["g"][:, :, :2]}, r"gated_delta_rule_forward: tensor 'g' .* has 2 in dimension 2 but \[B, T, H\] f32, q's B, T and H = 3"),
    (rule, lambda a: {"beta": a["beta"].astype(numpy.float16)}, r"tensor 'beta' .* must be f32"),
    (rule, lambda a: {"initial_state": numpy.zeros((B, H, DV, DK), numpy.float32)}, r"tensor 'h0' .* has 40 in dimension 2 but \[B, H, Dk, Dv\] f32 = 24"),
    (rule, lambda a: {"final_state": numpy.zeros((B, H, DK, DV), numpy.float16)}, r"tensor 'ht' .* must be f32"),
    (rule, lambda a: {"chunk": 48}, r"chunk = 48 is not 16, 32 or 64"),
    (rule, lambda a: {"chunk": 32.0}, r"chunk = 32.0 must be 16, 32 or 64"),
    (rule, lambda a: {"normalize": 1}, r"normalize = 1 must be True or False"),
    (rule, lambda a: {"g": numpy.zeros((B, H, T), numpy.float32).transpose(0, 2, 1)}, r"tensor 'g' .* must be contiguous"),
    (rule_backward, lambda a: {"dout": a["q"]}, r"gated_delta_rule_backward: tensor 'dout' .* has 24 in dimension 3 but v's shape and dtype = 40"),
    (rule_backward, lambda a: {"dht": numpy.zeros((B, H, DK, DV), numpy.float16)}, r"tensor 'dht' .* must be f32"),
    (rule_backward, lambda a: {"dht": numpy.zeros((B, H, DK, DK), numpy.float32)}, r"tensor 'dht' .* has 24 in dimension 3"),
    (rule_backward, lambda a: {"beta": a["beta"][:, :5]}, r"tensor 'beta' .* has 5 in dimension 1"),
    (rule_backward, lambda a: {"chunk": 8}, r"gated_delta_rule_backward: .*chunk = 8 is not 16, 32 or 64"),
])
def test_bad_tensors_are_named(cpu_runtime, call, change, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        call(cpu_runtime, **change(tensors()))


def packed(a):
    """The inputs as one batch of T steps (cu_seqlens' layout)."""
    return {n: x[:1] for n, x in a.items()}


CU = [0, 5, 5, 20, T]  # four sequences, one empty


@pytest.mark.parametrize("call, change, message", [
    (rule, lambda a: dict(packed(a), cu_seqlens=[0, 5, T + 1]), r"gated_delta_rule_forward: tensor 'q' .*: cu_seqlens .* ends at 38 but q has T = 37"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[0, 5, 30]), r"cu_seqlens .* ends at 30 but q has T = 37"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[0, 20, 10, T]), r"cu_seqlens .* goes back from 20 to 10 at entry 2"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[3, T]), r"cu_seqlens .* starts at 3, not 0"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[0]), r"cu_seqlens .* has 1 entry"),
    (rule, lambda a: dict(cu_seqlens=[0, 5, T]), r"packed along T of a batch of one, but B = 2"),
    (rule, lambda a: dict(packed(a), cu_seqlens=CU, initial_state=numpy.zeros((1, H, DK, DV), numpy.float32)), r"tensor 'h0' .* has 1 in dimension 0 but \[N, H, Dk, Dv\] f32 = 4"),
    (rule, lambda a: dict(packed(a), cu_seqlens=CU, final_state=numpy.zeros((1, H, DK, DV), numpy.float32)), r"tensor 'ht' .* has 1 in dimension 0 but \[N, H, Dk, Dv\] f32 = 4"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[0, 2.5, T]), r"cu_seqlens = \[0, 2.5, 37\] holds a value that is not an integer"),
    (rule, lambda a: dict(packed(a), cu_seqlens=numpy.array([0.0, 37.0])), r"cu_seqlens must be a 1-D integer tensor"),
    (rule, lambda a: dict(packed(a), cu_seqlens=7), r"cu_seqlens = 7 is not a list of offsets"),
    (rule, lambda a: dict(packed(a), cu_seqlens=[0, 2 ** 63, T]), r"cu_seqlens has a value out of the int64 range"),
    (rule_backward, lambda a: dict(packed(a), cu_seqlens=[0, 40]), r"gated_delta_rule_backward: tensor 'q' .*: cu_seqlens .* ends at 40 but q has T = 37"),
    (rule_backward, lambda a: dict(packed(a), cu_seqlens=CU, dht=numpy.zeros((1, H, DK, DV), numpy.float32)), r"tensor 'dht' .* has 1 in dimension 0 but \[N, H, Dk, Dv\] f32 = 4"),
])
def test_bad_cu_seqlens_are_named(cpu_runtime, call, change, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        call(cpu_runtime, **change(tensors()))


def test_good_cu_seqlens_pass_every_check_but_the_device(cpu_runtime):
    host = r"tensor 'q' .* is in host memory"
    states = numpy.zeros((len(CU) - 1, H, DK, DV), numpy.float32)
    for cu in (CU, numpy.array(CU, numpy.int32), [0, T], [0, 0, T, T]):
        with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_forward: " + host):
            rule(cpu_runtime, **packed(tensors()), cu_seqlens=cu)
    with pytest.raises(tilejit.TilejitError, match=host):
        rule(cpu_runtime, **packed(tensors()), cu_seqlens=CU, initial_state=states,
             final_state=states.copy())
    with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_backward: " + host):
        rule_backward(cpu_runtime, **packed(tensors()), cu_seqlens=CU, initial_state=states,
                      dht=states.copy())


def test_torch_g_above_zero_is_refused_and_gradients_take_the_autograd_path(cpu_runtime):
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 4, 1, 8, dtype=torch.bfloat16)
    g = torch.zeros(1, 4, 1)
    g[0, 2, 0] = 0.25
    with pytest.raises(tilejit.TilejitError, match="tensor 'g' has values above 0"):
        tilejit.ops.gated_delta_rule(q, q, q, g, torch.ones(1, 4, 1), runtime=cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match="tensor 'g' has values above 0"):
        tilejit.ops.gated_delta_rule_backward(q, q, q, g, torch.ones(1, 4, 1), q,
                                              runtime=cpu_runtime)
    # Inputs that require grad go through the autograd Function (on the host: the device check).
    with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_forward: .* host memory"):
        tilejit.ops.gated_delta_rule(q.clone().requires_grad_(True), q, q, -g.abs(),
                                     torch.ones(1, 4, 1), runtime=cpu_runtime)
    # ... with cu_seqlens too (a tensor: read once on the host).
    with pytest.raises(tilejit.TilejitError, match="gated_delta_rule_forward: .* host memory"):
        tilejit.ops.gated_delta_rule(q.clone().requires_grad_(True), q, q, -g.abs(),
                                     torch.ones(1, 4, 1), cu_seqlens=torch.tensor([0, 1, 4]),
                                     runtime=cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match="cu_seqlens .* ends at 5 but q has T = 4"):
        tilejit.ops.gated_delta_rule(q.clone().requires_grad_(True), q, q, -g.abs(),
                                     torch.ones(1, 4, 1), cu_seqlens=[0, 5], runtime=cpu_runtime)
