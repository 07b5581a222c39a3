#!/usr/bin/env bash
# Profiles paged_sparse on the GPU machine with Nsight Compute: one launch per (case, config),
# the speed-of-light, occupancy and warp-stall sections, and the hottest SASS lines by stall.
#   CASES="D256/ps16/ctx131072/r0.05 D128/ps64/ctx32768/r0.02" SETS="CHUNK=512,BN=32,STAGES=1,WARPS=4"
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin/tilejit
NCU=${NCU:-ncu}
STALLS=$(printf "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio," long_scoreboard barrier short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected dispatch_stall no_instruction membar drain branch_resolving imc_miss)
STALLS=${STALLS%,}
for c in ${CASES:-D256/ps16/ctx131072/r0.05}; do
  for s in ${SETS:-CHUNK=512,BN=32,STAGES=1,WARPS=4}; do
    echo "=== $c $s"
    $NCU --clock-control none -k regex:paged_sparse -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --metrics "$STALLS" \
      "$B" run --workload paged_sparse --case "$c" --set "$s" --seed 7 >"$out/ncu.txt" 2>&1
    grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Warp Cycles Per Issued|Stall|Issued Warp|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit|Grid Size|Dynamic Shared|stalled" "$out/ncu.txt" | head -60
  done
done
