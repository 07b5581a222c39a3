#!/usr/bin/env bash
# Hardware counters of the attention kernels at the Hopper tiles (bench/attention_ncu_target.py)
# through Nsight Compute, where the device's runtime lets ncu read them (Firecracker: see
# /work/.library/device/KINDS.md); clocks left alone (--clock-control none, METHOD.md). Writes
# $OUT/ncu_attention.txt (details) and prints per kernel the lines that say where time goes.
# Through the Python ops (attn_dq and the block-sparse kernels included); the CLI-based sibling,
# one kernel of `tilejit bench` at a time, is tools/device_attention_profile.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
need_ncu
# Every attention launch (two passes per case, the first compiling): 16 kernels.
timeout 500 "$NCU" --clock-control none --kernel-name-base function -k 'regex:attn_' \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  $PY bench/attention_ncu_target.py >"$out/ncu_attention.txt" 2>&1
echo "ncu: exit $?"
grep -E '^  attn_|^    (Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|sm__pipe_tensor_op_gmma|Dynamic Shared)|smsp__average_warps_issue_stalled_(barrier|long_score|short_score|mio_thr|math_pipe|wait|lg_thr|dispatch|not_sel|selected|no_instr|sleeping|membar|branch)' \
  "$out/ncu_attention.txt" | head -150
tail -5 "$out/ncu_attention.txt"
