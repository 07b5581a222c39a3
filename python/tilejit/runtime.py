"""Runtime and Kernel: load a .tile kernel and launch it on tensors, as Triton users launch a
@triton.jit kernel: `k = tilejit.load("my.tile"); k(a, b, c, config={"BN": 64})`."""

import json
import math
import threading
import weakref

from array import array

from . import _fastpath
from ._args import as_int64_array, config_text, pack_scalar, pack_tensor, pack_tensors
from ._native import TilejitError, check, encode, lib, raise_last_error, text
from ._stream import current_stream

_launch = lib.tj_launch


def _optional_flag(value, name):
    if value is None:
        return -1
    if not isinstance(value, bool):
        raise TilejitError(f"{name} must be True, False or None, got {value!r}")
    return int(value)


class Runtime:
    """A tilejit runtime: compiled kernels (memory and disk caches), prepared launches, the
    tuning database in use. Most programs use the default one (tilejit.runtime())."""

    def __init__(self, arch=None, cache_dir=None, tune_on_first_use=None, debug=None,
                 compile_timeout=None, verbose=False, device=0):
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise TilejitError(f"device must be a CUDA device ordinal (an int >= 0), "
                               f"got {device!r}")
        if compile_timeout is not None and not (isinstance(compile_timeout, (int, float))
                                                and compile_timeout >= 0):
            raise TilejitError(f"compile_timeout must be seconds >= 0, got {compile_timeout!r}")
        handle = lib.tj_runtime_new(
            encode(arch), encode(cache_dir), _optional_flag(tune_on_first_use, "tune_on_first_use"),
            _optional_flag(debug, "debug"),
            -1.0 if compile_timeout is None else float(compile_timeout), int(bool(verbose)),
            device)
        self._handle = check(handle)
        self.device_index = device
        self._finalizer = weakref.finalize(self, lib.tj_runtime_free, self._handle)

    @property
    def has_gpu(self):
        return check(lib.tj_has_gpu(self._handle)) == 1

    @property
    def arch(self):
        return text(lib.tj_arch(self._handle))

    @property
    def device(self):
        """The GPU's properties (name, arch, sm_count...); NoGpuError without one."""
        return json.loads(text(lib.tj_device_json(self._handle)))

    def load(self, source, name=None):
        """A kernel from a .tile file, or "embedded:<path>" for one shipped in the library."""
        handle = check(lib.tj_load(self._handle, encode(str(source)), encode(name)))
        return Kernel(self, handle)

    def use_database(self, path=None, trials=32, seconds=20.0, strategy="auto", repeats=10):
        """Launches take their shape's tuned configuration from the database at `path` (default:
        the CLI's, $TILEJIT_DB or ~/.cache/tilejit/tilejit.db); with tune_on_first_use, shapes
        with no winner are tuned within this budget. Needs a GPU."""
        check(lib.tj_use_tuning_database(self._handle, encode(path or ""), int(trials),
                                         float(seconds), encode(strategy), int(repeats)))


class Kernel:
    """A loaded kernel. Call it with its parameters in order (scratch tensors excluded):
    tensors (torch, or __cuda_array_interface__) and numbers for scalar parameters."""

    def __init__(self, runtime, handle):
        self._runtime = runtime
        self._rt = runtime._handle
        self._handle = handle
        self.info = json.loads(text(lib.tj_kernel_info_json(self._rt, handle)))
        self.name = self.info["name"]
        # (name, None) for a tensor parameter, (name, dtype) for a scalar one.
        self._params = [(p["name"], None if p["is_tensor"] else p["dtype"])
                        for p in self.info["params"] if not p["is_scratch"]]
        self._names = [name for name, _ in self._params]
        self._all_tensors = all(scalar is None for _, scalar in self._params)

    def __repr__(self):
        params = ", ".join(p["name"] + ": " + p["type"] for p in self.info["params"])
        return f"<tilejit.Kernel {self.name}({params})>"

    def _pack(self, args):
        if len(args) != len(self._params):
            names = ", ".join(n for n, _ in self._params)
            raise TilejitError(f"kernel '{self.name}' takes {len(self._params)} arguments "
                               f"({names}), got {len(args)}")
        if self._all_tensors:
            return pack_tensors(args, self._names)
        out = []
        device = -1
        for value, (name, scalar) in zip(args, self._params):
            if scalar is None:
                d = pack_tensor(out, value, name)
                if device < 0:
                    device = d
            else:
                pack_scalar(out, value, scalar, name)
        return out, device

    def __call__(self, *args, config=None, stream=None, synchronize=False):
        """Launches on `stream` (a raw CUstream int; default: PyTorch's current stream on the
        tensors' device). `config` forces generics or tunables: {"BN": 64}."""
        if self._all_tensors and _fastpath.fast is not None and len(args) == len(self._params):
            if _fastpath.fast.launch(self._rt, self._handle, args,
                                     config_text(config) if config else None, stream,
                                     bool(synchronize)) is not NotImplemented:
                return
        packed, device = self._pack(args)
        if stream is None:
            stream = current_stream(device) if device >= 0 else 0
        buf = array("q", packed)
        if _launch(self._rt, self._handle, buf.buffer_info()[0], len(packed),
                   config_text(config) if config else None, stream, 1 if synchronize else 0):
            raise_last_error()

    def resolve(self, *args, config=None):
        """The configuration a launch with these arguments would use, and why: a dict."""
        packed, _ = self._pack(args)
        buf, address = as_int64_array(packed)
        return json.loads(text(lib.tj_resolve_json(self._rt, self._handle, address, len(packed),
                                                    config_text(config))))

    def compile(self, *args, config=None):
        """Compiles the variant these arguments select (no GPU needed when the runtime has an
        arch): the generated CUDA, registers, shared memory... as a dict."""
        packed, _ = self._pack(args)
        buf, address = as_int64_array(packed)
        return json.loads(text(lib.tj_compile_json(self._rt, self._handle, address, len(packed),
                                                    config_text(config))))

    def tune(self, *args, config=None, stream=None, database=None, trials=32, seconds=20.0,
             strategy="auto", repeats=10):
        """Tunes this launch's shape unless the database already has a winner, and makes the
        database the runtime's. Every candidate must reproduce the default configuration's
        output; the tensors the kernel writes are left as they were. Returns a dict: config,
        tuned (False when nothing was measured), why."""
        if not (isinstance(trials, int) and trials >= 1 and repeats >= 1
                and isinstance(seconds, (int, float)) and seconds > 0 and math.isfinite(seconds)):
            raise TilejitError(f"tune budget: trials ({trials!r}) and repeats ({repeats!r}) "
                               f"must be integers >= 1 and seconds ({seconds!r}) > 0")
        packed, device = self._pack(args)
        if stream is None:
            stream = current_stream(device) if device >= 0 else 0
        buf, address = as_int64_array(packed)
        return json.loads(text(lib.tj_tune_json(
            self._rt, self._handle, address, len(packed), config_text(config), stream,
            encode(database or ""), trials, float(seconds), encode(strategy), int(repeats))))


_default = {}
_default_lock = threading.Lock()
# What use_database(device=None) asked for: (path, budget), given to every default runtime
# made after it too, so that ops on any GPU's tensors read the same tuned winners and plans.
_default_database = None


def default_runtime(device=0):
    """The default Runtime of CUDA device `device` (an ordinal; -1, a CPU tensor's, counts as
    0), created on first use; the environment's TILEJIT_TUNE, TILEJIT_DEBUG and
    TILEJIT_COMPILE_TIMEOUT apply. The ops launch on their tensors' device's."""
    device = max(device, 0)
    rt = _default.get(device)
    if rt is None:
        with _default_lock:
            rt = _default.get(device)
            if rt is None:
                rt = Runtime(device=device)
                if _default_database is not None:
                    rt.use_database(_default_database[0], **_default_database[1])
                _default[device] = rt
    return rt


def use_default_database(path=None, device=None, **budget):
    """The default runtimes take tuned configurations (and the ops their plans) from the
    database at `path` (default: the CLI's): device `device`'s, or with None every GPU's, those
    made later included. Errors (no GPU, a bad budget) come now, from device 0's (or the
    given device's) runtime."""
    global _default_database
    if device is not None:
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise TilejitError(f"use_database: device={device!r} is not a CUDA device ordinal "
                               "(an int >= 0) or None (every GPU)")
        default_runtime(device).use_database(path, **budget)
        return
    default_runtime(0).use_database(path, **budget)  # checks the arguments and the GPU
    with _default_lock:
        _default_database = (path, dict(budget))
        others = [rt for d, rt in _default.items() if d != 0]
    for rt in others:
        rt.use_database(path, **budget)
