"""tilejit.ops.hbv_forward / hbv_backward / hbv checks, without a GPU (host arrays: every check
but the device one comes first, so each bad tensor is named here as it would be on the GPU). The
checks are the C++ ops' (<tilejit/ops.h>), and Python's own for nmul and the segment."""

import numpy
import pytest

import tilejit

B, T = 37, 19


def inputs(**changes):
    rng = numpy.random.default_rng()
    a = dict(P=rng.random((B, T), numpy.float32), TEMP=rng.random((B, T), numpy.float32),
             PET=rng.random((B, T), numpy.float32),
             params=rng.random((B, 12), numpy.float32))
    a.update(changes)
    return a


def forward(rt, options=None, **changes):
    a = inputs(**changes)
    return tilejit.ops.hbv_forward(a["P"], a["TEMP"], a["PET"], a["params"], runtime=rt,
                                   check_only=True, **(options or {}))


def backward(rt, options=None, **changes):
    a = inputs(**changes)
    dq = a.pop("dQ", numpy.ones((B, T), numpy.float32))
    return tilejit.ops.hbv_backward(a["P"], a["TEMP"], a["PET"], a["params"], dq, runtime=rt,
                                    check_only=True, **(options or {}))


HOST = r"tensor 'P' .* is in host memory"


def test_good_tensors_pass_every_check_but_the_device(cpu_runtime):
    with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
        forward(cpu_runtime)
    for segment in (-1, 0, 8, 256):  # a training forward of every form
        with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
            forward(cpu_runtime, {"training": True, "segment": segment})
    with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
        backward(cpu_runtime)
    starts = numpy.zeros((2, 3, 5, 32), numpy.float32)  # segment 8 at B = 37, T = 19
    with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
        backward(cpu_runtime, {"segment": 8, "starts": starts})
    with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
        forward(cpu_runtime, {"training": True, "segment": 8, "starts": starts})
    # Segment 0: the states every 64 days (one row of them at T = 19) for the checkpointed reverse.
    every64 = numpy.zeros((2, 1, 5, 32), numpy.float32)
    with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
        forward(cpu_runtime, {"training": True, "segment": 0, "starts": every64})
    with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
        backward(cpu_runtime, {"segment": 0, "starts": every64})


def test_components_per_basin_in_one_kernel(cpu_runtime):
    p16 = numpy.zeros((B, 12, 16), numpy.float32)
    for options in ({}, {"training": True}, {"training": True, "segment": 0}):
        with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
            forward(cpu_runtime, options, params=p16)
    with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
        backward(cpu_runtime, params=p16)
    # The training forward's states: 32 / 16 = 2 basins per program, every 64th day.
    starts = numpy.zeros((19, 1, 5, 2, 16), numpy.float32)
    with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
        backward(cpu_runtime, {"segment": 0, "starts": starts}, params=p16)
    with pytest.raises(tilejit.TilejitError,
                       match=r"tensor 'params' \(f32\[37, 12, 3\] cpu\) has 3 components per "
                             r"basin in dimension 2; one kernel takes 2, 4, 8 or 16"):
        forward(cpu_runtime, params=numpy.zeros((B, 12, 3), numpy.float32))
    # The segment form when asked for: states [cdiv(B, 2), cdiv(T, seg), 5, 2, 16] (and the
    # backward's tape and maps shaped alike).
    for segment in (8, 32):
        with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
            forward(cpu_runtime, {"training": True, "segment": segment}, params=p16)
        with pytest.raises(tilejit.TilejitError, match="hbv_backward: " + HOST):
            backward(cpu_runtime, {"segment": segment}, params=p16)
    with pytest.raises(tilejit.TilejitError,
                       match=r"tensor 'starts' \(f32\[2, 1, 5, 32\] cpu\) must have 5 "
                             r"dimensions"):
        backward(cpu_runtime, {"segment": 0, "starts": numpy.zeros((2, 1, 5, 32), numpy.float32)},
                 params=p16)


def test_the_backward_form_follows_the_tape_budget():
    # The segment form up to 4096 basins while its tape (about B x T x 20 bytes) fits 256 MiB,
    # else the checkpointed reverse.
    assert tilejit.ops.hbv_backward_form(1024, 1461) == 32
    assert tilejit.ops.hbv_backward_form(4096, 1461) == 128
    assert tilejit.ops.hbv_backward_form(16384, 1461) == 0
    assert tilejit.ops.hbv_backward_form(16384, 100) == 0  # lanes alone fill the GPU
    assert tilejit.ops.hbv_backward_form(16384, 1461, 64) == 64  # asked for: given
    assert tilejit.ops.hbv_backward_form(5, 1, 0) == 0
    assert tilejit.ops.hbv_backward_form(0, 0) == 0
    # With components the choice is the B x nmul models': 256 x 16 = 4096 the segment form,
    # 1024 x 16 (a tape over the budget) the checkpointed reverse; asked for: given.
    # (The runtime has no tuning database here: the untuned choice.)
    from tilejit.ops import _form
    rt = tilejit.runtime()
    assert _form(None, 256, 1461, -1, 16, rt) == tilejit.ops.hbv_backward_form(4096, 1461) == 128
    assert _form(None, 1024, 1461, -1, 16, rt) == 0
    assert _form(None, 1024, 1461, 16, 16, rt) == 16
    assert _form(None, 1024, 1461, -1, 1, None) == 32  # the default runtime's


def test_the_ops_form_through_the_c_abi_names_bad_values():
    # tj_hbv_op_form (the form on a runtime, its database consulted): random values, valid or
    # not, give a form or -1 with an error that names the problem; never a crash.
    import random
    from tilejit._native import lib, text
    rt = tilejit.runtime()
    assert lib.tj_hbv_op_form(rt._handle, 1024, 1461, 1, -1) == 32
    assert lib.tj_hbv_op_form(rt._handle, 256, 1461, 16, -1) == 128
    assert lib.tj_hbv_op_form(None, 1024, 1461, 1, -1) == -1
    assert "no runtime" in text(lib.tj_last_error())
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    extremes = [0, 1, -1, -2, 3, 16, 32, 4096, 2**31, 2**63 - 1, -2**63]
    for _ in range(300):
        b, t, nm, seg = (rng.choice(extremes) if rng.random() < 0.5 else rng.randrange(-4, 5000)
                         for _ in range(4))
        form = lib.tj_hbv_op_form(rt._handle, b, t, nm, seg)
        if form < 0:
            assert text(lib.tj_last_error()).startswith("hbv: "), (seed, b, t, nm, seg)
        else:
            assert seg == -1 or form == seg, (seed, b, t, nm, seg, form)
            assert form == 0 or form in (8, 16, 32, 64, 128, 256), (seed, b, t, nm, seg, form)


def test_work_buffer_shapes_come_from_the_library():
    # The shapes the op checks, as Python allocates them (one formula: ops::hbv_buffer_shape).
    from tilejit.ops import _buffer_shape
    assert _buffer_shape("starts", 33, 9, 8) == (2, 2, 5, 32)
    assert _buffer_shape("starts", 33, 9, 8, 16) == (17, 2, 5, 2, 16)
    assert _buffer_shape("tape", 33, 9, 8, 16) == (17, 2, 8, 5, 2, 16)
    assert _buffer_shape("maps", 33, 9, 8, 2) == (3, 2, 30, 16, 2)
    # Random sizes (a fuzz of the arguments): always the documented formula.
    rng = numpy.random.default_rng(5)
    for _ in range(200):
        B, T = (int(x) for x in rng.integers(0, 5000, 2))
        nm = int(rng.choice([1, 2, 4, 8, 16]))
        form = int(rng.choice([0, 8, 16, 32, 64, 128, 256]))
        days = form if form else 64
        bb = 32 // nm if nm > 1 else 32
        lanes = (bb, nm) if nm > 1 else (bb,)
        assert _buffer_shape("starts", B, T, form, nm) == (-(-B // bb), -(-T // days), 5) + lanes
        if form:
            assert _buffer_shape("tape", B, T, form, nm) == (-(-B // bb), -(-T // form), form, 5) + lanes
    for args, message in ((("starts", -1, 9, 8), "must not be negative"),
                          (("starts", 4, 9, 8, 3), "3 components per basin"),
                          (("starts", 4, 9, 7), "form 7"),
                          (("tapes", 4, 9, 8), "no work buffer 'tapes'"),
                          (("maps", 4, 9, 0), r"form 0 \(checkpoints\)")):
        with pytest.raises(tilejit.TilejitError, match=message):
            _buffer_shape(*args)


def test_buffer_shape_fuzz_from_its_seeds():
    # tests/workloads/seeds/hbv_buffer_shapes.txt, mutated: an error that names the problem, or
    # a shape with no negative dimension whose f32 bytes fit in 2^63 (never a wrapped size).
    import os
    from tilejit.ops import _buffer_shape
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "workloads", "seeds",
                        "hbv_buffer_shapes.txt")
    seeds = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    assert len(seeds) >= 10
    rng = numpy.random.default_rng(17)
    extremes = [0, 1, -1, 2**31 - 1, 2**31, 2**62, 2**63 - 1, -2**63, 64, 7]
    names = ["starts", "tape", "maps", "", "start", "tape\x00x", "MAPS"]
    cases = []
    for which, *nums in seeds:
        cases.append((which, *map(int, nums)))
        for _ in range(30):
            args = [which] + [int(x) for x in nums]
            k = int(rng.integers(0, 5))
            args[k] = names[int(rng.integers(0, len(names)))] if k == 0 else \
                extremes[int(rng.integers(0, len(extremes)))]
            cases.append(tuple(args))
    for which, B, T, form, nm in cases:
        try:
            shape = _buffer_shape(which, B, T, form, nm)
        except tilejit.TilejitError as e:
            assert str(e).startswith("hbv"), (which, B, T, form, nm, str(e))
            continue
        assert all(d >= 0 for d in shape), (which, B, T, form, nm, shape)
        n = 4
        for d in shape:
            n *= d
        assert n < 2**63, (which, B, T, form, nm, shape)


def test_buffer_shape_through_the_c_abi_refuses_no_name_and_no_room():
    import ctypes
    from tilejit._native import lib
    out = (ctypes.c_int64 * 8)()
    assert lib.tj_hbv_buffer_shape(None, 4, 9, 8, 1, ctypes.addressof(out), 8) == -1
    assert "which is NULL" in lib.tj_last_error().decode()
    assert lib.tj_hbv_buffer_shape(b"tape", 4, 9, 8, 16, ctypes.addressof(out), 5) == -1
    assert "room for 6 dimensions needed, 5 given" in lib.tj_last_error().decode()
    assert lib.tj_hbv_buffer_shape(b"tape", 4, 9, 8, 16, None, 8) == -1


@pytest.mark.parametrize("call, options, change, message", [
    (forward, None, {"TEMP": numpy.zeros((B, T + 1), numpy.float32)}, r"hbv_forward: tensor 'TEMP' .* has 20 in dimension 1 but P's days T = 19"),
    (forward, None, {"PET": numpy.zeros((B - 1, T), numpy.float32)}, r"tensor 'PET' .* has 36 in dimension 0 but P's basins B = 37"),
    (forward, None, {"params": numpy.zeros((B, 11), numpy.float32)}, r"tensor 'params' .* has 11 in dimension 1 but the parameters' count = 12"),
    (forward, None, {"params": numpy.zeros((B, 12, 2, 1), numpy.float32)}, r"tensor 'params' .* must have 2 dimensions: \[B, 12\] .* or \[B, 12, NM\]"),
    (forward, None, {"P": numpy.zeros((B, T), numpy.float64)}, r"tensor 'P' .* must be f32"),
    (forward, None, {"TEMP": numpy.zeros((B, T), numpy.float16)}, r"tensor 'TEMP' .* must be f32"),
    (forward, None, {"P": numpy.zeros((B, T, 1), numpy.float32)}, r"hbv_forward: tensor 'P' of shape \(37, 19, 1\) must have 2 dimensions"),
    (forward, None, {"PET": numpy.zeros((T, B), numpy.float32).T}, r"tensor 'PET' .* must be contiguous"),
    (forward, {"out": numpy.zeros((B, T), numpy.float16)}, {}, r"tensor 'Q' .* must be f32"),
    (forward, {"training": True, "segment": 9}, {}, r"segment = 9 is not -1 \(the op's choice\), 0 \(checkpoints\) or one of 8, 16"),
    (forward, {"training": True, "segment": True}, {}, r"hbv: segment = True must be an integer"),
    (forward, {"training": True, "segment": 8, "starts": numpy.zeros((2, 2, 5, 32), numpy.float32)}, {}, r"tensor 'starts' .* has 2 in dimension 1 but cdiv\(T, days\) = 3"),
    (forward, {"training": True, "segment": 0, "starts": numpy.zeros((2, 3, 5, 32), numpy.float32)}, {}, r"tensor 'starts' .* has 3 in dimension 1 but cdiv\(T, days\) = 1"),
    (forward, {"starts": numpy.zeros((2, 3, 5, 32), numpy.float32)}, {}, r"tensor 'starts' .* is given but training = false"),
    (backward, None, {"dQ": numpy.zeros((B, T - 1), numpy.float32)}, r"hbv_backward: tensor 'dQ' .* has 18 in dimension 1 but P's days T = 19"),
    (backward, {"segment": 16, "starts": numpy.zeros((2, 3, 5, 32), numpy.float32)}, {}, r"tensor 'starts' .* has 3 in dimension 1 but cdiv\(T, days\) = 2"),
    (backward, {"segment": 0, "starts": numpy.zeros((2, 3, 5, 32), numpy.float32)}, {}, r"tensor 'starts' .* has 3 in dimension 1 but cdiv\(T, days\) = 1"),
    (backward, {"starts": numpy.zeros((2, 3, 5, 32), numpy.float32)}, {}, r"hbv_backward: starts given without its segment"),
    (backward, {"segment": 8, "starts": numpy.zeros((2, 3, 5, 32), numpy.float64)}, {}, r"tensor 'starts' .* must be f32"),
    (backward, {"segment": 300}, {}, r"segment = 300 is not -1"),
    (backward, {"segment": 8, "grads": (numpy.zeros((B, T), numpy.float32),) * 3}, {}, r"hbv_backward: grads must be four tensors"),
    (backward, {"segment": 8, "grads": (numpy.zeros((B, T), numpy.float32),) * 3 + (numpy.zeros((B, 13), numpy.float32),)}, {}, r"tensor 'd_params' .* has 13 in dimension 1"),
])
def test_bad_inputs_are_named(cpu_runtime, call, options, change, message):
    with pytest.raises(tilejit.TilejitError, match=message):
        call(cpu_runtime, options, **change)


def test_hbv_checks_nmul_and_the_component_parameters(cpu_runtime):
    a = inputs()
    with pytest.raises(tilejit.TilejitError, match=r"hbv: nmul = 0 must be an integer >= 1"):
        tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"], a["params"], nmul=0, runtime=cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match=r"hbv: nmul = 2.0 must be an integer"):
        tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"], a["params"], nmul=2.0, runtime=cpu_runtime)
    with pytest.raises(tilejit.TilejitError,
                       match=r"tensor 'params' of shape \(37, 12\) must be \[B, 12, nmul\] = "
                             r"\[B, 12, 16\] for nmul = 16"):
        tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"], a["params"], nmul=16, runtime=cpu_runtime)
    with pytest.raises(tilejit.TilejitError, match=r"nmul = 3 takes torch tensors"):
        tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"], numpy.zeros((B, 12, 3), numpy.float32),
                        nmul=3, runtime=cpu_runtime)
    # 2, 4, 8 or 16 components run in one kernel: params [B, 12, nmul] go to the op as they are.
    for nmul in (2, 4, 8, 16):
        with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
            tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"],
                            numpy.zeros((B, 12, nmul), numpy.float32), nmul=nmul,
                            runtime=cpu_runtime)
    # nmul = 1: the forward's checks, down to the device.
    with pytest.raises(tilejit.TilejitError, match="hbv_forward: " + HOST):
        tilejit.ops.hbv(a["P"], a["TEMP"], a["PET"], a["params"], runtime=cpu_runtime)
