#!/usr/bin/env bash
# attn_bwd's dq by bulk row additions from shared memory (DQS = 1) against the base build's
# per-thread atomics, one call on a two-GPU machine: the GPU tests (bulk additions on odd
# shapes, attention's backward, block-sparse and the ring over simulated ranks), the Python
# attention GPU tests, the A/B of the backward at dense and block-sparse bf16 shapes, and the
# ring bench beside torch's context_parallel on cuDNN.
# Stage: tools/stage_base.sh REV; tools/stage_device.sh build/capi/libtilejit.so.0.1.0.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh >/dev/null
# gpu_semantics_test reads tests/data/semantics.tile at the path it was built from.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
timeout 120 $B/gpu_semantics_test --gtest_filter='GpuSemantics.BulkRowAdditions' >"$out/sem.log" 2>&1
echo "GpuSemantics.BulkRowAdditions: exit $?"; grep -v "random seed" "$out/sem.log" | grep -E "Failure|FAILED|exception" -A3 | head -8
TESTS='GpuAttention.Backward:GpuAttention.SparseBackward:GpuAttention.RingOverSimulatedRanks' ROUNDS=1 FLEX= \
  SHAPES="${SHAPES:-B=4,H=16,N=8192,D=128 B=4,H=16,N=8192,D=128,CAUSAL=1 B=4,H=16,N=16384,D=128,DENSITY=10 B=4,H=16,N=8192,D=64,CAUSAL=1}" \
  tools/device_attention_tma.sh 2>&1 | grep -v "^round"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 200 $PY -m torch.distributed.run --nproc-per-node 2 bench/ring_attention_bench.py \
  --seqlen 131072 --reps 3 --backends cudnn --out "$out/ring.jsonl" >"$out/ringbench.log" 2>&1
echo "ring bench: exit $?"
cut -c1-120 "$out/ring.jsonl"
