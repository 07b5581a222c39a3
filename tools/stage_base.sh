#!/usr/bin/env bash
# Builds the tilejit CLI at another commit (a git worktree under /tmp, build folder build-base/)
# and stages it as .device/bin/tilejit_base, so that tools/device_ab.sh can time that commit's
# kernels beside the working tree's in one device call (timings compare only within one run).
#   tools/stage_base.sh main~3   # tools/stage_device.sh keeps it; then device_ab.sh on the device
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: tools/stage_base.sh REV}
sha=$(git rev-parse --verify "$rev^{commit}")
tree=/tmp/tilejit-base-$sha
[ -d "$tree" ] || git worktree add --detach "$tree" "$sha" >/dev/null
cmake -S "$tree" -B build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build build-base --target tilejit -j "$(nproc 2>/dev/null || echo 2)"
mkdir -p .device/bin
cp build-base/tilejit .device/bin/tilejit_base
echo "staged $(git log --oneline -1 "$sha") as .device/bin/tilejit_base"
