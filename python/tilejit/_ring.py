"""Ring (context-parallel) attention across processes, one GPU each (<tilejit/ring_attention.h>):
the sequence split over the ranks in the zigzag way (rank r holds chunks r and 2 * world - 1 - r
of 2 * world), key/value chunks passed around the ring with NCCL while tilejit's attention
kernels work on the chunks a rank holds. Under torchrun:

    ring = tilejit.ops.ring_group()                     # every rank; torch.distributed is up
    q_local = tilejit.ops.ring_shard(q, ring.world, ring.rank)
    o_local = tilejit.ops.ring_attention(q_local, k_local, v_local, causal=True, ring=ring)
"""

import ctypes
import weakref
from array import array

from ._args import pack_tensors
from ._native import TilejitError, check, lib, raise_last_error
from ._stream import current_stream
from .runtime import default_runtime


class RingGroup:
    """This process's place in a ring of `world` ranks (an NCCL communicator on the runtime's
    GPU, with the streams and work buffers ring attention reuses). Every rank makes one with
    the same id (RingGroup.new_id() on one rank, given to all); ring_group() does it through
    torch.distributed. One ring call at a time per group."""

    def __init__(self, nccl_id, world, rank, runtime=None):
        if not isinstance(nccl_id, (bytes, bytearray)) or len(nccl_id) != 128:
            raise TilejitError("RingGroup: nccl_id must be the 128 bytes RingGroup.new_id() "
                               f"made, got {type(nccl_id).__name__} of length "
                               f"{len(nccl_id) if hasattr(nccl_id, '__len__') else '?'}")
        for name, value in (("world", world), ("rank", rank)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TilejitError(f"RingGroup: {name} = {value!r} must be an int")
        self.runtime = runtime or default_runtime()
        self.world, self.rank = world, rank
        self._handle = check(lib.tj_ring_group_new(self.runtime._handle, bytes(nccl_id), world,
                                                   rank))
        self._finalizer = weakref.finalize(self, lib.tj_ring_group_free, self._handle)

    @staticmethod
    def new_id():
        """A new NCCL communicator id (128 bytes), for one rank to make and give to all."""
        buf = ctypes.create_string_buffer(128)
        check(lib.tj_ring_new_id(buf))
        return buf.raw


_groups = {}


def ring_group(group=None):
    """The RingGroup of torch.distributed's `group` (default: the whole world) on the current
    CUDA device, made on first use (rank 0's id broadcast to the others) and kept."""
    import torch
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        raise TilejitError("ring_group: torch.distributed is not initialised (call "
                           "init_process_group first, as torchrun's scripts do)")
    device = torch.cuda.current_device()
    key = (group, device)
    ring = _groups.get(key)
    if ring is None:
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        box = [RingGroup.new_id() if rank == 0 else None]
        src = dist.get_global_rank(group, 0) if group is not None else 0
        dist.broadcast_object_list(box, src=src, group=group)
        ring = _groups[key] = RingGroup(box[0], world, rank, default_runtime(device))
    return ring


def ring_positions(n, world, rank):
    """The two ranges (start, stop) of a sequence of n positions that rank `rank` holds."""
    if n % (2 * world):
        raise TilejitError(f"ring: a sequence of {n} positions does not split into "
                           f"2 * world = {2 * world} equal chunks (pad it to a multiple)")
    c = n // (2 * world)
    return [(rank * c, (rank + 1) * c), ((2 * world - 1 - rank) * c, (2 * world - rank) * c)]


def ring_shard(x, world, rank, dim=2):
    """Rank `rank`'s two zigzag chunks of x along `dim` (the sequence), concatenated."""
    import torch
    (a0, a1), (b0, b1) = ring_positions(x.shape[dim], world, rank)
    return torch.cat([x.narrow(dim, a0, a1 - a0), x.narrow(dim, b0, b1 - b0)], dim)


def _ring_call(op, fn, ring, tensors, names, causal, scale, stream, check_only):
    from .ops import _flag, _scale_arg
    flag = _flag(op, "causal", causal)
    scale = _scale_arg(op, scale)
    if ring is None and not check_only:
        raise TilejitError(f"{op}: no ring (tilejit.ops.ring_group() makes one)")
    if ring is not None and not isinstance(ring, RingGroup):
        raise TilejitError(f"{op}: ring must be a tilejit RingGroup, got {type(ring).__name__}")
    packed, device = pack_tensors(tensors, names)
    if stream is None:
        stream = current_stream(device) if device >= 0 else 0
    buf = array("q", packed)
    runtime = ring.runtime if ring is not None else default_runtime(device)
    if fn(runtime._handle, ring._handle if ring is not None else None, buf.buffer_info()[0],
          len(packed), flag, scale, stream, 1 if check_only else 0):
        raise_last_error()


def ring_attention_forward(q, k, v, *, ring, causal=False, scale=None, out=None, lse=None,
                           stream=None, check_only=False):
    """This rank's share of the whole sequence's attention: q [B, Hq, 2C, D], k and v [B, Hkv,
    2C, D] (dense) its two zigzag chunks; returns (o like q, lse [B, Hq, 2C] float32)."""
    from .ops import _like, _shape
    qs = _shape(q)
    out = _like(q) if out is None else out
    lse = _like(q, qs and qs[:3], float32=True) if lse is None else lse
    _ring_call("ring_attention_forward", lib.tj_ring_attention_forward, ring,
               (q, k, v, out, lse), ("q", "k", "v", "o", "lse"), causal, scale, stream,
               check_only)
    return out, lse


def ring_attention_backward(q, k, v, o, lse, dout, *, ring, causal=False, scale=None, dq=None,
                            dk=None, dv=None, stream=None, check_only=False):
    """(dq, dk, dv) of this rank's positions for (o, lse) = ring_attention_forward(...)."""
    from .ops import _like
    dq = _like(q) if dq is None else dq
    dk = _like(k) if dk is None else dk
    dv = _like(k) if dv is None else dv
    _ring_call("ring_attention_backward", lib.tj_ring_attention_backward, ring,
               (q, k, v, o, lse, dout, dq, dk, dv),
               ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"), causal, scale, stream,
               check_only)
    return dq, dk, dv


_function = None


def _autograd_function():
    """The torch.autograd.Function over the ring's forward and backward (made once, on the
    first differentiable call, so that importing tilejit needs no torch)."""
    global _function
    if _function is None:
        import torch

        class RingAttentionFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, ring, causal, scale):
                o, lse = ring_attention_forward(q, k, v, ring=ring, causal=causal, scale=scale)
                ctx.save_for_backward(q, k, v, o, lse)
                ctx.options = (ring, causal, scale)
                return o

            @staticmethod
            def backward(ctx, dout):
                q, k, v, o, lse = ctx.saved_tensors
                ring, causal, scale = ctx.options
                dq, dk, dv = ring_attention_backward(q, k, v, o, lse, dout.contiguous(),
                                                     ring=ring, causal=causal, scale=scale)
                return dq, dk, dv, None, None, None

        _function = RingAttentionFunction
    return _function


def ring_attention(q, k, v, *, causal=False, scale=None, ring=None):
    """o = this rank's share of softmax(q k^T scale [causal]) v over the whole sequence,
    differentiable (the backward is ring_attention_backward). ring: a RingGroup, default
    ring_group() (torch.distributed's world)."""
    ring = ring if ring is not None else ring_group()
    if any(getattr(t, "requires_grad", False) for t in (q, k, v)):
        return _autograd_function().apply(q, k, v, ring, causal, scale)
    return ring_attention_forward(q, k, v, ring=ring, causal=causal, scale=scale)[0]
