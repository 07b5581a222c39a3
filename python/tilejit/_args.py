"""Arguments into the C ABI's packed int64 records (capi/tilejit_c.h), without copying any
tensor: PyTorch tensors (data pointer, sizes, strides), objects with __cuda_array_interface__
(CuPy, Numba) and host arrays with __array_interface__ (NumPy: tilejit checks them, and says
that a kernel needs GPU memory). The packer is chosen once per Python type."""

import struct
from array import array

from ._native import TilejitError

TENSOR, F32, I32, I64, DENSE_TENSOR = 0, 1, 2, 3, 4

# capi/tilejit_c.h's dtype codes.
_CODES = {"bool": 0, "i8": 1, "u8": 2, "i16": 3, "i32": 4, "u32": 5, "i64": 6, "f16": 7,
          "bf16": 8, "f32": 9, "f64": 10}
DTYPE_NAMES = {code: name for name, code in _CODES.items()}

# Array-interface type strings (little-endian, as on every machine tilejit runs on).
_TYPESTR = {"|b1": 0, "|i1": 1, "|u1": 2, "<i2": 3, "<i4": 4, "<u4": 5, "<i8": 6, "<f2": 7,
            "<f4": 9, "<f8": 10}

_torch_codes = {}  # torch.dtype -> code, filled on first use (torch is optional)


def _torch_code(dtype):
    code = _torch_codes.get(dtype)
    if code is None:
        name = str(dtype).replace("torch.", "")
        code = {"bool": 0, "int8": 1, "uint8": 2, "int16": 3, "int32": 4, "uint32": 5,
                "int64": 6, "float16": 7, "half": 7, "bfloat16": 8, "float32": 9, "float": 9,
                "float64": 10, "double": 10}.get(name)
        if code is None:
            raise TilejitError(f"tensors of {dtype} are not supported (tilejit has "
                               + ", ".join(_CODES) + ")")
        _torch_codes[dtype] = code
    return code


def _pack_torch(out, t, name):
    device = t.get_device()  # -1 on the host
    out.extend((TENSOR, t.data_ptr(), _torch_code(t.dtype), 1 if device >= 0 else 0,
                max(device, 0), t.dim()))
    out.extend(t.shape)
    out.extend(t.stride())
    return device


def _interface_record(out, face, name, on_gpu):
    code = _TYPESTR.get(face["typestr"])
    if code is None:
        raise TilejitError(f"tensor '{name}': element type {face['typestr']} is not supported")
    shape = tuple(face["shape"])
    size = int(face["typestr"][2:])
    strides = face.get("strides")
    if strides is None:  # row-major dense
        strides, step = [], 1
        for s in reversed(shape):
            strides.append(step)
            step *= max(s, 1)
        strides.reverse()
    else:
        if any(s % size for s in strides):
            raise TilejitError(f"tensor '{name}': strides {tuple(strides)} (bytes) are not "
                               f"multiples of its {size}-byte elements")
        strides = [s // size for s in strides]
    out.extend((TENSOR, face["data"][0] or 0, code, 1 if on_gpu else 0, 0, len(shape)))
    out.extend(shape)
    out.extend(strides)
    return 0 if on_gpu else -1


def _pack_cuda_array(out, t, name):
    return _interface_record(out, t.__cuda_array_interface__, name, True)


def _pack_host_array(out, t, name):
    return _interface_record(out, t.__array_interface__, name, False)


_packers = {}  # type -> packer
_torch_tensor_type = None  # torch.Tensor, once one was packed: the fast path of pack_tensors


def _packer(value, name):
    kind = type(value)
    packer = _packers.get(kind)
    if packer is None:
        if hasattr(value, "data_ptr") and hasattr(value, "stride") and hasattr(value, "get_device"):
            packer = _pack_torch
            global _torch_tensor_type
            if kind.__name__ == "Tensor" and kind.__module__.startswith("torch"):
                _torch_tensor_type = kind
        elif hasattr(value, "__cuda_array_interface__"):
            packer = _pack_cuda_array
        elif hasattr(value, "__array_interface__"):
            packer = _pack_host_array
        else:
            raise TilejitError(f"argument '{name}' is a {kind.__name__}, not a tensor (a "
                               "torch.Tensor, or an array with __cuda_array_interface__)")
        _packers[kind] = packer
    return packer


def pack_tensor(out, value, name):
    """Appends the tensor's record; returns its CUDA device index, or -1 in host memory."""
    return _packer(value, name)(out, value, name)


def pack_tensors(values, names):
    """Every tensor's record in one list, and the first CUDA device index among them (-1: none).
    The loop a typed op runs on every call: torch.Tensor is packed inline (no call per tensor),
    which is most of the Python overhead a launch has."""
    out = []
    extend = out.extend
    device = -1
    codes = _torch_codes
    for value, name in zip(values, names):
        if type(value) is _torch_tensor_type:
            d = value.get_device()
            code = codes.get(value.dtype)
            if code is None:
                code = _torch_code(value.dtype)
            shape = value.shape
            if value.is_contiguous():  # the C side derives the strides (one call less here)
                extend((DENSE_TENSOR, value.data_ptr(), code, 1 if d >= 0 else 0,
                        d if d > 0 else 0, len(shape), *shape))
            else:
                extend((TENSOR, value.data_ptr(), code, 1 if d >= 0 else 0, d if d > 0 else 0,
                        len(shape), *shape, *value.stride()))
        else:
            d = _packer(value, name)(out, value, name)
        if device < 0:
            device = d
    return out, device


def pack_scalar(out, value, dtype, name):
    """A scalar parameter of DSL type `dtype` ("f32", "i32", "i64")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TilejitError(f"argument '{name}' ({dtype}) must be a number, got "
                           f"{type(value).__name__}")
    if dtype == "f32":
        out.extend((F32, struct.unpack("q", struct.pack("d", float(value)))[0]))
    elif dtype in ("i32", "i64"):
        if not isinstance(value, int):
            raise TilejitError(f"argument '{name}' ({dtype}) must be an integer, got {value!r}")
        bits = 31 if dtype == "i32" else 63
        if not -(1 << bits) <= value < (1 << bits):
            raise TilejitError(f"argument '{name}' = {value} does not fit in {dtype}")
        out.extend((I32 if dtype == "i32" else I64, value))
    else:
        raise TilejitError(f"argument '{name}': scalar parameters of type {dtype} are not "
                           "supported from Python")


def as_int64_array(values):
    """The packed list as a C int64 array, and its address (kept alive by the caller)."""
    a = array("q", values)
    return a, a.buffer_info()[0]


def config_text(config):
    """{"BN": 64, "T": "f16"} as the C ABI's "BN=64;T=f16"."""
    if not config:
        return None
    if not isinstance(config, dict):
        raise TilejitError(f"config must be a dict of names to values, got {type(config).__name__}")
    items = []
    for k, v in config.items():
        k, v = str(k), str(v)
        if not k or any(c in k + v for c in ";=") or not v:
            raise TilejitError(f"config entry {k!r}: {v!r} is not a name and a value")
        items.append(f"{k}={v}")
    return ";".join(items).encode()
