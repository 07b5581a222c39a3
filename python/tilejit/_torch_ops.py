"""The typed ops as PyTorch custom operators (torch.library.custom_op, PyTorch 2.4 or later)
with fake implementations that give the outputs' shapes, so torch.compile can trace through
them: torch.ops.tilejit.paged_sparse_decode(...)."""

from typing import Optional, Tuple

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
