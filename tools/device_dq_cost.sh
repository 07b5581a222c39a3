#!/usr/bin/env bash
# What dq by atomics costs inside attn_bwd (bench/attention_dq_cost_variants.py: the shipped
# kernel and rewrites of its dq statement, alternating), in one short device call. Stage the
# library with tools/stage_device.sh (test binaries removed); carry .device.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 240 $PY bench/attention_dq_cost_variants.py --out "$out/dq_cost.jsonl" >"$out/dq_cost.log" 2>&1
echo "attention_dq_cost_variants: exit $?"; tail -4 "$out/dq_cost.log"
