"""The current CUDA stream of the framework a tensor comes from (PyTorch's current stream, as
Triton launches on), as a raw CUstream handle; 0 (the legacy default stream) otherwise."""

_torch_stream = None  # device index -> raw stream, from torch once it is imported


def current_stream(device_index):
    global _torch_stream
    if _torch_stream is None:
        try:
            import torch
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is None:  # older PyTorch: through the Stream object (slower)
                def raw(index):
                    return torch.cuda.current_stream(index).cuda_stream
            _torch_stream = raw
        except ImportError:
            _torch_stream = lambda index: 0  # noqa: E731 (no torch: the default stream)
    return _torch_stream(device_index)
