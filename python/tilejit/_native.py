"""libtilejit.so through ctypes: finding it, declaring its C ABI (capi/tilejit_c.h), and
turning its errors into Python exceptions. ctypes needs no compiler and no Python headers, so
one library serves every Python version."""

import ctypes
import os
from pathlib import Path


class TilejitError(Exception):
    """A problem with the input or the environment; the message names it (a DSL line:col, a
    tensor and the shape it should have, an unknown name...)."""


class NoGpuError(TilejitError):
    """No usable NVIDIA GPU (no driver, no device)."""


class InternalError(TilejitError):
    """A broken invariant inside tilejit: a bug, never the caller's fault."""


_KINDS = {1: TilejitError, 2: NoGpuError, 3: InternalError}


def _candidates():
    """Where libtilejit.so may be, in order: $TILEJIT_LIBRARY, inside the installed package,
    the checkout's build directory (python/tilejit -> build/capi)."""
    env = os.environ.get("TILEJIT_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "_lib" / "libtilejit.so"
    yield here.parent.parent / "build" / "capi" / "libtilejit.so"


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.exists():
            return ctypes.CDLL(str(path))
    raise ImportError(
        "tilejit: libtilejit.so not found (looked at " + ", ".join(tried) + "); build it "
        "with tools/build.sh, install the package with `pip install --no-build-isolation "
        "./python`, or set TILEJIT_LIBRARY to its path")


lib = _load()

_c = ctypes.c_char_p
_p = ctypes.c_void_p
_i = ctypes.c_int
_d = ctypes.c_double
_i64 = ctypes.c_int64
_packed = ctypes.c_void_p  # an int64 array's address

for name, restype, argtypes in [
    ("tj_version", _c, []),
    ("tj_last_error", _c, []),
    ("tj_last_error_kind", _i, []),
    ("tj_runtime_new", _p, [_c, _c, _i, _i, _d, _i, _i]),
    ("tj_runtime_free", None, [_p]),
    ("tj_has_gpu", _i, [_p]),
    ("tj_arch", _c, [_p]),
    ("tj_device_json", _c, [_p]),
    ("tj_default_database_path", _c, []),
    ("tj_use_tuning_database", _i, [_p, _c, _i, _d, _c, _i]),
    ("tj_load", _i, [_p, _c, _c]),
    ("tj_kernel_info_json", _c, [_p, _i]),
    ("tj_launch", _i, [_p, _i, _packed, _i64, _c, _p, _i]),
    ("tj_resolve_json", _c, [_p, _i, _packed, _i64, _c]),
    ("tj_compile_json", _c, [_p, _i, _packed, _i64, _c]),
    ("tj_tune_json", _c, [_p, _i, _packed, _i64, _c, _p, _c, _i, _d, _c, _i]),
    ("tj_paged_sparse_decode", _i, [_p, _packed, _i64, _d, _c, _p, _i]),
    ("tj_repack_int4", _i, [_p, _packed, _i64, _i64, _p, _i]),
    ("tj_dequant_linear", _i, [_p, _packed, _i64, _i64, _i, _c, _p, _i]),
    ("tj_int8_linear", _i, [_p, _packed, _i64, _c, _p, _i]),
    ("tj_ring_new_id", _i, [_c]),
    ("tj_ring_group_new", _p, [_p, _c, _i, _i]),
    ("tj_ring_group_free", None, [_p]),
    ("tj_ring_attention_forward", _i, [_p, _p, _packed, _i64, _i, _d, _p, _i]),
    ("tj_ring_attention_backward", _i, [_p, _p, _packed, _i64, _i, _d, _p, _i]),
    ("tj_attention_forward", _i, [_p, _packed, _i64, _i, _i, _d, _c, _p, _i]),
    ("tj_attention_backward", _i, [_p, _packed, _i64, _i, _i, _d, _c, _p, _i]),
    ("tj_attention_forward_sparse", _i, [_p, _packed, _i64, _i64, _i, _i, _d, _c, _p, _i]),
    ("tj_attention_backward_sparse", _i, [_p, _packed, _i64, _i64, _i, _i, _d, _c, _p, _i]),
    ("tj_linear_attn_forward", _i, [_p, _packed, _i64, _d, _c, _p, _i]),
    ("tj_linear_attn_backward", _i, [_p, _packed, _i64, _d, _c, _p, _i]),
    ("tj_hbv_backward_form", _i64, [_i64, _i64, _i64]),
    ("tj_hbv_op_form", _i64, [_p, _i64, _i64, _i64, _i64]),
    ("tj_hbv_starts_interval", _i64, [_i64]),
    ("tj_hbv_buffer_shape", _i, [_c, _i64, _i64, _i64, _i64, _packed, _i]),
    ("tj_hbv_forward", _i, [_p, _packed, _i64, _i, _i64, _i, _c, _p, _i]),
    ("tj_hbv_backward", _i, [_p, _packed, _i64, _i64, _i, _i, _c, _p, _i]),
    ("tj_gated_delta_rule_forward", _i,
     [_p, _packed, _i64, _i, _packed, _i64, _i, _i64, _d, _c, _p, _i]),
    ("tj_gated_delta_rule_backward", _i,
     [_p, _packed, _i64, _i, _i, _packed, _i64, _i, _i64, _d, _c, _p, _i]),
]:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes


def raise_last_error():
    """Raises the exception for the calling thread's last failed call."""
    message = lib.tj_last_error().decode("utf-8", "replace")
    raise _KINDS.get(lib.tj_last_error_kind(), InternalError)(message)


def check(result):
    """A call's result, or its error raised: -1 or NULL mean failure."""
    if result is None or (isinstance(result, int) and result < 0):
        raise_last_error()
    return result


def text(result):
    """A returned string (bytes), or its error raised."""
    return check(result).decode("utf-8")


def encode(s):
    return None if s is None else str(s).encode("utf-8")
