#!/usr/bin/env bash
# Copies the built binaries a GPU run needs into .device/bin (git-ignored) so they can travel to
# the device machine as one carried folder.
set -euo pipefail
cd "$(dirname "$0")/.."
# Another commit's CLI staged by tools/stage_base.sh (tilejit_base) and the SOL program
# (gather_sol, tools/build_sol.sh) are kept.
mkdir -p .device/bin && find .device/bin -type f ! -name tilejit_base ! -name gather_sol ! -name weight_sol -delete
for f in build/tilejit build/tests/gpu/gpu_kernels_test build/tests/gpu/gpu_tune_test build/tests/runtime/gpu_driver_test build/tests/gpu/gpu_workloads_test "$@"; do
  [ -f "$f" ] && cp "$f" .device/bin/
done
# Without their symbols the binaries are half the size: a carry holds at most 64 MiB with the
# tracked tree (about 19 MiB), and five unstripped test binaries went over it.
command -v strip >/dev/null && strip --strip-unneeded .device/bin/* 2>/dev/null
du -sh .device/bin
