"""The C ABI's packed argument records (capi/tilejit_c.h) under random and truncated input:
an error that names the problem, never a crash (the test process would die) or a hang."""

import random
from array import array

import numpy

from tilejit._args import pack_tensor
from tilejit._native import lib


def call(rt, kernel, values):
    a = array("q", values)
    address = a.buffer_info()[0] if values else None
    result = lib.tj_resolve_json(rt._handle, kernel._handle, address, len(values), None)
    return result, lib.tj_last_error().decode()


def test_random_and_mutated_records_are_errors_not_crashes(cpu_runtime):
    k = cpu_runtime.load("embedded:examples/softmax.tile")
    good = []
    for _ in range(2):
        pack_tensor(good, numpy.zeros((3, 5), numpy.float32), "X")
    result, _ = call(cpu_runtime, k, good)
    assert result is not None  # the seed itself is valid
    rng = random.Random(1)
    interesting = [0, 1, 2, 3, 4, 9, 16, 17, -1, 1 << 40, -(1 << 62), 2**63 - 1]
    for round in range(3000):
        values = list(good)
        for _ in range(1 + rng.randrange(3)):
            op = rng.randrange(4)
            at = rng.randrange(len(values)) if values else 0
            if op == 0 and values:
                values[at] = rng.choice(interesting)
            elif op == 1:
                del values[at:]
            elif op == 2:
                values.insert(at, rng.choice(interesting))
            else:
                values = [rng.choice(interesting) for _ in range(rng.randrange(40))]
        result, error = call(cpu_runtime, k, values)
        assert result is not None or error, f"round {round}: failed without a message"
        assert result is not None or lib.tj_last_error_kind() == 1, (round, values, error)


def test_a_null_array_and_a_negative_length_are_named(cpu_runtime):
    k = cpu_runtime.load("embedded:examples/softmax.tile")
    assert lib.tj_resolve_json(cpu_runtime._handle, k._handle, None, 5, None) is None
    assert "a null array" in lib.tj_last_error().decode()
    assert lib.tj_resolve_json(cpu_runtime._handle, k._handle, None, -1, None) is None
    assert lib.tj_load(None, b"embedded:examples/softmax.tile", None) == -1
    assert "null handle" in lib.tj_last_error().decode()
    assert lib.tj_load(cpu_runtime._handle, None, None) == -1


INTERESTING = [0, 1, 2, 3, 4, 9, 16, 17, -1, 1 << 40, -(1 << 62), 2**63 - 1]


def mutate(values, rng):
    """One to three edits of a packed record in place: a value replaced by an interesting one,
    the tail cut, or an interesting value inserted."""
    for _ in range(1 + rng.randrange(3)):
        at = rng.randrange(len(values)) if values else 0
        op = rng.randrange(3)
        if op == 0 and values:
            values[at] = rng.choice(INTERESTING)
        elif op == 1:
            del values[at:]
        else:
            values.insert(at, rng.choice(INTERESTING))


DQ_CONFIGS = [None, b"ATOMIC_DQ=0", b"ATOMIC_DQ=1", b"ATOMIC_DQ=2", b"ATOMIC_DQ=", b"ATOMIC_DQ=-1",
              b"ATOMIC_DQ=0;BM=64", b"ATOMIC_DQ"]


def attention_records(q, kv, lse):
    """The packed records of an attention forward (q, k, v, o, lse) and backward (those, then
    dout, dq, dk, dv), on q-like and kv-like arrays."""
    fwd, bwd = [], []
    for t, name in ((q, "q"), (kv, "k"), (kv, "v"), (q, "o"), (lse, "lse")):
        pack_tensor(fwd, t, name)
    for t, name in ((q, "q"), (kv, "k"), (kv, "v"), (q, "o"), (lse, "lse"), (q, "dout"),
                    (q, "dq"), (kv, "dk"), (kv, "dv")):
        pack_tensor(bwd, t, name)
    return fwd, bwd


def test_mutated_attention_records_are_errors_not_crashes(cpu_runtime):
    """tj_attention_forward / tj_attention_backward's checks under mutated records (an input
    path of their own): each call returns 0 or an error, never crashes."""
    q = numpy.zeros((1, 4, 9, 16), numpy.float16)
    kv = numpy.zeros((1, 2, 9, 16), numpy.float16)
    lse = numpy.zeros((1, 4, 9), numpy.float32)
    fwd, bwd = attention_records(q, kv, lse)
    rng = random.Random(2)
    for round in range(2000):
        backward = round % 2 == 1
        values = list(bwd if backward else fwd)
        mutate(values, rng)
        a = array("q", values)
        address = a.buffer_info()[0] if values else None
        fn = lib.tj_attention_backward if backward else lib.tj_attention_forward
        # The backward's ATOMIC_DQ (how dq is computed) is checked too, good values and bad.
        config = rng.choice(DQ_CONFIGS) if backward else None
        rc = fn(cpu_runtime._handle, address, len(values), round % 3 == 0, 0, float("nan"),
                config, None, 1)
        assert rc == 0 or lib.tj_last_error().decode(), (round, values)


def test_mutated_sparse_attention_records_are_errors_not_crashes(cpu_runtime):
    """tj_attention_forward_sparse / tj_attention_backward_sparse (block lists and a block size:
    their own input path) under mutated records and block sizes: 0 or an error, never a crash."""
    q = numpy.zeros((1, 4, 200, 16), numpy.float16)
    kv = numpy.zeros((1, 2, 200, 16), numpy.float16)
    lse = numpy.zeros((1, 4, 200), numpy.float32)
    counts = numpy.ones((1, 4, 2), numpy.int32)
    indices = numpy.zeros((1, 4, 2, 2), numpy.int32)
    fwd, bwd = [], []
    for t, name in ((q, "q"), (kv, "k"), (kv, "v"), (q, "o"), (lse, "lse"),
                    (counts, "block_counts"), (indices, "block_indices")):
        pack_tensor(fwd, t, name)
    for t, name in ((q, "q"), (kv, "k"), (kv, "v"), (q, "o"), (lse, "lse"), (q, "dout"),
                    (q, "dq"), (kv, "dk"), (kv, "dv"), (counts, "block_counts"),
                    (indices, "block_indices")):
        pack_tensor(bwd, t, name)
    # The backward with the forward's lists too (13 tensors: dq may go by attn_dq_sparse).
    bwd_lists = list(bwd)
    for t, name in ((counts, "forward_block_counts"), (indices, "forward_block_indices")):
        pack_tensor(bwd_lists, t, name)
    # The seeds themselves pass every check but the device's.
    for fn, seed in ((lib.tj_attention_forward_sparse, fwd), (lib.tj_attention_backward_sparse, bwd),
                     (lib.tj_attention_backward_sparse, bwd_lists)):
        for config in (None, b"ATOMIC_DQ=1") + ((b"ATOMIC_DQ=0",) if seed is bwd_lists else ()):
            a = array("q", seed)
            assert fn(cpu_runtime._handle, a.buffer_info()[0], len(seed), 128, 0, 0,
                      float("nan"), config, None, 1) != 0
            assert "host memory" in lib.tj_last_error().decode(), (len(seed), config)
    # ATOMIC_DQ=0 without the forward's lists is named; so is a 12th tensor alone.
    a = array("q", bwd)
    assert lib.tj_attention_backward_sparse(cpu_runtime._handle, a.buffer_info()[0], len(bwd),
                                            128, 0, 0, float("nan"), b"ATOMIC_DQ=0", None, 1) != 0
    assert "needs the forward's block lists" in lib.tj_last_error().decode()
    twelve = list(bwd)
    pack_tensor(twelve, counts, "forward_block_counts")
    a = array("q", twelve)
    assert lib.tj_attention_backward_sparse(cpu_runtime._handle, a.buffer_info()[0], len(twelve),
                                            128, 0, 0, float("nan"), None, None, 1) != 0
    assert "takes 11 or 13 tensors" in lib.tj_last_error().decode()
    rng = random.Random(3)
    blocks = [128, 64, 32, 16, 0, -1, 100, 1 << 40]
    for round in range(3000):
        backward = round % 3 != 0
        values = list(bwd if round % 3 == 1 else bwd_lists if backward else fwd)
        mutate(values, rng)
        a = array("q", values)
        address = a.buffer_info()[0] if values else None
        fn = lib.tj_attention_backward_sparse if backward else lib.tj_attention_forward_sparse
        config = rng.choice(DQ_CONFIGS) if backward else None
        rc = fn(cpu_runtime._handle, address, len(values), rng.choice(blocks), round % 3 == 0, 0,
                float("nan"), config, None, 1)
        assert rc == 0 or lib.tj_last_error().decode(), (round, values)


def test_mutated_gated_delta_records_are_errors_not_crashes(cpu_runtime):
    """tj_linear_attn_forward / _backward and tj_gated_delta_rule_forward / _backward under
    mutated records (their seeds are valid calls that stop at the device check): each call
    returns 0 or an error with a message, never crashes."""
    qk = numpy.zeros((1, 9, 2, 16), numpy.float16)
    v = numpy.zeros((1, 9, 2, 8), numpy.float16)
    gate = numpy.zeros((1, 9, 2), numpy.float32)
    state = numpy.zeros((1, 2, 16, 8), numpy.float32)
    seeds = []
    for fn, tensors, extra in (
            (lib.tj_linear_attn_forward, ((qk, "q"), (qk, "k"), (v, "v"), (v, "o")), ()),
            (lib.tj_linear_attn_backward, ((qk, "q"), (qk, "k"), (v, "v"), (v, "dout"),
                                           (qk, "dq"), (qk, "dk"), (v, "dv")), ()),
            (lib.tj_gated_delta_rule_forward, ((qk, "q"), (qk, "k"), (v, "v"), (gate, "g"),
                                               (gate, "beta"), (v, "o"), (state, "ht"),
                                               (state, "h0")), (1, None, 0, 1, 16)),
            (lib.tj_gated_delta_rule_backward, ((qk, "q"), (qk, "k"), (v, "v"), (gate, "g"),
                                                (gate, "beta"), (v, "dout"), (qk, "dq"),
                                                (qk, "dk"), (v, "dv"), (gate, "dg"),
                                                (gate, "dbeta"), (state, "dh0"), (state, "h0"),
                                                (state, "dht")), (1, 1, None, 0, 1, 32))):
        packed = []
        for t, name in tensors:
            pack_tensor(packed, t, name)
        seeds.append((fn, packed, extra))
    rng = random.Random(3)
    for round in range(2000):
        fn, seed, extra = seeds[round % len(seeds)]
        values = list(seed)
        if round >= len(seeds):  # the seeds first, as they are
            mutate(values, rng)
        a = array("q", values)
        address = a.buffer_info()[0] if values else None
        rc = fn(cpu_runtime._handle, address, len(values), *extra, float("nan"), None, None, 1)
        message = lib.tj_last_error().decode()
        assert rc == 0 or message, (round, values)
        if round < len(seeds):
            assert "is in host memory" in message, (round, message)


def test_mutated_cu_seqlens_are_errors_not_crashes(cpu_runtime):
    """tj_gated_delta_rule_forward / _backward with valid tensors (host arrays: a valid call
    stops at the device check) and mutated cu_seqlens (entries out of order, out of range,
    huge, a NULL array with a count, negative counts): an error with a message every time."""
    qk = numpy.zeros((1, 9, 2, 16), numpy.float16)
    v = numpy.zeros((1, 9, 2, 8), numpy.float16)
    gate = numpy.zeros((1, 9, 2), numpy.float32)
    state = numpy.zeros((3, 2, 16, 8), numpy.float32)
    fwd, bwd = [], []
    for t, name in ((qk, "q"), (qk, "k"), (v, "v"), (gate, "g"), (gate, "beta"), (v, "o"),
                    (state, "ht")):
        pack_tensor(fwd, t, name)
    for t, name in ((qk, "q"), (qk, "k"), (v, "v"), (gate, "g"), (gate, "beta"), (v, "dout"),
                    (qk, "dq"), (qk, "dk"), (v, "dv"), (gate, "dg"), (gate, "dbeta"),
                    (state, "dh0")):
        pack_tensor(bwd, t, name)
    fa, ba = array("q", fwd), array("q", bwd)
    rng = random.Random(5)
    specials = [0, 1, -1, 9, 10, 2 ** 31, -2 ** 63, 2 ** 63 - 1]
    for round in range(3000):
        cu = [0, 4, 4, 9]  # three sequences, one empty: valid for T = 9
        count = len(cu)
        if round:
            for _ in range(rng.randint(1, 3)):
                what = rng.random()
                if what < 0.5:
                    cu[rng.randrange(len(cu))] = rng.choice(specials + [rng.randint(-20, 20)])
                elif what < 0.7:
                    cu.insert(rng.randrange(len(cu) + 1), rng.randint(0, 9))
                elif what < 0.8 and len(cu) > 1:
                    cu.pop(rng.randrange(len(cu)))
                elif what < 0.9:
                    count = rng.choice([-1, 0, len(cu) + 1, 2 ** 40])
            count = min(count, len(cu)) if count > 0 and rng.random() < 0.5 else count
        c = array("q", cu)
        address = c.buffer_info()[0] if cu and rng.random() < 0.95 else None
        if count > len(cu):
            address = None  # never read past the array: the NULL case instead
        for fn, a, extra in ((lib.tj_gated_delta_rule_forward, fa, (0,)),
                             (lib.tj_gated_delta_rule_backward, ba, (0, 0))):
            rc = fn(cpu_runtime._handle, a.buffer_info()[0], len(a), *extra, address, count, 1,
                    16, float("nan"), None, None, 1)
            message = lib.tj_last_error().decode()
            assert rc != 0 and message, (round, cu, count)
            if round == 0:
                assert "is in host memory" in message, message


def test_mutated_hbv_records_are_errors_not_crashes(cpu_runtime):
    """tj_hbv_forward / tj_hbv_backward (and their training flag, segment, starts and work
    buffers: an input path of their own) under mutated records and segment values: each call returns 0 or an
    error with a message, never crashes. The seeds are valid calls that stop at the device
    check."""
    B, T = 37, 19
    bt = numpy.zeros((B, T), numpy.float32)
    params = numpy.zeros((B, 12), numpy.float32)
    starts = numpy.zeros((2, 3, 5, 32), numpy.float32)  # segment 8: cdiv(19, 8) = 3
    fwd, fwd_starts, bwd, bwd_starts = [], [], [], []
    for t, name in ((bt, "P"), (bt, "TEMP"), (bt, "PET"), (params, "params"), (bt, "Q")):
        pack_tensor(fwd, t, name)
    fwd_starts = list(fwd)
    pack_tensor(fwd_starts, starts, "starts")
    for t, name in ((bt, "P"), (bt, "TEMP"), (bt, "PET"), (params, "params"), (bt, "dQ"),
                    (bt, "d_P"), (bt, "d_TEMP"), (bt, "d_PET"), (params, "d_params")):
        pack_tensor(bwd, t, name)
    bwd_starts = list(bwd)
    pack_tensor(bwd_starts, starts, "starts")
    bwd_work = list(bwd_starts)  # the segment form's work buffers at segment 8
    pack_tensor(bwd_work, numpy.zeros((2, 3, 8, 5, 32), numpy.float32), "tape")
    pack_tensor(bwd_work, numpy.zeros((2, 3, 30, 32), numpy.float32), "maps")
    # Components per basin in one kernel: params [B, 12, 16], states [19, 1, 5, 2, 16].
    p16 = numpy.zeros((B, 12, 16), numpy.float32)
    fwd16, bwd16 = [], []
    for t, name in ((bt, "P"), (bt, "TEMP"), (bt, "PET"), (p16, "params"), (bt, "Q")):
        pack_tensor(fwd16, t, name)
    pack_tensor(fwd16, numpy.zeros((19, 1, 5, 2, 16), numpy.float32), "starts")
    for t, name in ((bt, "P"), (bt, "TEMP"), (bt, "PET"), (p16, "params"), (bt, "dQ"),
                    (bt, "d_P"), (bt, "d_TEMP"), (bt, "d_PET"), (p16, "d_params")):
        pack_tensor(bwd16, t, name)
    pack_tensor(bwd16, numpy.zeros((19, 1, 5, 2, 16), numpy.float32), "starts")
    seeds = [(lib.tj_hbv_forward, fwd, (0, -1, 0)), (lib.tj_hbv_forward, fwd, (1, 0, 0)),
             (lib.tj_hbv_forward, fwd_starts, (1, 8, 1)), (lib.tj_hbv_backward, bwd, (-1, 0, 0)),
             (lib.tj_hbv_backward, bwd_starts, (8, 1, 0)),
             (lib.tj_hbv_backward, bwd_work, (8, 1, 1)),
             (lib.tj_hbv_forward, fwd16, (1, 0, 1)), (lib.tj_hbv_backward, bwd16, (0, 1, 0))]
    segments = [-1, 0, 8, 16, 256, 9, -2, 1 << 40]
    rng = random.Random(5)
    for round in range(2000):
        fn, seed, extra = seeds[round % len(seeds)]
        values = list(seed)
        if round >= len(seeds):  # the seeds first, as they are
            mutate(values, rng)
            extra = list(extra)
            if rng.randrange(3) == 0:  # the segment, or the flags
                where = 1 if fn is lib.tj_hbv_forward else 0
                extra[where] = rng.choice(segments)
            if rng.randrange(4) == 0:  # a flag flipped: the record no longer matches it
                at = rng.randrange(1, len(extra))
                extra[at] = 1 - extra[at]
        a = array("q", values)
        address = a.buffer_info()[0] if values else None
        rc = fn(cpu_runtime._handle, address, len(values), *extra, None, None, 1)
        message = lib.tj_last_error().decode()
        assert rc == 0 or message, (round, values, extra)
        if round < len(seeds):
            assert "is in host memory" in message, (round, message)


def test_mutated_ring_attention_records_are_errors_not_crashes(cpu_runtime):
    """tj_ring_attention_forward / _backward's checks (check_only, no ring needed) under
    mutated records, and a real call without a ring: an error, never a crash."""
    q = numpy.zeros((1, 4, 10, 16), numpy.float16)
    kv = numpy.zeros((1, 2, 10, 16), numpy.float16)
    lse = numpy.zeros((1, 4, 10), numpy.float32)
    fwd, bwd = attention_records(q, kv, lse)
    rng = random.Random(5)
    for round in range(2000):
        backward = round % 2 == 1
        values = list(bwd if backward else fwd)
        if round > 1:
            mutate(values, rng)
        a = array("q", values)
        address = a.buffer_info()[0] if values else None
        fn = lib.tj_ring_attention_backward if backward else lib.tj_ring_attention_forward
        rc = fn(cpu_runtime._handle, None, address, len(values), round % 3 == 0, float("nan"),
                None, round % 5 != 0)
        assert rc == 0 or lib.tj_last_error().decode(), (round, values)
        if round % 5 == 0:  # not check_only, and no ring: refused by name
            assert rc == -1
