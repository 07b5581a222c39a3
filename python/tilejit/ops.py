"""Typed operations, one per workload: the workload's DSL kernel on your tensors, checked
tensor by tensor (device, dtype, shape, strides) with errors that name the tensor, outputs
allocated like the inputs when not given, launched on the current CUDA stream with the tuned
configuration of the runtime's database."""

import math

from ._args import as_int64_array, config_text, pack_tensor
from ._native import TilejitError, check, lib
from ._stream import current_stream

_PAGED_SPARSE_INPUTS = ("q", "k_cache", "v_cache", "block_table", "seq_lens", "kept_idx",
                        "kept_len")


def _empty(like, shape, dtype_of_like=True):
    """A new tensor of `shape` beside `like` (torch or NumPy): like's dtype, or float32."""
    if hasattr(like, "new_empty"):  # torch
        import torch
        return like.new_empty(shape, dtype=like.dtype if dtype_of_like else torch.float32)
    import numpy
    return numpy.empty(shape, dtype=like.dtype if dtype_of_like else numpy.float32)


def _shape(t):
    shape = getattr(t, "shape", None)
    return tuple(shape) if shape is not None else None


def paged_sparse_decode(q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len, *,
                        scale=None, out=None, lse=None, config=None, stream=None, runtime=None,
                        check_only=False):
    """Sparse decode attention over a paged KV cache (WORKLOADS.md section 1).

    q [B, Hq, D] f16/bf16; k_cache, v_cache [pages, page_size, Hkv, D] (q's dtype);
    block_table [B, max_pages], seq_lens [B], kept_idx [B, Hkv, max_kept] (ascending token
    positions), kept_len [B, Hkv], all int32. Returns (o [B, Hq, D] in q's dtype, lse [B, Hq]
    float32, natural log, -inf where nothing is kept and o = 0 there). scale defaults to
    1/sqrt(D). `out`/`lse` are written when given. `check_only`: the checks alone (no GPU)."""
    from . import runtime as default_runtime
    args = (q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len)
    q_shape = _shape(q)
    if out is None and q_shape is not None and len(q_shape) == 3:
        out = _empty(q, q_shape)
    if lse is None and q_shape is not None and len(q_shape) == 3:
        lse = _empty(q, q_shape[:2], dtype_of_like=False)
    if out is None or lse is None:  # q is not a rank-3 tensor: let the checks name it
        out = out if out is not None else q
        lse = lse if lse is not None else q
    if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise TilejitError(f"paged_sparse_decode: scale = {scale!r} is not a finite number")
    packed = []
    device = -1
    for value, name in zip(args + (out, lse), _PAGED_SPARSE_INPUTS + ("o", "lse")):
        d = pack_tensor(packed, value, name)
        if device < 0:
            device = d
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf, address = as_int64_array(packed)
    rt = (runtime or default_runtime())._handle
    check(lib.tj_paged_sparse_decode(rt, address, len(packed),
                                     math.nan if scale is None else float(scale),
                                     config_text(config), stream, int(bool(check_only))))
    return out, lse
