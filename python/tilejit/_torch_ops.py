"""The typed ops as PyTorch custom operators (torch.library.custom_op, PyTorch 2.4 or later)
with fake implementations that give the outputs' shapes, so torch.compile can trace through
them: torch.ops.tilejit.paged_sparse_decode(...)."""

from typing import List, Optional, Tuple

import torch

from . import ops

if not hasattr(torch.library, "custom_op"):
    raise ImportError("torch.library.custom_op needs PyTorch 2.4 or later")


@torch.library.custom_op("tilejit::paged_sparse_decode", mutates_args=(), device_types="cuda")
def paged_sparse_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                        block_table: torch.Tensor, seq_lens: torch.Tensor,
                        kept_idx: torch.Tensor, kept_len: torch.Tensor,
                        scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    return ops.paged_sparse_decode(q, k_cache, v_cache, block_table, seq_lens, kept_idx,
                                   kept_len, scale=scale)


@paged_sparse_decode.register_fake
def _(q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len, scale=None):
    return (q.new_empty(q.shape),
            q.new_empty((q.shape[0], q.shape[1]), dtype=torch.float32))


@torch.library.custom_op("tilejit::attention_forward", mutates_args=(), device_types="cuda")
def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                      scale: Optional[float] = None, exact: bool = False,
                      block_mask: Optional[torch.Tensor] = None
                      ) -> Tuple[torch.Tensor, torch.Tensor]:
    return ops.attention_forward(q, k, v, causal=causal, scale=scale, exact=exact,
                                 block_mask=block_mask)


@attention_forward.register_fake
def _(q, k, v, causal=False, scale=None, exact=False, block_mask=None):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("tilejit::attention_backward", mutates_args=(), device_types="cuda")
def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                       lse: torch.Tensor, dout: torch.Tensor, causal: bool = False,
                       scale: Optional[float] = None, exact: bool = False,
                       block_mask: Optional[torch.Tensor] = None
                       ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return ops.attention_backward(q, k, v, o, lse, dout.contiguous(), causal=causal, scale=scale,
                                  exact=exact, block_mask=block_mask)


@attention_backward.register_fake
def _(q, k, v, o, lse, dout, causal=False, scale=None, exact=False, block_mask=None):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, scale, exact, block_mask = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.options = (causal, scale, exact, block_mask)


def _attention_backward(ctx, do, dlse):
    # lse's gradient is not propagated (it is an output for the backward, as in
    # FlashAttention); o's is.
    q, k, v, o, lse = ctx.saved_tensors
    causal, scale, exact, block_mask = ctx.options
    dq, dk, dv = attention_backward(q, k, v, o, lse, do, causal, scale, exact, block_mask)
    return dq, dk, dv, None, None, None, None


# torch.ops.tilejit.attention_forward is differentiable in q, k and v (through o), also under
# torch.compile.
attention_forward.register_autograd(_attention_backward, setup_context=_attention_setup)


@torch.library.custom_op("tilejit::linear_attn_forward", mutates_args=(), device_types="cuda")
def linear_attn_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        scale: Optional[float] = None) -> torch.Tensor:
    return ops.linear_attn_forward(q, k, v, scale=scale)


@linear_attn_forward.register_fake
def _(q, k, v, scale=None):
    return v.new_empty(v.shape)


@torch.library.custom_op("tilejit::linear_attn_backward", mutates_args=(), device_types="cuda")
def linear_attn_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dout: torch.Tensor,
                         scale: Optional[float] = None
                         ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return ops.linear_attn_backward(q, k, v, dout.contiguous(), scale=scale)


@linear_attn_backward.register_fake
def _(q, k, v, dout, scale=None):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _linear_attn_setup(ctx, inputs, output):
    q, k, v, scale = inputs
    ctx.save_for_backward(q, k, v)
    ctx.scale = scale


def _linear_attn_backward(ctx, do):
    q, k, v = ctx.saved_tensors
    dq, dk, dv = linear_attn_backward(q, k, v, do, ctx.scale)
    return dq, dk, dv, None


# torch.ops.tilejit.linear_attn_forward is differentiable in q, k and v, also under
# torch.compile.
linear_attn_forward.register_autograd(_linear_attn_backward, setup_context=_linear_attn_setup)


@torch.library.custom_op("tilejit::gated_delta_rule", mutates_args=(), device_types="cuda")
def gated_delta_rule(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                     beta: torch.Tensor, scale: Optional[float] = None,
                     initial_state: Optional[torch.Tensor] = None, normalize: bool = True,
                     chunk: int = 64, cu_seqlens: Optional[List[int]] = None
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    return ops.gated_delta_rule_forward(q, k, v, g, beta, scale=scale,
                                        initial_state=initial_state, normalize=normalize,
                                        chunk=chunk, cu_seqlens=cu_seqlens)


def _rule_states(q, v, cu_seqlens):
    n = q.shape[0] if cu_seqlens is None else len(cu_seqlens) - 1
    return (n, q.shape[2], q.shape[3], v.shape[3])


@gated_delta_rule.register_fake
def _(q, k, v, g, beta, scale=None, initial_state=None, normalize=True, chunk=64,
      cu_seqlens=None):
    return (v.new_empty(v.shape), q.new_empty(_rule_states(q, v, cu_seqlens), dtype=torch.float32))


@torch.library.custom_op("tilejit::gated_delta_rule_backward", mutates_args=(),
                         device_types="cuda")
def gated_delta_rule_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                              beta: torch.Tensor, dout: torch.Tensor,
                              dht: Optional[torch.Tensor] = None, scale: Optional[float] = None,
                              initial_state: Optional[torch.Tensor] = None,
                              normalize: bool = True, chunk: int = 64,
                              cu_seqlens: Optional[List[int]] = None
                              ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                         torch.Tensor, torch.Tensor]:
    return ops.gated_delta_rule_backward(q, k, v, g, beta, dout.contiguous(), dht=dht,
                                         scale=scale, initial_state=initial_state,
                                         normalize=normalize, chunk=chunk, cu_seqlens=cu_seqlens)


@gated_delta_rule_backward.register_fake
def _(q, k, v, g, beta, dout, dht=None, scale=None, initial_state=None, normalize=True,
      chunk=64, cu_seqlens=None):
    f32 = torch.float32
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            g.new_empty(g.shape, dtype=f32), g.new_empty(g.shape, dtype=f32),
            q.new_empty(_rule_states(q, v, cu_seqlens), dtype=f32))


def _rule_setup(ctx, inputs, output):
    q, k, v, g, beta, scale, initial_state, normalize, chunk, cu_seqlens = inputs
    ctx.save_for_backward(q, k, v, g, beta, initial_state)
    ctx.options = (scale, normalize, chunk, cu_seqlens)


def _rule_backward(ctx, do, dht):
    q, k, v, g, beta, h0 = ctx.saved_tensors
    scale, normalize, chunk, cu_seqlens = ctx.options
    dq, dk, dv, dg, dbeta, dh0 = gated_delta_rule_backward(
        q, k, v, g, beta, do, dht.contiguous() if dht is not None else None, scale, h0, normalize,
        chunk, cu_seqlens)
    return dq, dk, dv, dg, dbeta, None, (dh0 if h0 is not None else None), None, None, None


# torch.ops.tilejit.gated_delta_rule is differentiable in q, k, v, g, beta and initial_state.
gated_delta_rule.register_autograd(_rule_backward, setup_context=_rule_setup)


@torch.library.custom_op("tilejit::hbv", mutates_args=(), device_types="cuda")
def hbv(P: torch.Tensor, TEMP: torch.Tensor, PET: torch.Tensor, params: torch.Tensor
        ) -> torch.Tensor:
    return ops.hbv_forward(P, TEMP, PET, params)


@hbv.register_fake
def _(P, TEMP, PET, params):
    return P.new_empty(P.shape, dtype=torch.float32)


@torch.library.custom_op("tilejit::hbv_backward", mutates_args=(), device_types="cuda")
def hbv_backward(P: torch.Tensor, TEMP: torch.Tensor, PET: torch.Tensor, params: torch.Tensor,
                 dQ: torch.Tensor
                 ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return ops.hbv_backward(P, TEMP, PET, params, dQ.contiguous())


@hbv_backward.register_fake
def _(P, TEMP, PET, params, dQ):
    f32 = torch.float32
    return (P.new_empty(P.shape, dtype=f32), P.new_empty(P.shape, dtype=f32),
            P.new_empty(P.shape, dtype=f32), params.new_empty(params.shape, dtype=f32))


def _hbv_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _hbv_backward(ctx, dQ):
    # The op's choice of backward form; a segment form reruns the training forward here (one
    # forward pass: this operator keeps nothing between the calls, tilejit.ops.hbv does).
    return hbv_backward(*ctx.saved_tensors, dQ)


# torch.ops.tilejit.hbv is differentiable in P, TEMP, PET and params, also under torch.compile.
hbv.register_autograd(_hbv_backward, setup_context=_hbv_setup)
