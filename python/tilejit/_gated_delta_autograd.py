"""tilejit.ops.gated_delta_rule's autograd: the forward keeps its inputs; the backward runs
gated_delta_rule_backward (the forward again saving its chunk states, then the gradients)."""

import torch

from . import ops


class GatedDeltaRuleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, g, beta, initial_state, scale, normalize, chunk, cu_seqlens,
                runtime):
        # The offsets once on the host: the backward reuses them (no second device sync).
        cu = ops._cu_seqlens_arg("gated_delta_rule", cu_seqlens)[0]
        cu = list(cu) if cu is not None else None
        o, ht = ops.gated_delta_rule_forward(q, k, v, g, beta, scale=scale,
                                             initial_state=initial_state, normalize=normalize,
                                             chunk=chunk, cu_seqlens=cu, runtime=runtime)
        ctx.save_for_backward(q, k, v, g, beta, initial_state)
        ctx.options = (scale, normalize, chunk, cu, runtime)
        return o, ht

    @staticmethod
    def backward(ctx, do, dht):
        q, k, v, g, beta, h0 = ctx.saved_tensors
        scale, normalize, chunk, cu, runtime = ctx.options
        if do is None:
            do = torch.zeros_like(v)
        dq, dk, dv, dg, dbeta, dh0 = ops.gated_delta_rule_backward(
            q, k, v, g, beta, do.contiguous(), dht=None if dht is None else dht.contiguous(),
            scale=scale, initial_state=h0, normalize=normalize, chunk=chunk, cu_seqlens=cu,
            runtime=runtime)
        return (dq, dk, dv, dg, dbeta, (dh0 if h0 is not None else None), None, None, None, None,
                None)
