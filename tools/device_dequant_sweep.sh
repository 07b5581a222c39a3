#!/usr/bin/env bash
# One device call for dequant_gemm kernel work: the dequant GPU tests, then w4a16_tc swept per
# (layer, M) beside fp16 cuBLAS in the same run (medians, L2 flushed), the best of each value of
# a tunable (default WG: mma.sync against wgmma) tabulated last. Carry .device (tools/stage_device.sh).
#   LAYERS="qkv down" MS="64 256 2048" SPLIT=WG TESTS='GpuDequant.*' tools/device_dequant_sweep.sh
# SWEEP_<M> overrides the sweep of one M (a `tilejit bench --sweep` spec for the linear step;
# several specs separated by ';' are swept one after another, e.g. pairs of BN and WARPS).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; logs=/tmp/tilejit-logs; mkdir -p "$out" "$logs"
export PYTHONUNBUFFERED=1 TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin/tilejit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${TESTS:-GpuDequant.*}" != none ]; then
  OUT=$logs GTEST_ARGS="--gtest_filter=${TESTS:-GpuDequant.*}" EXTRA_GPU_TESTS= \
    timeout "${TEST_TIMEOUT:-300}" tools/gpu_check.sh 2>&1 | tail -12
fi
# Sweeps per M (qkv's K is 20 tiles of 128, down's 76: STEPS 20 or 80 is all of K).
default_sweep() {
  local m=$1 all=$2
  case $m in
    1) echo "linear:WG=0|1,SA=0|1,BN=64|128,WARPS=4|8,BM=8,STEPS=2|5,STAGES=2|3" ;;
    16) echo "linear:WG=0|1,SA=0|1,BN=64|128,WARPS=4|8,BM=16,STEPS=5|10,STAGES=2|3" ;;
    64) echo "linear:WG=0|1,SA=0|1,BN=64|128,WARPS=4|8,BM=32|64,STEPS=10|$all,STAGES=2|3" ;;
    256) echo "linear:WG=0|1,SA=0|1,BN=64|128,WARPS=4|8,BM=64|128|256,STEPS=10|$all,STAGES=2|3" ;;
    *) echo "linear:WG=0|1,SA=0|1,BN=64|128,WARPS=4|8,BM=64|128|256,STEPS=$all,STAGES=2|3|4" ;;
  esac
}
for layer in ${LAYERS:-qkv}; do
  all=20; [ "$layer" = down ] && all=80
  for m in ${MS:-1 16 64 256 2048}; do
    var=SWEEP_$m; specs=${!var:-$(default_sweep "$m" "$all")}
    IFS=';' read -ra spec_list <<<"$specs"
    for spec in "${spec_list[@]}"; do
      start=$(date +%s)
      timeout "${SWEEP_TIMEOUT:-240}" "$B" bench --workload dequant_gemm --plan repack_tc \
        --shape "LAYER=$layer,M=$m,BITS=4" --sweep "$spec" --repeats 20 --out "$out/sweeps.jsonl" \
        >>"$logs/bench.txt" 2>>"$logs/bench.err"
      echo "$layer M=$m $spec: exit $? ($(( $(date +%s) - start )) s)"
    done
  done
done
layers=$(echo ${LAYERS:-qkv} | tr ' ' ','); ms=$(echo ${MS:-1 16 64 256 2048} | tr ' ' ',')
timeout 200 python3 bench/peers/dequant_gemm_peer.py --peers cublas_fp16 --m "$ms" --shapes "$layers" \
  --out "$out/fp16.jsonl" >"$logs/fp16.log" 2>&1 || tail -3 "$logs/fp16.log"
tail -20 "$logs/bench.err" > "$out/bench_err_tail.txt"
python3 bench/dequant_sweep_table.py --sweeps "$out/sweeps.jsonl" --fp16 "$out/fp16.jsonl" \
  --split "${SPLIT:-WG,SA}" | tee "$out/table.md"
