#!/usr/bin/env bash
# Second call of the several-GPU session (issue 20, plus the checks the tenth session left):
#   1. tune --devices all on every GPU of the host: paged_sparse's ctx32768 shapes (several, so
#      that every worker gets a slice), small budget, one database; cache list after;
#   2. torch's context_parallel on FlashAttention-2 beside the ring (the first call timed cuDNN);
#   3. gpu_tune_test (the timer after its protocol moved) and GpuAttention.SparseBackward.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
DB="$out/devices.db"
S=(--workload paged_sparse --case ctx32768 --budget 6 --repeats 5 --warm-start 0)
start=$(date +%s)
timeout 200 $B/tilejit --db "$DB" tune "${S[@]}" --devices all >"$out/all.out" 2>"$out/all.err"
echo "tune --devices all: exit $? in $(( $(date +%s) - start )) s"
tr '\r' '\n' <"$out/all.err" | grep -v '^$' | tail -5; tail -4 "$out/all.out"
$B/tilejit --db "$DB" cache list | head -8
timeout 150 $PY -m torch.distributed.run --nproc-per-node 2 bench/ring_attention_bench.py \
  --seqlen 131072 --reps 5 --skip one --backends flash,efficient --out "$out/ring.jsonl" \
  >"$out/bench.log" 2>&1
echo "ring bench (torch flash): exit $?"; grep -v "^{" "$out/bench.log" | grep -v Warn | tail -4
cut -c1-160 "$out/ring.jsonl"
timeout 150 $B/gpu_tune_test >"$out/tune_test.log" 2>&1
echo "gpu_tune_test: exit $?"; grep -hE "^\[  FAILED|Failure|PASSED" "$out/tune_test.log" | head -5
timeout 150 $B/gpu_kernels_test --gtest_filter='GpuAttention.SparseBackward' >"$out/tests.log" 2>&1
echo "GpuAttention.SparseBackward: exit $?"; grep -hE "^\[  FAILED|Failure|PASSED" "$out/tests.log" | head -5
