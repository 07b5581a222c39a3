"""Ring attention's Python surface without a GPU or NCCL: the checks name the tensor
(check_only), the zigzag positions, and what cannot be made (a bad id, no ring, a bad device
ordinal) says why."""

import numpy
import pytest

import tilejit
from tilejit import TilejitError, ops


def tensors(n=10, d=16, hq=4, hkv=2, dtype=numpy.float16):
    q = numpy.zeros((1, hq, n, d), dtype)
    kv = numpy.zeros((1, hkv, n, d), dtype)
    return q, kv, kv.copy()


def test_checks_name_the_tensor():
    q, k, v = tensors()
    with pytest.raises(TilejitError, match="host memory"):  # good shapes reach the device check
        ops.ring_attention_forward(q, k, v, ring=None, check_only=True)
    q7, k7, v7 = tensors(n=7)
    with pytest.raises(TilejitError, match="tensor 'q'.*not two equal zigzag chunks"):
        ops.ring_attention_forward(q7, k7, v7, ring=None, check_only=True)
    strided = numpy.zeros((1, 10, 2, 16), numpy.float16).transpose(0, 2, 1, 3)
    with pytest.raises(TilejitError, match="tensor 'k'"):
        ops.ring_attention_forward(q, strided, v, ring=None, check_only=True)
    k3 = numpy.zeros((1, 3, 10, 16), numpy.float16)
    with pytest.raises(TilejitError, match="GQA"):
        ops.ring_attention_forward(q, k3, k3, ring=None, check_only=True)
    with pytest.raises(TilejitError, match="causal"):
        ops.ring_attention_forward(q, k, v, ring=None, causal=1, check_only=True)
    o = numpy.zeros_like(q)
    lse = numpy.zeros((1, 4, 10), numpy.float32)
    with pytest.raises(TilejitError, match="tensor 'dout'"):
        ops.ring_attention_backward(q, k, v, o, lse, o.astype(numpy.float32), ring=None,
                                    check_only=True)


def test_a_call_without_a_ring_and_a_bad_ring_are_named():
    q, k, v = tensors()
    with pytest.raises(TilejitError, match="no ring"):
        ops.ring_attention_forward(q, k, v, ring=None)
    with pytest.raises(TilejitError, match="RingGroup"):
        ops.ring_attention_forward(q, k, v, ring="ring")


def test_positions_and_shards():
    assert ops.ring_positions(60, 3, 0) == [(0, 10), (50, 60)]
    assert ops.ring_positions(60, 3, 2) == [(20, 30), (30, 40)]
    with pytest.raises(TilejitError, match="2 \\* world = 6"):
        ops.ring_positions(61, 3, 0)


def test_a_group_that_cannot_be_made_says_why():
    with pytest.raises(TilejitError, match="128 bytes"):
        ops.RingGroup(b"short", 2, 0)
    with pytest.raises(TilejitError, match="world"):
        ops.RingGroup(bytes(128), True, 0)
    with pytest.raises(TilejitError, match="rank 2 is not one of"):
        ops.RingGroup(bytes(128), 2, 2)
    # A well-formed id with NCCL present would wait for the other rank: left to the C++ test
    # (RingAttentionOps.ARingThatCannotBeMadeSaysWhy), which checks "NCCL not found" only where
    # NCCL cannot be loaded.


def test_runtime_device_ordinal_is_checked():
    with pytest.raises(TilejitError, match="device"):
        tilejit.Runtime(device=-1)
    with pytest.raises(TilejitError, match="device"):
        tilejit.Runtime(device="cuda:1")


def test_a_bad_nccl_path_is_named():
    """TILEJIT_NCCL_LIBRARY pointing nowhere: the id call says where it looked (in a fresh
    process: the library is looked for once per process)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, TILEJIT_NCCL_LIBRARY="/nonexistent/libnccl.so.2",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = ("import tilejit\n"
            "try:\n"
            "    tilejit.ops.RingGroup.new_id()\n"
            "except tilejit.TilejitError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "NCCL not found (tried /nonexistent/libnccl.so.2)" in out.stdout, out.stdout + out.stderr
