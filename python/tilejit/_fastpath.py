"""The C launch path (tilejit._fast, python/tilejit/_fast.c), when it was built: found inside
the installed package, else beside the checkout's libtilejit.so. Without it (or for tensors
that are not torch.Tensor) the pure-Python packer in _args.py does the same work, slower.
$TILEJIT_PURE_PYTHON=1 turns it off (the tests run both paths)."""

import importlib.machinery
import importlib.util
import os
from pathlib import Path

from . import _args
from ._native import InternalError, NoGpuError, TilejitError, lib

fast = None


def _find():
    if os.environ.get("TILEJIT_PURE_PYTHON") == "1":
        return None
    try:
        from . import _fast  # the installed package
        return _fast
    except ImportError:
        pass
    # A checkout: the module sits beside the libtilejit.so that _native loaded.
    candidates = [Path(lib._name).resolve().parent / "_fast.abi3.so"]
    for path in candidates:
        if path.exists():
            loader = importlib.machinery.ExtensionFileLoader("tilejit._fast", str(path))
            spec = importlib.util.spec_from_file_location("tilejit._fast", path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
    return None


def enable_for_torch(torch):
    """Registers torch.Tensor, its dtypes and the current-stream function with the C path."""
    global fast
    module = _find()
    if module is None:
        return
    codes = {}
    for name in ("bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "float16",
                 "bfloat16", "float32", "float64"):
        dtype = getattr(torch, name, None)
        if dtype is not None:
            codes[dtype] = _args._torch_code(dtype)
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:
        def raw(index):
            return torch.cuda.current_stream(index).cuda_stream
    module.register(torch.Tensor, codes, raw, (TilejitError, NoGpuError, InternalError))
    fast = module
