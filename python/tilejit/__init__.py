"""tilejit from Python: tile kernels written once in tilejit's DSL, compiled at run time,
tuned per shape, launched on PyTorch tensors without copies.

    import tilejit
    o, lse = tilejit.ops.paged_sparse_decode(q, k_cache, v_cache, block_table, seq_lens,
                                             kept_idx, kept_len)
    k = tilejit.load("my.tile")
    k(a, b, c, config={"BN": 64})
    k.tune(a, b, c)                  # stores the winner in the tuning database
"""

from . import ops
from ._native import InternalError, NoGpuError, TilejitError, lib, text
from .runtime import Kernel, Runtime, default_runtime, use_default_database

__all__ = ["Kernel", "Runtime", "TilejitError", "NoGpuError", "InternalError", "load", "ops",
           "runtime", "tune", "use_database", "default_database_path", "version"]

__version__ = lib.tj_version().decode()

def runtime(device=0):
    """The default Runtime of CUDA device `device` (created on first use; the environment's
    TILEJIT_TUNE, TILEJIT_DEBUG and TILEJIT_COMPILE_TIMEOUT apply)."""
    return default_runtime(device)


def version():
    return __version__


def load(source, name=None):
    """A kernel of the default runtime: a .tile path, or "embedded:<path>"."""
    return runtime().load(source, name)


def use_database(path=None, device=None, **budget):
    """The default runtimes take tuned configurations, and the ops their tuned plans, from this
    database (default: the CLI's): every GPU's (device=None, runtimes made later too) or one
    device ordinal's. Budget: trials, seconds, strategy, repeats (tuning on first use)."""
    use_default_database(path, device, **budget)


def default_database_path():
    return text(lib.tj_default_database_path())


def tune(kernel, *args, **options):
    """kernel.tune(*args, **options): tunes the launch's shape unless it has a winner."""
    return kernel.tune(*args, **options)


try:  # torch.library registration, so that torch.compile can call the ops
    from . import _torch_ops  # noqa: F401
except ImportError:  # no torch (or one without torch.library.custom_op): plain calls only
    pass

try:  # the C launch path for torch tensors (tilejit._fast), when it was built
    import torch as _torch
except ImportError:
    _torch = None
if _torch is not None:
    from . import _fastpath
    _fastpath.enable_for_torch(_torch)
