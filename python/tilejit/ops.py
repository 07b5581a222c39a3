"""Typed operations, one per workload: the workload's DSL kernel on your tensors, checked
tensor by tensor (device, dtype, shape, strides) with errors that name the tensor, outputs
allocated like the inputs when not given, launched on the current CUDA stream with the tuned
configuration of the runtime's database."""

import ctypes
import math

from array import array

from . import _fastpath
from ._args import I32, config_text, pack_tensors
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
    handle = (runtime or default_runtime(_device_index(q)))._handle
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


# ---- dequant_gemm: weight-only int4 (GPTQ) and int8 linears (WORKLOADS.md section 2) ----------

class Int4Weights:
    """repack_int4's result: GPTQ int4 weights in the packed form dequant_linear reads
    (device tensors), and how they were made. qweight_t [N, K/8] int32 (8 consecutive k of one
    column per word, interleaved: k 8j + i in nibble i / 2 + 4 * (i % 2); K permuted), scales [K/G, N], qzeros [K/G, N/8] int32, perm [K] int32
    (packed row k is GPTQ row perm[k]), group G (one group is kept as groups of 128), act_order."""

    __slots__ = ("qweight_t", "scales", "qzeros", "perm", "group", "act_order")

    def __init__(self, qweight_t, scales, qzeros, perm, group, act_order):
        self.qweight_t, self.scales, self.qzeros, self.perm = qweight_t, scales, qzeros, perm
        self.group, self.act_order = group, act_order

    def __repr__(self):
        n, kw = _shape(self.qweight_t) or (None, None)
        return (f"Int4Weights(N={n}, K={kw * 8 if kw is not None else None}, group={self.group}, "
                f"act_order={self.act_order})")


def _new(like, shape, dtype_of):
    """A new tensor of `shape` beside `like` with `dtype_of`'s dtype (torch or NumPy)."""
    if hasattr(like, "new_empty"):
        return like.new_empty(shape, dtype=dtype_of.dtype)
    import numpy
    return numpy.empty(shape, dtype=dtype_of.dtype)


def _check_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TilejitError(f"{what} = {value!r} is not an integer")
    return value


def repack_int4(qweight, scales, qzeros, g_idx=None, group_size=128, *, stream=None,
                runtime=None, check_only=False):
    """Repacks GPTQ int4 weights once (like a model load) for dequant_linear.

    qweight [K/8, N] int32 (8 consecutive k per int32, nibble i = bits 4i..4i+3), scales
    [K/G, N] f16/bf16, qzeros [K/G, N/8] int32 (packed along N, used as stored), group_size G
    in 32, 64, 128 or -1 (one group), g_idx [K] int32 for act-order (each group holding G rows,
    as GPTQ writes them). Returns Int4Weights (new tensors beside qweight). Errors name the
    tensor; the checks are the C++ op's (<tilejit/ops.h>). `check_only`: the checks alone."""
    _check_int(group_size, "repack_int4: group_size")
    shape = _shape(qweight)
    if shape is not None and len(shape) == 2 and _shape(scales) is not None:
        k, n = shape[0] * 8, shape[1]
        g = 128 if group_size < 0 else max(group_size, 1)
        groups = (k + g - 1) // g
        outs = (_new(qweight, (n, shape[0]), qweight), _new(scales, (groups, n), scales),
                _new(qzeros, (groups, (n + 7) // 8), qweight), _new(qweight, (k,), qweight))
    else:  # qweight or scales is not a tensor of rank 2: the checks name it
        outs = (qweight,) * 4
    first, device = pack_tensors((qweight, scales, qzeros), ("qweight", "scales", "qzeros"))
    handle = (runtime or default_runtime(device))._handle
    if g_idx is None:
        middle = [I32, 0]
    else:
        middle, _ = pack_tensors((g_idx,), ("g_idx",))
    last, _ = pack_tensors(outs, ("qweight_t", "scales_out", "qzeros_out", "perm"))
    packed = first + middle + last
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    if lib.tj_repack_int4(handle, buf.buffer_info()[0], len(packed), group_size, stream,
                          1 if check_only else 0):
        raise_last_error()
    return Int4Weights(*outs, 128 if group_size < 0 else group_size, g_idx is not None)


def dequant_linear(x, weights, *, out=None, config=None, stream=None, runtime=None,
                   check_only=False):
    """y [M, N] = x [M, K] @ W^T for int4 weights from repack_int4; x f16/bf16 (the scales'
    dtype), f32 accumulation, the tuned configuration of the runtime's database. `out` is
    written when given. Errors name the tensor (x's K against the weights', y's shape...)."""
    if not isinstance(weights, Int4Weights):
        raise TilejitError(f"dequant_linear: weights must come from tilejit.ops.repack_int4, "
                           f"not {type(weights).__name__}")
    if out is None:
        xs, ws = _shape(x), _shape(weights.qweight_t)
        out = _new(x, (xs[0], ws[0]), x) if xs and ws and len(xs) == 2 and len(ws) == 2 else x
    tensors = (x, weights.qweight_t, weights.scales, weights.qzeros, weights.perm, out)
    packed, device = pack_tensors(tensors, ("x", "weights.qweight_t", "weights.scales",
                                            "weights.qzeros", "weights.perm", "y"))
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    if lib.tj_dequant_linear((runtime or default_runtime(device))._handle, buf.buffer_info()[0],
                             len(packed), weights.group, 1 if weights.act_order else 0,
                             config_text(config) if config else None, stream,
                             1 if check_only else 0):
        raise_last_error()
    return out


def int8_linear(x, w, scales, *, out=None, config=None, stream=None, runtime=None,
                check_only=False):
    """y [M, N] = x [M, K] @ (w * scales[:, None])^T: w [N, K] int8, scales [N] and x f16/bf16,
    f32 accumulation. `out` is written when given; errors name the tensor."""
    if out is None:
        xs, ws = _shape(x), _shape(w)
        out = _new(x, (xs[0], ws[0]), x) if xs and ws and len(xs) == 2 and len(ws) == 2 else x
    packed, device = pack_tensors((x, w, scales, out), ("x", "w", "scales", "y"))
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    if lib.tj_int8_linear((runtime or default_runtime(device))._handle, buf.buffer_info()[0],
                          len(packed), config_text(config) if config else None, stream,
                          1 if check_only else 0):
        raise_last_error()
    return out


def _device_index(t):
    """The CUDA device of a torch tensor (0 for anything else): whose default runtime runs it."""
    get = getattr(t, "get_device", None)
    return max(get(), 0) if callable(get) else 0


def _scale_arg(op, scale):
    if scale is None:
        return math.nan
    if isinstance(scale, bool) or not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise TilejitError(f"{op}: scale = {scale!r} is not a finite number")
    return float(scale)


def _flag(op, name, value):
    if not isinstance(value, bool):
        raise TilejitError(f"{op}: {name} = {value!r} must be True or False")
    return 1 if value else 0


def _mask_shape(op, block_mask):
    """The shape of a block mask given as a tensor: 4 dimensions, square, not floating point."""
    shape = _shape(block_mask)
    if shape is None:
        raise TilejitError(f"{op}: block_mask is a {type(block_mask).__name__}, not a tensor")
    name = f"tensor 'block_mask' {list(shape)}"
    if len(shape) != 4 or shape[2] != shape[3]:
        raise TilejitError(f"{op}: {name} must have 4 dimensions [B or 1, Hq or 1, NB, NB]")
    dtype = getattr(block_mask, "dtype", None)
    if getattr(dtype, "is_floating_point", False) or getattr(dtype, "kind", None) in ("f", "c"):
        raise TilejitError(f"{op}: {name} is {dtype}: a block mask is bool (or integer, "
                           f"nonzero = kept)")
    return shape


def _mask_block(op, block_mask, q):
    """The block (128 or 64 positions) a mask [B or 1, Hq or 1, NB, NB] means for q's sequence
    (NB = cdiv(N, block)), its batch, heads and device checked against q's."""
    shape = _mask_shape(op, block_mask)
    name = f"tensor 'block_mask' {list(shape)}"
    qs = _shape(q)
    if qs is None or len(qs) != 4:
        raise TilejitError(f"{op}: q must have 4 dimensions [B, Hq, N, D] to take a block_mask")
    for dim, what, size in ((0, "batch B", qs[0]), (1, "heads Hq", qs[1])):
        if shape[dim] not in (1, size):
            raise TilejitError(f"{op}: {name} has {shape[dim]} in dimension {dim} but must "
                               f"have 1 or q's {what} = {size}")
    n, nb = qs[2], shape[3]
    block = next((b for b in (128, 64) if (n + b - 1) // b == nb), None)
    if block is None:
        raise TilejitError(f"{op}: {name} has NB = {nb} blocks a side, but N = {n} makes "
                           f"{(n + 127) // 128} blocks of 128 or {(n + 63) // 64} of 64")
    device = getattr(block_mask, "device", None)
    if device is not None and getattr(q, "device", device) != device:
        raise TilejitError(f"{op}: {name} is on {device} but q is on {q.device}")
    return block


def _mask_lists(block_mask, transpose):
    """(counts, indices) of a checked mask: per row of blocks (a query block; a key block when
    `transpose`), how many blocks it keeps and which, kept ones first (the kernels' lists).
    torch tensors stay on their device (no sync); numpy arrays are for the host-side checks."""
    if hasattr(block_mask, "dim"):  # torch
        import torch
        m = block_mask.to(torch.bool)
        if transpose:
            m = m.transpose(-1, -2)
        counts = m.sum(-1, dtype=torch.int32).contiguous()
        indices = torch.argsort((~m).to(torch.int8), dim=-1, stable=True).to(torch.int32)
        return counts, indices.contiguous()
    import numpy
    m = numpy.asarray(block_mask).astype(bool)
    if transpose:
        m = numpy.swapaxes(m, -1, -2)
    counts = numpy.ascontiguousarray(m.sum(-1).astype(numpy.int32))
    indices = numpy.argsort(~m, axis=-1, kind="stable").astype(numpy.int32)
    return counts, numpy.ascontiguousarray(indices)


class BlockMask:
    """A block mask for block-sparse attention whose kernel lists are built once and kept, as
    flex_attention's BlockMask: `bm = tilejit.ops.BlockMask(mask)` with `mask` a boolean (or
    integer, nonzero = kept) [B or 1, Hq or 1, NB, NB] tensor, then `block_mask=bm` wherever
    attention, attention_forward and attention_backward take the tensor. A call with the tensor
    builds the per-query-block lists (and the backward the per-key-block ones too) every time,
    a few small launches and their Python; one with a BlockMask builds each once, and on Hopper
    (16-bit q, head dims of 64 or 128, blocks of 128, at most 30% of the blocks kept) also the
    forward's work list (work_list: 32 bytes per kept block), with which the forward runs one
    pipeline per multiprocessor across its tiles (attn_fwd_sparse_items: 1.1x at 10%). It keeps
    a copy of the mask taken when made: changing the tensor afterwards changes nothing here
    (make a new BlockMask). The torch.library ops (torch.ops.tilejit.*) take the tensor only."""

    def __init__(self, mask):
        _mask_shape("BlockMask", mask)
        if hasattr(mask, "dim"):  # torch: a copy on its device
            self.mask = mask.detach().clone()
            # Its kept blocks and rows keeping none, read once here (two synchronisations), so
            # that the forward's work list is sized and chosen later without one (calls may be
            # captured in a CUDA graph).
            kept_rows = (self.mask != 0).sum(-1)
            self._kept = int(kept_rows.sum())
            self._empty_rows = int((kept_rows == 0).sum())
        else:
            import numpy
            self.mask = numpy.array(mask, copy=True)
        self._lists = {}
        self._work_lists = {}

    @property
    def shape(self):
        return tuple(_shape(self.mask))

    def __repr__(self):
        return f"tilejit.ops.BlockMask({list(self.shape)})"

    def lists(self, op, q, transpose):
        """(block, counts, indices) for q's sequence: checked against q at every call; the
        lists (which do not depend on the block) built at the first call of each direction."""
        block = _mask_block(op, self.mask, q)
        if transpose not in self._lists:
            self._lists[transpose] = _mask_lists(self.mask, transpose)
        return (block,) + self._lists[transpose]

    def work_list(self, q, k):
        """The forward's (items, bounds) for q and k (ops.h: AttentionItems), built at the first
        call of each shape and device, or None where the forward would not take it (blocks of
        64, f32, head dims not rounding to 64 or 128, a GPU other than Hopper) or it would not
        pay (over 30% of the blocks kept, or more than 4M items)."""
        if not (hasattr(q, "is_cuda") and hasattr(k, "is_cuda") and q.dim() == 4
                and k.dim() == 4 and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0):
            return None  # not torch on the GPU, or bad shapes (the op's checks name them)
        key = (tuple(q.shape), k.shape[1], str(q.device))
        if key not in self._work_lists:
            self._work_lists[key] = _work_list(self, q, k)
        return self._work_lists[key]


# The work list's limits: where attn_fwd_sparse_items was faster (10% of the blocks: 1.10x;
# 25%: 1.03x; 50%: 0.98x) and its rows' memory (32 bytes each) stays small.
_WORK_LIST_DENSITY = 0.3
_WORK_LIST_ITEMS = 4 << 20


def _work_list(block_mask, q, k):
    """(items i32 [E, 8], bounds i32 [P + 1]) of a BlockMask for q and k, or None (BlockMask.
    work_list). The query tiles (b * Hq + h) * NB + i are dealt to P programs (the GPU's
    multiprocessors) in turn, tile t to program t % P: the tiles in flight at once are
    neighbours, which share their head's keys in L2. A program's items are its tiles' kept
    blocks in order, a tile that keeps none one item at row -128."""
    if not hasattr(block_mask.mask, "dim"):
        return None
    import torch
    if not (q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)):
        return None
    if torch.cuda.get_device_capability(q.device)[0] != 9:
        return None
    b, hq, n, d = q.shape
    if ((d + 15) // 16 * 16) not in (64, 128) or block_mask.mask.shape[3] != (n + 127) // 128:
        return None
    counts, indices = block_mask.lists("attention_forward", q, False)[1:]
    nb = indices.shape[3]
    mb, mh = counts.shape[0], counts.shape[1]
    # The mask's counts (BlockMask.__init__) repeated over the batches and heads it broadcasts
    # to: the list's length, known without a synchronisation.
    repeat = (b // mb) * (hq // mh)
    kept, items_total = block_mask._kept * repeat, (block_mask._kept + block_mask._empty_rows) * repeat
    if kept > _WORK_LIST_DENSITY * b * hq * nb * nb or items_total > _WORK_LIST_ITEMS:
        return None
    dev = q.device
    bi = torch.arange(b, device=dev).clamp(max=mb - 1)
    hi = torch.arange(hq, device=dev).clamp(max=mh - 1)
    c = counts.to(dev)[bi][:, hi].reshape(-1).clamp(0, nb).long()
    ix = indices.to(dev)[bi][:, hi].reshape(-1, nb).long()
    ix[:, 0] = torch.where(c == 0, -1, ix[:, 0])
    c = c.clamp(min=1)
    tiles = c.numel()
    programs = torch.cuda.get_device_properties(dev).multi_processor_count
    t = torch.arange(tiles, device=dev)
    order = torch.argsort((t % programs) * tiles + t // programs)
    co = c[order]
    # Item e: the seg-th tile of the order, its slot e - (the tile's first item).
    seg = torch.repeat_interleave(torch.arange(tiles, device=dev), co, output_size=items_total)
    first = torch.cumsum(co, 0) - co
    tile = order[seg]
    j = ix[tile, torch.arange(items_total, device=dev) - first[seg]] * 128
    bb = tile // (nb * hq)
    hh = tile // nb % hq
    zero = torch.zeros_like(tile)
    items = torch.stack([bb, hh, hh // (hq // k.shape[1]), tile % nb * 128, j, tile, zero, zero],
                        1).to(torch.int32).contiguous()
    per = torch.zeros(programs, dtype=torch.long, device=dev)
    per.index_add_(0, order % programs, co)
    bounds = torch.zeros(programs + 1, dtype=torch.int32, device=dev)
    bounds[1:] = torch.cumsum(per, 0).to(torch.int32)
    return items, bounds


def _block_lists(op, block_mask, q, transpose):
    """(block, counts, indices) of a block mask [B or 1, Hq or 1, NB, NB] over q's sequence in
    blocks of 128 or 64 positions (NB = cdiv(N, 128) or cdiv(N, 64)): per row of blocks (a query
    block; a key block when `transpose`), how many blocks it keeps and which, kept ones first
    (the kernels' lists); a BlockMask's kept lists."""
    if isinstance(block_mask, BlockMask):
        return block_mask.lists(op, q, transpose)
    block = _mask_block(op, block_mask, q)
    return (block,) + _mask_lists(block_mask, transpose)


def _attention_call(op, dense_fn, sparse_fn, tensors, names, causal, exact, scale, block_mask,
                    transpose, config, stream, runtime, check_only):
    """The C ABI call shared by attention_forward and attention_backward: the tensors packed
    (and, with a block_mask, its lists: per query block, or per key block when `transpose`,
    then the per-query-block lists too, so that the backward may compute dq by
    attn_dq_sparse)."""
    flags = (_flag(op, "causal", causal), _flag(op, "exact", exact))
    blocks = None if block_mask is None else _block_lists(op, block_mask, tensors[0], transpose)
    if blocks is not None:
        tensors += blocks[1:]
        names += ("block_counts", "block_indices")
        work = (block_mask.work_list(tensors[0], tensors[1])
                if isinstance(block_mask, BlockMask) and not transpose and not exact else None)
        if work is not None:
            tensors += work
            names += ("block_items", "block_bounds")
        if transpose:
            tensors += _block_lists(op, block_mask, tensors[0], False)[1:]
            names += ("forward_block_counts", "forward_block_indices")
    packed, device = pack_tensors(tensors, names)
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    rest = (flags[0], flags[1], _scale_arg(op, scale), config_text(config) if config else None,
            stream, 1 if check_only else 0)
    handle = (runtime or default_runtime(device))._handle
    if blocks is not None:
        failed = sparse_fn(handle, buf.buffer_info()[0], len(packed), blocks[0], *rest)
    else:
        failed = dense_fn(handle, buf.buffer_info()[0], len(packed), *rest)
    if failed:
        raise_last_error()


def attention_forward(q, k, v, *, causal=False, scale=None, exact=False, block_mask=None,
                      out=None, lse=None, config=None, stream=None, runtime=None,
                      check_only=False):
    """FlashAttention forward (WORKLOADS.md section 3): q [B, Hq, N, D], k and v [B, Hkv, N, D]
    (Hq a multiple of Hkv), f16/bf16/f32 (f32 on TF32 tensor cores, or 3xTF32 with exact=True),
    D a multiple of 8 up to 256, last dimension contiguous. Returns (o like q, lse [B, Hq, N]
    float32, natural log). scale defaults to 1/sqrt(D) (a given one >= 0). block_mask: a boolean
    [B or 1, Hq or 1, NB, NB] over blocks of 128 (or 64) positions; masked blocks are skipped,
    and a row that keeps no key gets o = 0, lse = -inf. Errors name the tensor."""
    op = "attention_forward"
    qs = _shape(q)
    if out is None:
        out = _empty(q, qs) if qs is not None and len(qs) == 4 else q
    if lse is None:
        lse = _empty(q, qs[:3], dtype_of_like=False) if qs is not None and len(qs) == 4 else q
    _attention_call(op, lib.tj_attention_forward, lib.tj_attention_forward_sparse,
                    (q, k, v, out, lse), ("q", "k", "v", "o", "lse"), causal, exact, scale,
                    block_mask, False, config, stream, runtime, check_only)
    return out, lse


def attention_backward(q, k, v, o, lse, dout, *, causal=False, scale=None, exact=False,
                       block_mask=None, dq=None, dk=None, dv=None, config=None, stream=None,
                       runtime=None, check_only=False):
    """The gradients (dq, dk, dv) of sum(dout * o) for (o, lse) = attention_forward(q, k, v)
    with the same causal, scale, exact and block_mask; dk and dv are summed over each GQA
    group."""
    op = "attention_backward"
    qs, ks = _shape(q), _shape(k)
    if dq is None:
        dq = _empty(q, qs) if qs is not None and len(qs) == 4 else q
    if dk is None:
        dk = _empty(k, ks) if ks is not None and len(ks) == 4 else k
    if dv is None:
        dv = _empty(k, ks) if ks is not None and len(ks) == 4 else k
    _attention_call(op, lib.tj_attention_backward, lib.tj_attention_backward_sparse,
                    (q, k, v, o, lse, dout, dq, dk, dv),
                    ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"), causal, exact, scale,
                    block_mask, True, config, stream, runtime, check_only)
    return dq, dk, dv


def attention(q, k, v, *, causal=False, scale=None, exact=False, block_mask=None,
              runtime=None):
    """o = softmax(q k^T * scale [causal] [block_mask]) v, differentiable: torch tensors that
    require grad go through a torch.autograd.Function over attention_forward and
    attention_backward (the backward recomputes P from lse: no N x N tensor). Shapes, dtypes,
    block_mask and errors are attention_forward's."""
    needs_grad = any(getattr(t, "requires_grad", False) for t in (q, k, v))
    if needs_grad:
        from ._attention_autograd import AttentionFunction
        return AttentionFunction.apply(q, k, v, causal, scale, exact, block_mask, runtime)
    return attention_forward(q, k, v, causal=causal, scale=scale, exact=exact,
                             block_mask=block_mask, runtime=runtime)[0]


def _packed_call(op, fn, tensors, names, args, stream, runtime, check_only):
    """A C ABI call on packed tensors: fn(handle, packed, len, *args, stream, check_only)."""
    packed, device = pack_tensors(tensors, names)
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    handle = (runtime or default_runtime(device))._handle
    if fn(handle, buf.buffer_info()[0], len(packed), *args, stream, 1 if check_only else 0):
        raise_last_error()


def _like(t, shape=None, float32=False):
    """A new tensor beside t (its shape, or `shape`), or t itself where t has no usable shape
    (the C checks then name what is wrong with it)."""
    s = _shape(t)
    if s is None or len(s) != 4:
        return t
    return _empty(t, s if shape is None else shape, dtype_of_like=not float32)


def linear_attn_forward(q, k, v, *, scale=None, out=None, config=None, stream=None, runtime=None,
                        check_only=False):
    """Causal, unnormalised linear attention (WORKLOADS.md section 4): o_t = scale * q_t sum over
    s <= t of k_s^T v_s. q and k [B, T, H, Dk], v [B, T, H, Dv] (f16 or bf16, the last dimension
    contiguous, head dims 1 to 256); returns o like v. scale defaults to 1/sqrt(Dk)."""
    op = "linear_attn_forward"
    if out is None:
        out = _like(v)
    _packed_call(op, lib.tj_linear_attn_forward, (q, k, v, out), ("q", "k", "v", "o"),
                 (_scale_arg(op, scale), config_text(config) if config else None), stream,
                 runtime, check_only)
    return out


def linear_attn_backward(q, k, v, dout, *, scale=None, dq=None, dk=None, dv=None, config=None,
                         stream=None, runtime=None, check_only=False):
    """The gradients (dq, dk, dv) of sum(dout * o) for o = linear_attn_forward(q, k, v) with
    the same scale: three launches of the forward's kernel with exchanged operands."""
    op = "linear_attn_backward"
    dq = _like(q) if dq is None else dq
    dk = _like(k) if dk is None else dk
    dv = _like(v) if dv is None else dv
    _packed_call(op, lib.tj_linear_attn_backward, (q, k, v, dout, dq, dk, dv),
                 ("q", "k", "v", "dout", "dq", "dk", "dv"),
                 (_scale_arg(op, scale), config_text(config) if config else None), stream,
                 runtime, check_only)
    return dq, dk, dv


def linear_attn(q, k, v, *, scale=None, runtime=None):
    """linear_attn_forward, differentiable: torch tensors that require grad go through a
    torch.autograd.Function whose backward is linear_attn_backward (no state is kept)."""
    if any(getattr(t, "requires_grad", False) for t in (q, k, v)):
        from ._linear_attn_autograd import LinearAttnFunction
        return LinearAttnFunction.apply(q, k, v, scale, runtime)
    return linear_attn_forward(q, k, v, scale=scale, runtime=runtime)


def _check_rule_options(op, g, chunk, normalize, check_only):
    if isinstance(chunk, bool) or not isinstance(chunk, int):
        raise TilejitError(f"{op}: chunk = {chunk!r} must be 16, 32 or 64")
    flag = _flag(op, "normalize", normalize)
    if hasattr(g, "dim") and getattr(g, "numel", lambda: 0)() and not check_only:
        if bool((g > 0).any()):
            raise TilejitError(f"{op}: tensor 'g' has values above 0; it is the log decay "
                               "(log of a factor in (0, 1]), so g <= 0")
    return flag


def _cu_seqlens_arg(op, cu_seqlens):
    """cu_seqlens (None, a sequence of ints or an integer tensor on any device: one copy to the
    host) as an int64 array the C ABI reads, and its length."""
    if cu_seqlens is None:
        return None, 0
    if hasattr(cu_seqlens, "tolist"):
        dtype = str(getattr(cu_seqlens, "dtype", ""))
        if "int" not in dtype or getattr(cu_seqlens, "dim", lambda: 1)() != 1:
            raise TilejitError(f"{op}: cu_seqlens must be a 1-D integer tensor (N + 1 offsets "
                               f"into T), not {dtype} of shape {tuple(cu_seqlens.shape)}")
        values = cu_seqlens.tolist()
    else:
        try:
            values = list(cu_seqlens)
        except TypeError:
            raise TilejitError(f"{op}: cu_seqlens = {cu_seqlens!r} is not a list of offsets")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in values):
        raise TilejitError(f"{op}: cu_seqlens = {values!r} holds a value that is not an integer")
    if any(not -2 ** 63 <= x < 2 ** 63 for x in values):
        raise TilejitError(f"{op}: cu_seqlens has a value out of the int64 range")
    return array("q", values), len(values)


def _states(qs, vs, cu_len):
    """The states' shape: [B, H, Dk, Dv], or [N, H, Dk, Dv] for N packed sequences."""
    return (cu_len - 1 if cu_len else qs[0], qs[2], qs[3], vs[3])


def gated_delta_rule_forward(q, k, v, g, beta, *, scale=None, initial_state=None,
                             normalize=True, chunk=64, cu_seqlens=None, out=None,
                             final_state=None, config=None, stream=None, runtime=None,
                             check_only=False):
    """The gated delta rule's forward (WORKLOADS.md section 4), in chunks: per step
    S = S exp(g_t); u = beta_t (v_t - k_t S); S = S + k_t^T u; o_t = scale q_t S, q_t and k_t
    L2-normalised first when `normalize` (x / sqrt(|x|^2 + 1e-6)). q and k [B, T, H, Dk], v
    [B, T, H, Dv] (f16 or bf16), g (the log decay, <= 0) and beta [B, T, H] float32, initial_state
    [B, H, Dk, Dv] float32 (zero when None); chunk 16, 32 or 64. Returns (o like v, the final
    state [B, H, Dk, Dv] float32). torch tensors: a g above 0 is refused (one device sync).
    cu_seqlens (N + 1 offsets into T, a list or an integer tensor, as flash-linear-attention
    takes them): N sequences packed along T of a batch of one, each from its own initial
    state; initial and final states are then [N, H, Dk, Dv]."""
    op = "gated_delta_rule"
    flag = _check_rule_options(op, g, chunk, normalize, check_only)
    cu, cu_len = _cu_seqlens_arg(op, cu_seqlens)
    qs, vs = _shape(q), _shape(v)
    if out is None:
        out = _like(v)
    if final_state is None:
        final_state = (_like(q, _states(qs, vs, cu_len), float32=True)
                       if qs is not None and vs is not None and len(qs) == 4 and len(vs) == 4
                       and cu_len != 1 else q)
    tensors = (q, k, v, g, beta, out, final_state)
    names = ("q", "k", "v", "g", "beta", "o", "ht")
    if initial_state is not None:
        tensors += (initial_state,)
        names += ("h0",)
    _packed_call(op, lib.tj_gated_delta_rule_forward, tensors, names,
                 (1 if initial_state is not None else 0,
                  cu.buffer_info()[0] if cu_len else None, cu_len, flag, chunk,
                  _scale_arg(op, scale), config_text(config) if config else None), stream,
                 runtime, check_only)
    return out, final_state


def gated_delta_rule_backward(q, k, v, g, beta, dout, *, dht=None, scale=None,
                              initial_state=None, normalize=True, chunk=64, cu_seqlens=None,
                              config=None, stream=None, runtime=None, check_only=False):
    """The gradients (dq, dk, dv, dg, dbeta, dh0) of sum(dout * o) + sum(dht * ht) for
    (o, ht) = gated_delta_rule_forward(...) with the same inputs and options (dht None: zero).
    dh0 is initial_state's gradient (at zero when None). The forward runs again, saving its
    chunk states; no state is kept between the calls. cu_seqlens as the forward takes it (dh0
    and dht then [N, H, Dk, Dv])."""
    op = "gated_delta_rule_backward"
    flag = _check_rule_options(op, g, chunk, normalize, check_only)
    cu, cu_len = _cu_seqlens_arg(op, cu_seqlens)
    qs, vs = _shape(q), _shape(v)
    ok = qs is not None and vs is not None and len(qs) == 4 and len(vs) == 4
    grads = (_like(q), _like(k), _like(v),
             _like(q, qs[:3], float32=True) if ok else g,
             _like(q, qs[:3], float32=True) if ok else beta,
             _like(q, _states(qs, vs, cu_len), float32=True) if ok and cu_len != 1 else q)
    tensors = (q, k, v, g, beta, dout) + grads
    names = ("q", "k", "v", "g", "beta", "dout", "dq", "dk", "dv", "dg", "dbeta", "dh0")
    if initial_state is not None:
        tensors += (initial_state,)
        names += ("h0",)
    if dht is not None:
        tensors += (dht,)
        names += ("dht",)
    _packed_call(op, lib.tj_gated_delta_rule_backward, tensors, names,
                 (1 if initial_state is not None else 0, 1 if dht is not None else 0,
                  cu.buffer_info()[0] if cu_len else None, cu_len, flag, chunk,
                  _scale_arg(op, scale), config_text(config) if config else None), stream,
                 runtime, check_only)
    return grads


def gated_delta_rule(q, k, v, g, beta, *, scale=None, initial_state=None, normalize=True,
                     chunk=64, cu_seqlens=None, runtime=None):
    """gated_delta_rule_forward, differentiable: torch tensors that require grad go through a
    torch.autograd.Function whose backward is gated_delta_rule_backward (gradients to q, k, v,
    g, beta and initial_state, from o's and the final state's). Returns (o, final state)."""
    if any(getattr(t, "requires_grad", False) for t in (q, k, v, g, beta, initial_state)):
        from ._gated_delta_autograd import GatedDeltaRuleFunction
        return GatedDeltaRuleFunction.apply(q, k, v, g, beta, initial_state, scale, normalize,
                                            chunk, cu_seqlens, runtime)
    return gated_delta_rule_forward(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                                    normalize=normalize, chunk=chunk, cu_seqlens=cu_seqlens,
                                    runtime=runtime)


HBV_PARAMS = 12


def _int_arg(op, name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TilejitError(f"{op}: {name} = {value!r} must be an integer >= {low}")
    return value


def _forcings_shape(op, P):
    s = _shape(P)
    if s is None or len(s) != 2:
        raise TilejitError(f"{op}: tensor 'P' of shape {s} must have 2 dimensions: [B, T] "
                           "(basins, days)")
    return s


def hbv_backward_form(B, T, segment=-1):
    """The derived backward's form a training forward prepares for B basins and T days: 0 for
    the checkpointed reverse (every 64th day's states saved), else the segment length (each
    segment's start state saved, and the backward tapes about B x T x 20 bytes). The saved
    states are [cdiv(B, 32), cdiv(T, days), 5, 32] float32. segment -1: the op's choice."""
    for name, value in (("B", B), ("T", T), ("segment", segment)):
        _int_arg("hbv", name, value, -1 if name == "segment" else 0)
    form = lib.tj_hbv_backward_form(B, T, segment)
    if form < 0:
        raise_last_error()
    return form


# Components per basin that one kernel runs (hbv_forward_nmul; params [B, 12, NM]).
HBV_COMPONENTS = (2, 4, 8, 16)


def _components_of(params):
    """NM for params [B, 12, NM] (the one-kernel form), 1 for [B, 12] or anything else (the
    op's checks name what is wrong)."""
    s = _shape(params)
    return s[2] if s is not None and len(s) == 3 else 1


def _form(P, B, T, segment, nm, runtime):
    """The backward's form the ops take (segment -1: the plan `tilejit tune --workload hbv`
    stored for this shape in the runtime's database where the ops run it, else the untuned
    choice for the B x NM models), resolved here once so that the training forward's starts,
    the backward's work buffers and both calls agree on it."""
    if segment != -1 or not (nm == 1 or nm in HBV_COMPONENTS):
        return hbv_backward_form(B * nm if segment == -1 else B, T, segment)  # checks the values
    for name, value in (("B", B), ("T", T)):
        _int_arg("hbv", name, value, 0)
    rt = runtime or default_runtime(_device_index(P))
    form = lib.tj_hbv_op_form(rt._handle, B, T, nm, segment)
    if form < 0:
        raise_last_error()
    return form


def _buffer_shape(which, B, T, form, nm=1):
    """The shape of hbv work buffer `which` ("starts", "tape" or "maps"), from the library (the
    formula the op checks against: ops::hbv_buffer_shape)."""
    out = (ctypes.c_int64 * 8)()
    rank = lib.tj_hbv_buffer_shape(which.encode(), B, T, form, nm, ctypes.addressof(out), 8)
    if rank < 0:
        raise_last_error()
    return tuple(out[:rank])


def hbv_forward(P, TEMP, PET, params, *, training=False, segment=-1, out=None, starts=None,
                config=None, stream=None, runtime=None, check_only=False):
    """The HBV-96 model (WORKLOADS.md section 5), one lane per model: P, TEMP, PET [B, T]
    float32 (forcings, days along the row), params [B, 12] float32 (BETA, FC, K0, K1, K2, LP,
    PERC, UZL, TT, CFMAX, CFR, CWH), or [B, 12, NM] for NM = 2, 4, 8 or 16 components per
    basin (Q their mean, one kernel), all contiguous on one GPU. Returns Q [B, T] float32.
    training=True also returns what hbv_backward takes: (Q, starts, segment), the states the
    training forward stored and the backward's form (hbv_backward_form)."""
    op = "hbv_forward"
    B, T = _forcings_shape(op, P)
    nm = _components_of(params)
    form = _form(P, B, T, segment, nm, runtime) if training else 0
    if out is None:
        out = _empty(P, (B, T), dtype_of_like=False)
    if training and starts is None and (nm in HBV_COMPONENTS or nm == 1):
        starts = _empty(P, _buffer_shape("starts", B, T, form, nm), dtype_of_like=False)
    tensors, names = (P, TEMP, PET, params, out), ("P", "TEMP", "PET", "params", "Q")
    if starts is not None:
        tensors, names = tensors + (starts,), names + ("starts",)
    _packed_call(op, lib.tj_hbv_forward, tensors, names,
                 (1 if training else 0, form if training else segment,
                  1 if starts is not None else 0,
                  config_text(config) if config else None), stream, runtime, check_only)
    return (out, starts, form) if training else out


def hbv_backward(P, TEMP, PET, params, dQ, *, segment=-1, starts=None, grads=None,
                 config=None, stream=None, runtime=None, check_only=False):
    """The gradients (d_P, d_TEMP, d_PET, d_params) of sum(dQ * Q) for Q = hbv_forward(P, TEMP,
    PET, params), by the backward tilejit's compiler derives from the forward kernel (the tie
    rules of WORKLOADS.md). segment and starts as the training forward returned them; without
    starts a segment form runs that forward first, and segment 0 a kernel that reruns the
    forward for its own checkpoints. grads: four tensors to write (allocated when None)."""
    op = "hbv_backward"
    B, T = _forcings_shape(op, P)
    if starts is not None and segment == -1:
        raise TilejitError(f"{op}: starts given without its segment: pass the segment "
                           "hbv_forward(training=True) returned with it")
    nm = _components_of(params)
    form = _form(P, B, T, segment, nm, runtime)
    if form and starts is None and not check_only:
        # The training forward first, its buffers from the caller's allocator (torch's cache).
        starts = hbv_forward(P, TEMP, PET, params, training=True, segment=form, stream=stream,
                             runtime=runtime)[1]
    if grads is None:
        grads = tuple(_empty(P, shape, dtype_of_like=False)
                      for shape in ((B, T), (B, T), (B, T), _shape(params)))
    elif len(grads) != 4:
        raise TilejitError(f"{op}: grads must be four tensors (d_P, d_TEMP, d_PET, d_params), "
                           f"not {len(grads)}")
    grads = tuple(grads)
    tensors = (P, TEMP, PET, params, dQ) + grads
    names = ("P", "TEMP", "PET", "params", "dQ", "d_P", "d_TEMP", "d_PET", "d_params")
    if starts is not None:
        tensors, names = tensors + (starts,), names + ("starts",)
    # (Another count of components has no work buffers: the op's checks name params.)
    work = form > 0 and B > 0 and T > 0 and (nm == 1 or nm in HBV_COMPONENTS)
    if work:  # the segment form's tape and maps, from the caller's allocator too
        tensors += (_empty(P, _buffer_shape("tape", B, T, form, nm), dtype_of_like=False),
                    _empty(P, _buffer_shape("maps", B, T, form, nm), dtype_of_like=False))
        names += ("tape", "maps")
    _packed_call(op, lib.tj_hbv_backward, tensors, names,
                 (form, 1 if starts is not None else 0, 1 if work else 0,
                  config_text(config) if config else None), stream, runtime, check_only)
    return grads


def _components(op, P, TEMP, PET, params, nmul):
    """nmul > 1: B basins of nmul components each as B * nmul models (forcings repeated per
    component, params [B, 12, nmul] as dHBV lays them out, to [B * nmul, 12])."""
    s = _shape(params)
    if s is None or len(s) != 3 or s[1] != HBV_PARAMS or s[2] != nmul:
        raise TilejitError(f"{op}: tensor 'params' of shape {s} must be [B, 12, nmul] = "
                           f"[B, 12, {nmul}] for nmul = {nmul}")
    if not hasattr(P, "repeat_interleave"):
        raise TilejitError(f"{op}: nmul = {nmul} takes torch tensors")
    rows = [x.repeat_interleave(nmul, 0) for x in (P, TEMP, PET)]
    return rows + [params.permute(0, 2, 1).reshape(-1, HBV_PARAMS)]


def hbv(P, TEMP, PET, params, *, nmul=1, segment=-1, runtime=None):
    """Q [B, T] of the HBV-96 model, differentiable: torch tensors that require grad go through
    a torch.autograd.Function whose backward is hbv_backward (gradients to P, TEMP, PET and
    params). nmul > 1: params [B, 12, nmul], B * nmul models whose Q is averaged over the
    components: nmul = 2, 4, 8 or 16 in one kernel (each basin's forcings read once, shared by
    its components; the backward in the form chosen for the B * nmul models), another count
    with the forcings repeated per component (nmul times their memory)."""
    op = "hbv"
    _int_arg(op, "nmul", nmul, 1)
    B, T = _forcings_shape(op, P)
    in_kernel = nmul in HBV_COMPONENTS
    if nmul > 1:
        s = _shape(params)
        if s is None or len(s) != 3 or s[1] != HBV_PARAMS or s[2] != nmul:
            raise TilejitError(f"{op}: tensor 'params' of shape {s} must be [B, 12, nmul] = "
                               f"[B, 12, {nmul}] for nmul = {nmul}")
    if nmul > 1 and not in_kernel:
        P, TEMP, PET, params = _components(op, P, TEMP, PET, params, nmul)
    if any(getattr(t, "requires_grad", False) for t in (P, TEMP, PET, params)):
        from ._hbv_autograd import HbvFunction
        q = HbvFunction.apply(P, TEMP, PET, params, segment, runtime)
    else:
        q = hbv_forward(P, TEMP, PET, params, runtime=runtime)
    return q if nmul == 1 or in_kernel else q.view(B, nmul, T).mean(1)


# Ring attention across processes (one GPU each, NCCL): tilejit/_ring.py.
from ._ring import (RingGroup, ring_attention, ring_attention_backward,  # noqa: E402,F401
                    ring_attention_forward, ring_group, ring_positions, ring_shard)
