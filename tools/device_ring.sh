#!/usr/bin/env bash
# Ring attention over NCCL (issue 20) on a several-GPU machine, one call, a short table last:
#   1. python/tests/dist/ring_attention_check.py under torchrun on every GPU, then on one
#      (a world of one: no transfers), against the whole sequence's float64 attention;
#   2. bench/ring_attention_bench.py: the ring, one GPU and torch's context_parallel at
#      B=1 H=16 N=$N D=128 causal (N=131072 by default).
# Stage: tools/stage_device.sh build/capi/libtilejit.so.0.1.0; carry .device.
# NVLink multicast stays off (KINDS.md): these variables travel to every rank.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
gpus=$(nvidia-smi --list-gpus | wc -l)
nvidia-smi topo -m 2>/dev/null | head -4
run() { timeout "$1" $PY -m torch.distributed.run --nproc-per-node "$2" "${@:3}"; }
run 200 "$gpus" python/tests/dist/ring_attention_check.py >"$out/check.log" 2>&1
echo "ring check, world $gpus: exit $?"; grep -E "FAILED|Error|error|failed" "$out/check.log" | head -8
run 120 1 python/tests/dist/ring_attention_check.py >"$out/check1.log" 2>&1
echo "ring check, world 1: exit $?"; grep -E "FAILED|Error|error|failed" "$out/check1.log" | head -4
run "${BENCH_TIMEOUT:-240}" "$gpus" bench/ring_attention_bench.py --seqlen "${N:-131072}" \
  --reps "${REPS:-5}" --out "$out/ring.jsonl" >"$out/bench.log" 2>&1
echo "ring bench: exit $?"; grep -v '^{' "$out/bench.log" | tail -6
[ -f "$out/ring.jsonl" ] && $PY - "$out/ring.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| impl | step | ms | TFLOP/s |")
for r in rows:
    print(f"| {r['impl']} {r.get('backend', '')} | {r['step']} | {r['ms']} | {r['tflops']} |")
PY
