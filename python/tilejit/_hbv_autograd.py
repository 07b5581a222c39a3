"""tilejit.ops.hbv's autograd: the training forward keeps the states the backward starts from
(each segment's start, or every 64th day's); the backward runs the kernels the compiler derived
from the forward."""

import torch

from . import ops


class HbvFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, P, TEMP, PET, params, segment, runtime):
        q, starts, form = ops.hbv_forward(P, TEMP, PET, params, training=True, segment=segment,
                                          runtime=runtime)
        ctx.save_for_backward(P, TEMP, PET, params, starts)
        ctx.options = (form, runtime)
        return q

    @staticmethod
    def backward(ctx, dQ):
        P, TEMP, PET, params, starts = ctx.saved_tensors
        form, runtime = ctx.options
        grads = ops.hbv_backward(P, TEMP, PET, params, dQ.contiguous(), segment=form,
                                 starts=starts, runtime=runtime)
        return grads + (None, None)
