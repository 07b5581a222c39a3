#!/usr/bin/env bash
# Issue 18 on the GPU, in two device calls (each under 10 minutes), a short table last:
#   PART=tests  the GPU tests (solve_tril alone, the chunked forward, the backward, the Python
#               ops), then tilejit's rule forward at CHUNK 16 / 32 / 64 on the WORKLOADS.md
#               shapes and forward + backward at CHUNK 32 and 64;
#   PART=peers  the same forward beside flash-linear-attention's chunk_gated_delta_rule, linear
#               attention forward + backward beside FLA's chunk and fused_chunk forms, and the
#               rule's plain PyTorch recurrence (time and peak memory of forward + backward).
# Stage: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 build/tests/gpu/gpu_semantics_test
# and FLA's `fla` package under .device/fla (git archive of a fla-org/flash-linear-attention
# checkout; never committed); carry .device. Results: $OUT/results.jsonl (every row, tagged
# with "src"), $OUT/run.log.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
log=$out/run.log
tmp=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
shapes=(128:256:4:32 128:512:4:32 128:1024:4:32 4:2048:16:128 4:8192:16:128)

tag() { # tag SRC FILE: FILE's JSON lines, each with "src": SRC, appended to results.jsonl
  [ -f "$2" ] && $PY -c 'import json,sys
for l in open(sys.argv[2]):
    r = json.loads(l); r["src"] = sys.argv[1]; print(json.dumps(r))' "$1" "$2" >>"$out/results.jsonl"
}

if [ "${PART:-tests}" = tests ]; then
  timeout 60 $B/gpu_semantics_test --gtest_filter='GpuSemantics.SolveTril*' >>"$log" 2>&1
  echo "GpuSemantics.SolveTril*: exit $?"
  timeout "${TEST_TIMEOUT:-300}" $B/gpu_kernels_test \
    --gtest_filter='GpuGatedDelta.ChunkedForward:GpuGatedDelta.Backward*' >>"$log" 2>&1
  echo "gpu_kernels_test GpuGatedDelta: exit $?"
  grep -hE "^\[  FAILED|Failure|relative error|exception" "$log" | head -10
  grep -hE "^\[       OK" "$log"
  TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python timeout 120 \
    $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_gated_delta_gpu.py >>"$log" 2>&1
  echo "pytest test_gated_delta_gpu.py: exit $?"; tail -2 "$log"
  for s in "${shapes[@]}"; do
    IFS=: read -r b t h d <<<"$s"
    for c in 16 32 64; do
      timeout 60 $B/tilejit bench --workload gated_delta --plan chunked --dtype bf16 --repeats 20 \
        --shape "B=$b,T=$t,H=$h,D=$d,RULE=delta,CHUNK=$c" --out "$tmp/fwd.jsonl" >>"$log" 2>&1 ||
        echo "tilejit fwd $s C=$c: exit $?"
    done
    for c in 32 64; do
      timeout 90 $B/tilejit bench --workload gated_delta --dtype bf16 --repeats 10 \
        --shape "B=$b,T=$t,H=$h,D=$d,RULE=delta,BWD=1,CHUNK=$c" --out "$tmp/bwd.jsonl" >>"$log" 2>&1 ||
        echo "tilejit fwd+bwd $s C=$c: exit $?"
    done
  done
  tag tilejit_fwd "$tmp/fwd.jsonl"; tag tilejit_fwdbwd "$tmp/bwd.jsonl"
else
  (cd bench/peers && timeout "${PEER_TIMEOUT:-170}" $PY fla_gated_delta.py --fla ../../.device/fla \
    --shapes "$(IFS=,; echo "${shapes[*]}")" --out "$tmp/fla.jsonl" >>"$log" 2>&1)
  echo "fla rule: exit $?"
  for s in 128:1024:4:32 4:2048:16:128 4:8192:16:128; do
    IFS=: read -r b t h d <<<"$s"
    timeout 60 $B/tilejit bench --workload gated_delta --shape "B=$b,T=$t,H=$h,D=$d" \
      --dtype bf16 --repeats 20 --out "$tmp/linear.jsonl" >>"$log" 2>&1 || echo "tilejit linear $s: exit $?"
  done
  (cd bench/peers && timeout "${PEER_TIMEOUT:-170}" $PY fla_gated_delta.py --fla ../../.device/fla \
    --op linear --shapes 128:1024:4:32,4:2048:16:128,4:8192:16:128 --out "$tmp/fla_linear.jsonl" \
    >>"$log" 2>&1)
  echo "fla linear: exit $?"
  (cd bench/peers && timeout 150 $PY fla_gated_delta.py --op recurrence \
    --shapes 128:256:4:32,128:1024:4:32,4:2048:16:128 --out "$tmp/recurrence.jsonl" >>"$log" 2>&1)
  echo "torch recurrence: exit $?"
  tag fla "$tmp/fla.jsonl"; tag tilejit_linear "$tmp/linear.jsonl"
  tag fla_linear "$tmp/fla_linear.jsonl"; tag torch_recurrence "$tmp/recurrence.jsonl"
fi
$PY tools/gated_delta_table.py "$out/results.jsonl"
