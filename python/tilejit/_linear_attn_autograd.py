"""tilejit.ops.linear_attn's autograd: the forward keeps (q, k, v); the backward runs
linear_attn_backward (three launches of the forward's kernel, no state saved)."""

import torch

from . import ops


class LinearAttnFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale, runtime):
        ctx.save_for_backward(q, k, v)
        ctx.options = (scale, runtime)
        return ops.linear_attn_forward(q, k, v, scale=scale, runtime=runtime)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        scale, runtime = ctx.options
        dq, dk, dv = ops.linear_attn_backward(q, k, v, dout.contiguous(), scale=scale,
                                              runtime=runtime)
        return dq, dk, dv, None, None
