"""Typed operations, one per workload: the workload's DSL kernel on your tensors, checked
tensor by tensor (device, dtype, shape, strides) with errors that name the tensor, outputs
allocated like the inputs when not given, launched on the current CUDA stream with the tuned
configuration of the runtime's database."""

import math

from array import array

from . import _fastpath
from ._args import config_text, pack_tensors
from ._native import TilejitError, lib, raise_last_error
from ._stream import current_stream
from .runtime import default_runtime

_PAGED_SPARSE_NAMES = ("q", "k_cache", "v_cache", "block_table", "seq_lens", "kept_idx",
                       "kept_len", "o", "lse")
_decode = lib.tj_paged_sparse_decode


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
    1/sqrt(D). `out`/`lse` are written when given. `check_only`: the checks alone (no GPU).
    Every check is the C++ op's (<tilejit/ops.h>), so C++ and Python say the same."""
    if out is None or lse is None:
        q_shape = _shape(q)
        if q_shape is not None and len(q_shape) == 3:
            if out is None:
                out = _empty(q, q_shape)
            if lse is None:
                lse = _empty(q, q_shape[:2], dtype_of_like=False)
        else:  # q is not a rank-3 tensor: the checks name it
            out = q if out is None else out
            lse = q if lse is None else lse
    if scale is None:
        scale = math.nan
    elif not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise TilejitError(f"paged_sparse_decode: scale = {scale!r} is not a finite number")
    tensors = (q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len, out, lse)
    handle = (runtime or default_runtime())._handle
    config = config_text(config) if config else None
    if _fastpath.fast is not None and _fastpath.fast.paged_sparse_decode(
            handle, tensors, scale, config, stream, check_only) is not NotImplemented:
        return out, lse
    packed, device = pack_tensors(tensors, _PAGED_SPARSE_NAMES)
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    if _decode(handle, buf.buffer_info()[0], len(packed), scale, config, stream,
               1 if check_only else 0):
        raise_last_error()
    return out, lse
