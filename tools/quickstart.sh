#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the main job:
#   tilejit tune --workload paged_sparse
# Without a GPU, tilejit says so in one line and exits non-zero after compiling what it can.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
exec build/tilejit tune --workload paged_sparse "$@"
