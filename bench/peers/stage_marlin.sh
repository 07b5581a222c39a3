#!/usr/bin/env bash
# Stage Marlin's public source (IST-DASLab/marlin, Apache-2.0) into the ignored .peers/marlin/,
# so that it travels to the device with `carry: [".peers"]`; dequant_gemm_peer.py and
# dequant_decode_step.py build it there with torch.utils.cpp_extension.load. Never committed.
#
#   bench/peers/stage_marlin.sh [SOURCE]
#
# SOURCE: a git directory of the repository (bare or not; default: the mirror that the `fetch`
# tool makes, /work/.mirror/IST-DASLab+marlin/repo) or a plain checkout. The files are copied
# as they are (no patch: CUDA 13 builds them with the flags torch's extension builder passes,
# --expt-relaxed-constexpr among them), though as they are the kernel faults on an H100 under
# CUDA 13 (an illegal instruction: bench/README.md says why and what the staged copy changes).
# About 60 KB.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:-${MARLIN_SRC:-/work/.mirror/IST-DASLab+marlin/repo}}
dest=.peers/marlin
files="LICENSE marlin/__init__.py marlin/marlin_cuda.cpp marlin/marlin_cuda_kernel.cu"

rm -rf "$dest"
mkdir -p "$dest/marlin"
if [ -f "$src/marlin/marlin_cuda_kernel.cu" ]; then          # a plain checkout
  for f in $files; do cp "$src/$f" "$dest/$f"; done
  rev=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
elif git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null; then   # a git directory
  for f in $files; do git --git-dir="$src" show "HEAD:$f" >"$dest/$f"; done
  rev=$(git --git-dir="$src" rev-parse HEAD)
else
  echo "stage_marlin.sh: $src is neither a Marlin checkout nor its git directory" >&2
  echo "  (fetch github:IST-DASLab/marlin, or pass a checkout's path)" >&2
  exit 1
fi
echo "IST-DASLab/marlin $rev" >"$dest/SOURCE"
echo "staged Marlin $rev into $dest ($(du -sk "$dest" | cut -f1) KB); .peers is $(du -sk .peers | cut -f1) KB"
