"""tilejit.ops.attention's autograd: the forward keeps (q, k, v, o, lse); the backward runs
tilejit's three backward kernels (P recomputed from lse, no N x N tensor)."""

import torch

from . import ops


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, scale, exact, block_mask, runtime):
        o, lse = ops.attention_forward(q, k, v, causal=causal, scale=scale, exact=exact,
                                       block_mask=block_mask, runtime=runtime)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.options = (causal, scale, exact, block_mask, runtime)
        return o

    @staticmethod
    def backward(ctx, dout):
        q, k, v, o, lse = ctx.saved_tensors
        causal, scale, exact, block_mask, runtime = ctx.options
        dq, dk, dv = ops.attention_backward(q, k, v, o, lse, dout.contiguous(), causal=causal,
                                            scale=scale, exact=exact, block_mask=block_mask,
                                            runtime=runtime)
        return dq, dk, dv, None, None, None, None, None
