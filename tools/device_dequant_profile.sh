#!/usr/bin/env bash
# Profiles w4a16_tc on the GPU machine with Nsight Compute: one launch per (shape, config), the
# speed-of-light, occupancy and warp-state sections, the stall reasons, the tensor pipe's and
# L2's use. Carry .device (tools/stage_device.sh).
#   RUNS="LAYER=qkv,M=256,BITS=4|WG=1,SA=1,BN=128,BM=128,WARPS=8,STEPS=80,STAGES=3" tools/device_dequant_profile.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ncu_common.sh
EXTRA=lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__cycles_active.avg,smsp__issue_active.avg.pct_of_peak_sustained_active
KEEP="Duration|Achieved Occupancy|Registers Per|Waves Per SM|Warp Cycles Per Issued|Grid Size|Block Size|Dynamic Shared|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|stalled|lts__|bank_conflicts|inst_executed|cycles_active|issue_active"
i=0
for r in ${RUNS:?RUNS=\"SHAPE|SET ...\"}; do
  shape=${r%%|*}; set=${r#*|}; i=$((i + 1))
  echo "=== $shape $set"
  $NCU --clock-control none -k regex:w4a16_tc -c 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --metrics "$STALLS,$EXTRA" \
    "$B" bench --workload dequant_gemm --plan repack_tc --shape "$shape" --set "linear:${set//,/,linear:}" \
    --repeats 1 >"$out/ncu-$i.txt" 2>&1
  grep -E "$KEEP" "$out/ncu-$i.txt" | grep -v "^==PROF==" | head -50
done
