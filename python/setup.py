"""Packs libtilejit.so into the package (tilejit/_lib/), building it with CMake when the
checkout has none yet. The wheel is tagged py3-none-<platform>: the library is reached through
ctypes, so one wheel serves every Python 3 (3.11 here, 3.12 on the GPU machine)."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: pip installs without building a wheel
    bdist_wheel = None

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def library_path():
    """$TILEJIT_LIBRARY, else the checkout's build/capi/libtilejit.so (built if missing)."""
    env = os.environ.get("TILEJIT_LIBRARY")
    if env:
        return Path(env)
    build = Path(os.environ.get("TILEJIT_BUILD_DIR", REPO / "build"))
    lib = build / "capi" / "libtilejit.so"
    if not lib.exists():
        subprocess.check_call(["cmake", "-S", str(REPO), "-B", str(build), "-G", "Ninja",
                               "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "tilejit_shared"])
        subprocess.call(["cmake", "--build", str(build), "--target", "tilejit_pyfast"])
    return lib


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "tilejit" / "_lib"
        dest.mkdir(parents=True, exist_ok=True)
        # The real file, under the name the package loads (no symlinks in wheels).
        lib = library_path()
        shutil.copyfile(lib.resolve(), dest / "libtilejit.so")
        # The C launch path, when the build made it (Python 3.11+ headers were there).
        fast = lib.parent / "_fast.abi3.so"
        if fast.exists():
            shutil.copyfile(fast, Path(self.build_lib) / "tilejit" / "_fast.abi3.so")


class PlatformDistribution(Distribution):
    def has_ext_modules(self):  # a binary inside: a platform wheel, not a pure one
        return True


commands = {"build_py": BuildWithLibrary}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")

    commands["bdist_wheel"] = PlatformWheel

setup(cmdclass=commands, distclass=PlatformDistribution)
