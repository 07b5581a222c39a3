#!/usr/bin/env bash
# Quick start, command 1: set up, build (the CLI, libtilejit.so, and the Python package as a
# wheel in build/python-dist/), and run the main job:
#   tilejit tune --workload paged_sparse
# Without a GPU, tilejit says so in one line and exits non-zero after compiling what it can.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
# The wheel installs into any Python 3 environment (`pip install build/python-dist/*.whl`, or
# `pip install --no-build-isolation ./python` there); Debian's own Python refuses pip installs
# outside a virtual environment, so nothing is installed here.
rm -rf build/python-dist
/usr/bin/python3 -m pip wheel --quiet --no-build-isolation --no-deps ./python -w build/python-dist \
  2>&1 | grep -v "Running pip as the 'root' user" || true
rm -rf python/build python/*.egg-info
echo "quickstart: Python package: $(ls build/python-dist/*.whl)"
exec build/tilejit tune --workload paged_sparse "$@"
