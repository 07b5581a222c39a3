#!/usr/bin/env bash
# Where dq by atomics spends its time: Nsight Compute on attn_bwd at N = 8192 D = 128 (dense,
# the Hopper tile at ISSUE = 0) with dq by atomics (ATOMIC_DQ = 1) and without (0, dq by
# attn_dq), the L2's reduction traffic and the stall reasons side by side. Stage the library
# (tools/stage_device.sh, test binaries removed); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
need_ncu
for a in 1 0; do
  timeout 200 "$NCU" --clock-control none --kernel-name-base function -k 'regex:^attn_bwd$' \
    --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --metrics lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    $PY bench/attention_ncu_target.py --dense-only --atomic-dq $a >"$out/ncu_atomic_$a.txt" 2>&1
  echo "== ATOMIC_DQ=$a: ncu exit $?"
  grep -E '^    (Duration|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|lts__|sm__pipe)|stalled_(barrier|long_score|short_score|mio_thr|math_pipe|wait|lg_thr|membar|dispatch|selected|no_instr)' \
    "$out/ncu_atomic_$a.txt" | head -40
done
