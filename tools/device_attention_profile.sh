#!/usr/bin/env bash
# Nsight Compute on attention's forward (dense attn_fwd and block-sparse attn_fwd_sparse, bf16
# B=4 H=16 D=128, the Hopper tile BM 128, BN 128, 8 warps): speed of light, the tensor pipe's
# use, warp stalls per issued instruction and the hottest SASS lines by stall. Carry .device.
#   SHAPES="B=4,H=16,N=8192,D=128 B=4,H=16,N=16384,D=128,DENSITY=10" tools/device_attention_profile.sh
# The backward's main kernel: KERNEL=attn_bwd SETS=backward:TR=1,backward:BN=128,... (ncu -k:
# an exact name, or regex:...).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ncu_common.sh
B=.device/bin/tilejit
EXTRA=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__cycles_active.avg,lts__t_bytes.sum,smsp__warps_issue_stalled_barrier.avg,smsp__inst_executed_op_ldsm.sum
KEEP="Duration|Throughput|Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots|stalled|gmma|pipe_xu|inst_executed|wavefronts|cycles_active|lts__t_bytes|ldsm"
SETS=${SETS:-forward:BM=128,forward:BN=128,forward:WARPS=8,forward:STAGES=2}
for sh in ${SHAPES:-B=4,H=16,N=8192,D=128 B=4,H=16,N=16384,D=128,DENSITY=10}; do
  echo "=== $sh $SETS"
  $NCU --clock-control none -k "${KERNEL:-regex:attn_fwd}" -c 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SourceCounters \
    --metrics "$STALLS,$EXTRA" \
    "$B" run --workload attention --dtype bf16 --shape "$sh" --set "$SETS" --seed 7 >"$out/ncu.txt" 2>&1
  grep -E "$KEEP" "$out/ncu.txt" | grep -v "^==PROF==" | head -70
  # SourceCounters: the warp-stall sampling table's hottest lines.
  sed -n '/Warp Stall Sampling/,/^ *$/p' "$out/ncu.txt" | head -40
  cp "$out/ncu.txt" "$out/ncu-${sh//[,=]/_}.txt"
done
