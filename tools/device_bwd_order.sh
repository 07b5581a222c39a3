#!/usr/bin/env bash
# attn_bwd walking query blocks downwards (every program at the same rows at once) against the
# base build's upward walk, in one call on a two-GPU machine: the attention GPU tests, the A/B
# of the backward at dense bf16 shapes, then the ring bench (which times the one-GPU causal
# N = 131072 backward too) beside torch's context_parallel on cuDNN.
# Stage: tools/stage_base.sh REV; tools/stage_device.sh build/capi/libtilejit.so.0.1.0.
set -uo pipefail
cd "$(dirname "$0")/.."
TESTS='GpuAttention.Backward:GpuAttention.RingOverSimulatedRanks' ROUNDS=1 FLEX= \
  SHAPES="B=4,H=16,N=8192,D=128 B=4,H=16,N=8192,D=128,CAUSAL=1 B=4,H=16,N=16384,D=128,CAUSAL=1 B=4,H=16,N=8192,D=64,CAUSAL=1" \
  tools/device_attention_tma.sh 2>&1 | grep -v "^round"
source tools/device_env.sh >/dev/null
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 200 $PY -m torch.distributed.run --nproc-per-node 2 bench/ring_attention_bench.py \
  --seqlen 131072 --reps 5 --backends cudnn --out "$out/ring.jsonl" >"$out/ringbench.log" 2>&1
echo "ring bench: exit $?"
cut -c1-130 "$out/ring.jsonl"
