#!/usr/bin/env bash
# The packages as their users get them (after tools/build.sh):
#   - C++: `cmake --install build --prefix P`, then examples/cpp_app configured against P alone
#     (find_package(tilejit CONFIG)), built and run (compile-only without a GPU);
#   - Python: `pip install --no-build-isolation ./python` (into a scratch directory), and its
#     CPU tests run against the installed package, not the checkout; then bench/plot.py's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-/usr/bin/python3} # Debian's: where the setup script's packages are
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tilejit-package.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

echo "package: C++ install into a scratch prefix, examples/cpp_app against it"
cmake --install build --prefix "$scratch/prefix" >/dev/null
cmake -S examples/cpp_app -B "$scratch/app" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/app" >/dev/null
"$scratch/app/tilejit_app"

echo "package: pip install ./python, and its tests against the installed package"
TILEJIT_BUILD_DIR="$PWD/build" "$python" -m pip install --quiet --no-build-isolation --no-deps \
  --target "$scratch/site" ./python 2>&1 | grep -v "Running pip as the 'root' user" || true
test -f "$scratch/site/tilejit/_lib/libtilejit.so"
rm -rf python/build python/*.egg-info # pip's in-tree build leftovers
(cd "$scratch" && PYTHONPATH="$scratch/site" TILEJIT_TEST_INSTALLED=1 \
   "$python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests")
"$python" -m pytest -q -p no:cacheprovider bench/tests
