#!/usr/bin/env bash
# Issue 20 on a GPU machine, one call (under 10 minutes), a short table last:
#   - ring attention with its ranks simulated on this GPU (GpuAttention.RingOverSimulatedRanks:
#     attn_fwd / attn_merge / attn_bwd / attn_add against the whole sequence's float64 attention);
#   - `tune --devices`: a list runs worker processes (here one per listed GPU), `all` on a
#     one-GPU host tunes in-process; both into one database, which `cache list` then shows.
# Stage: tools/stage_device.sh (tilejit and gpu_kernels_test into .device/bin); carry .device.
# On a several-GPU kind, DEVICES=all spreads the tune over every GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin
DB="$out/devices.db"
nvidia-smi --query-gpu=index,name --format=csv,noheader
timeout 240 $B/gpu_kernels_test --gtest_filter='GpuAttention.RingOverSimulatedRanks' >"$out/ring.log" 2>&1
echo "GpuAttention.RingOverSimulatedRanks: exit $?"
grep -hE "^\[  FAILED|Failure|relative|^\[       OK" "$out/ring.log" | head -6
S=(--workload paged_sparse --case D128/ps16/ctx32768 --budget 6 --repeats 5 --warm-start 0)
timeout 150 $B/tilejit --db "$DB" tune "${S[@]}" --devices "${DEVICES:-0}" >"$out/list.out" 2>"$out/list.err"
echo "tune --devices ${DEVICES:-0}: exit $?"
tr '\r' '\n' <"$out/list.err" | grep -v '^$' | tail -4; tail -6 "$out/list.out"
timeout 100 $B/tilejit --db "$DB" tune "${S[@]}" --devices all >"$out/all.out" 2>"$out/all.err"
echo "tune --devices all (warm database): exit $?"; tail -3 "$out/all.out"
$B/tilejit --db "$DB" cache list | head -6
