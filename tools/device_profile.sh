#!/usr/bin/env bash
# Profiles paged_sparse on the GPU machine with Nsight Compute: one launch per (case, config),
# the speed-of-light, occupancy and warp-stall sections, and the hottest SASS lines by stall.
#   CASES="D256/ps16/ctx131072/r0.05 D128/ps64/ctx32768/r0.02" SETS="CHUNK=512,BN=32,STAGES=1,WARPS=4"
# PEER_SETS="BN64/w4/s2/nopf/split512 ..." profiles our Triton peer's kernels (split and combine)
# on the same cases with those configurations, for a side-by-side reading.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ncu_common.sh
EXTRA=dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__cycles_active.avg
KEEP="Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Waves Per SM|Warp Cycles Per Issued|Grid Size|Block Size|Dynamic Shared|stalled|dram__bytes|inst_executed|sector_hit|wavefronts|cycles_active|paged_sparse"
for c in ${CASES:-D256/ps16/ctx131072/r0.05}; do
  for s in ${SETS:-CHUNK=512,BN=32,STAGES=1,WARPS=4}; do
    echo "=== $c $s"
    $NCU --clock-control none -k regex:paged_sparse -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --metrics "$STALLS,$EXTRA" \
      "$B" run --workload paged_sparse --case "$c" --set "$s" --seed 7 >"$out/ncu.txt" 2>&1
    grep -E "$KEEP" "$out/ncu.txt" | grep -v "^==PROF==" | head -60
  done
  for s in ${PEER_SETS:-}; do
    echo "=== peer $c $s"
    $NCU --clock-control none -k regex:_paged_sparse -c 2 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --metrics "$STALLS,$EXTRA" \
      python3 bench/peers/peer_one_config.py --case "$c" --config "$s" --launches 1 >"$out/ncu.txt" 2>&1
    grep -E "$KEEP" "$out/ncu.txt" | grep -v "^==PROF==" | head -90
  done
done
