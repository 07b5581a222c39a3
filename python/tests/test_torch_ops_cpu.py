"""The torch.library registration of the typed ops (tilejit._torch_ops), without a GPU: fake
tensors give the outputs' shapes and dtypes, as torch.compile sees them. Skipped where PyTorch
is not installed."""

import pytest

torch = pytest.importorskip("torch")
fake_tensor = pytest.importorskip("torch._subclasses.fake_tensor")
import tilejit  # noqa: E402,F401  (registers torch.ops.tilejit.*)


def test_attention_ops_are_registered_with_their_shapes():
    with fake_tensor.FakeTensorMode():
        q = torch.empty(2, 8, 37, 40, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 2, 37, 40, dtype=torch.bfloat16, device="cuda")
        o, lse = torch.ops.tilejit.attention_forward(q, k, k, True)
        assert o.shape == q.shape and o.dtype == q.dtype
        assert lse.shape == (2, 8, 37) and lse.dtype == torch.float32
        dq, dk, dv = torch.ops.tilejit.attention_backward(q, k, k, o, lse, o, True)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == k.shape
