#!/usr/bin/env bash
# Device call (GPU machine): the dequant_gemm peers and the Qwen3-4B decode step, in one run.
#
#   run with carry [".peers"] (the shared yardstick copied in, Marlin staged: bench/README.md),
#   command: bash bench/peers/device_dequant_peers.sh      (cwd: the repository root)
#
# Writes $OUT/dequant_peer.jsonl, $OUT/decode_step.jsonl and their logs, and prints both tables.
# GRID (default below) changes the shapes; PEERS (default all) picks the dequant_gemm peers, e.g.
# PEERS=cublas_fp16,marlin (names: cublas_fp16 marlin tinygemm triton_gptq_wide weight_int8pack_mm
# torch_naive), and, unless BACKENDS is set, the decode step's matching backends (fp16 marlin
# tinygemm int8_pack int8_naive; none of them: the decode step is skipped); BACKENDS picks those
# directly. PEER_ARGS and STEP_ARGS are passed on (e.g. PEER_ARGS="--commit abc1234");
# MARLIN_BUILD=/tmp/marlin-build builds Marlin outside .peers, so that a warm machine keeps the
# build across carries. Marlin and tinygemm run in child processes of each script (a kernel that
# faults takes only its own rows with it).
#
# Expected time on a fresh H100, about 4 minutes in all (a 4.5 min cap per script keeps it
# inside one call even when something hangs; --budget 220 leaves Marlin's and tinygemm's
# processes 85 s of it and kills a child 10 s past its share):
#   peer script ~3 min: torch start and ceilings ~15 s, ~30 Triton compiles of the yardstick's
#   kernel ~40 s, weights and references ~20 s, timing 21 (shape, M) cases x 4 peers ~20 s; then
#   Marlin's process: torch start ~8 s, its build ~30-45 s (a warm build folder skips it),
#   packing (lm_head's through numpy, ~5 s) ~10 s, timing ~10 s; tinygemm's process ~25 s;
#   decode step ~1.2 min: 5 backends x (weights for 145 linears, the checks in float64, capture,
#   20 replays), fp16's 8 GB of weights the largest, Marlin and tinygemm each ~8 s more to start.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/dequant-out}; mkdir -p "$out"
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PYTHONUNBUFFERED=1
grid=${GRID:-"1,4,16@all;64,256,2048@qkv,gate_up"}
peers=${PEERS:-all}
backends=${BACKENDS:-}
if [ -z "$backends" ] && [ "$peers" != all ]; then   # the decode step's backends of those peers
  for p in ${peers//,/ }; do
    case $p in
      cublas_fp16) b=fp16 ;; marlin|tinygemm) b=$p ;; weight_int8pack_mm) b=int8_pack ;; torch_naive) b=int8_naive ;;
      *) b= ;;
    esac
    [ -n "$b" ] && backends=${backends:+$backends,}$b
  done
  [ -n "$backends" ] || backends=none
fi
echo "== $(date -u +%H:%M:%S) $($py -c 'import torch; print(torch.cuda.get_device_name(), "torch", torch.__version__)' 2>&1 | tail -1); nvcc: $(command -v nvcc || echo none)"
[ -f .peers/dequant_gemm.py ] || echo "warning: .peers/dequant_gemm.py missing: the Triton GPTQ peer will record an error"
[ -f .peers/marlin/marlin/marlin_cuda_kernel.cu ] || echo "warning: .peers/marlin not staged: Marlin will record an error"

t0=$(date +%s)
timeout 270 "$py" bench/peers/dequant_gemm_peer.py --grid "$grid" --budget 220 --peers "$peers" \
  ${MARLIN_BUILD:+--marlin-build-dir "$MARLIN_BUILD"} --out "$out/dequant_peer.jsonl" ${PEER_ARGS:-} >"$out/dequant_peer.log" 2>&1
rc1=$?
echo "== dequant_gemm_peer.py: exit $rc1 after $(( $(date +%s) - t0 )) s (log: dequant_peer.log) =="
sed -n '/== dequant_gemm peers done/,$p' "$out/dequant_peer.log"
[ $rc1 -ne 0 ] && tail -25 "$out/dequant_peer.log"

t1=$(date +%s)
rc2=0
if [ "$backends" = none ]; then
  echo "== decode step skipped: none of PEERS=$peers has a decode-step backend =="
else
  timeout 270 "$py" bench/peers/dequant_decode_step.py --out "$out/decode_step.jsonl" \
    ${MARLIN_BUILD:+--marlin-build-dir "$MARLIN_BUILD"} ${backends:+--backends "$backends"} ${STEP_ARGS:-} >"$out/decode_step.log" 2>&1
  rc2=$?
  echo "== dequant_decode_step.py: exit $rc2 after $(( $(date +%s) - t1 )) s (log: decode_step.log) =="
  sed -n '/== decode step/,$p' "$out/decode_step.log"
  [ $rc2 -ne 0 ] && tail -25 "$out/decode_step.log"
fi
echo "== total $(( $(date +%s) - t0 )) s; files in \$OUT: dequant_peer.jsonl decode_step.jsonl *.log =="
exit $(( rc1 != 0 || rc2 != 0 ))
