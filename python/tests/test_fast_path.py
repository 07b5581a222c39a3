"""The C launch path (tilejit._fast) without PyTorch: a stand-in tensor type registered in
torch.Tensor's place, so its reading of pointers, dtypes, sizes and strides and its errors are
checked on any machine (on the GPU, test_gpu.py runs it on real tensors)."""

import pytest

import tilejit
from tilejit import _fastpath
from tilejit._native import InternalError, NoGpuError, TilejitError

try:
    import torch  # noqa: F401
    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = pytest.mark.skipif(HAS_TORCH, reason="registers a stand-in for torch.Tensor")


class DType:
    def __init__(self, name):
        self.name = name


F16, F32, I32, F64X = DType("f16"), DType("f32"), DType("i32"), DType("complex")


class FakeTensor:
    """What _fast.c reads of a torch.Tensor: data_ptr(), get_device(), dtype, shape (a tuple),
    is_contiguous(), stride()."""

    def __init__(self, shape, dtype, strides=None, device=0):
        self.shape, self.dtype, self._device = tuple(shape), dtype, device
        dense, step = [], 1
        for s in reversed(self.shape):
            dense.append(step)
            step *= max(s, 1)
        self._strides = tuple(strides) if strides else tuple(reversed(dense))
        self._dense = self._strides == tuple(reversed(dense))

    def data_ptr(self):
        return 1 << 20

    def get_device(self):
        return self._device

    def is_contiguous(self):
        return self._dense

    def stride(self):
        return self._strides


@pytest.fixture
def fast():
    module = _fastpath._find()
    if module is None:
        pytest.skip("tilejit._fast was not built (no Python 3.11+ headers)")
    module.register(FakeTensor, {F16: 7, F32: 9, I32: 4}, lambda index: 0,
                    (TilejitError, NoGpuError, InternalError))
    return module


def paged(**changes):
    t = dict(q=FakeTensor((3, 28, 96), F16), k=FakeTensor((11, 16, 4, 96), F16),
             v=FakeTensor((11, 16, 4, 96), F16), table=FakeTensor((3, 5), I32),
             lens=FakeTensor((3,), I32), idx=FakeTensor((3, 4, 9), I32),
             n=FakeTensor((3, 4), I32), o=FakeTensor((3, 28, 96), F16),
             lse=FakeTensor((3, 28), F32))
    t.update(changes)
    return tuple(t.values())


def test_good_tensors_pass_the_checks(fast, cpu_runtime):
    assert fast.paged_sparse_decode(cpu_runtime._handle, paged(), float("nan"), None, None, True)


@pytest.mark.parametrize("changes, message", [
    ({"q": FakeTensor((3, 28, 96), F32)}, r"tensor 'q' \(f32\[3, 28, 96\] cuda:0\) must be f16"),
    ({"lens": FakeTensor((2,), I32)}, "tensor 'seq_lens' .* has 2 in dimension 0 but q's batch B = 3"),
    ({"q": FakeTensor((3, 28, 96), F16, strides=(96 * 56, 192, 2))}, "stride 1 in its last dimension"),
    ({"n": FakeTensor((3, 4), I32, device=-1)}, "tensor 'kept_len' .* is in host memory"),
])
def test_bad_tensors_are_named_as_on_the_python_path(fast, cpu_runtime, changes, message):
    with pytest.raises(TilejitError, match=message):
        fast.paged_sparse_decode(cpu_runtime._handle, paged(**changes), float("nan"), None, None,
                                 True)


def test_other_tensor_types_and_dtypes_fall_back_to_python(fast, cpu_runtime):
    import numpy
    assert fast.paged_sparse_decode(cpu_runtime._handle, paged(q=numpy.zeros((3, 28, 96))),
                                    float("nan"), None, None, True) is NotImplemented
    assert fast.paged_sparse_decode(cpu_runtime._handle, paged(q=FakeTensor((3, 28, 96), F64X)),
                                    float("nan"), None, None, True) is NotImplemented


def test_a_launch_without_a_gpu_raises_no_gpu(fast, cpu_runtime):
    if cpu_runtime.has_gpu:
        pytest.skip("this machine has a GPU")
    k = cpu_runtime.load("embedded:examples/softmax.tile")
    x = FakeTensor((5, 7), F32)
    with pytest.raises(NoGpuError):
        fast.launch(cpu_runtime._handle, k._handle, (x, x), None, None, False)
    with pytest.raises(TilejitError, match="BR=3 is not one of"):
        fast.launch(cpu_runtime._handle, k._handle, (x, x), b"BR=3", None, False)
