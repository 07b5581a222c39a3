#!/usr/bin/env bash
# What the 2026-11-29 (thirteenth) session wrote without device time left, checked in one device
# call (about 3 minutes; every step has its own timeout and reports its exit code):
#   1. the attention GPU tests, among them test_backward_with_dv_dk_issued_early: attn_bwd and
#      attn_bwd_sparse with ISSUE = 1 (dv's and dk's wgmma products issued and left running,
#      the DSL's dot(..., issue = 1); compile-checked only so far), dq by atomics and by attn_dq,
#      against float64 autograd into poisoned outputs;
#      and test_forward_with_pv_issued_early: attn_fwd's ISSUE = 1 (p v left running under the
#      row sums);
#   2. ISSUE = 0 against 1 timed through the ops (bench/attention_bwd_issue_time.py): where 1 is
#      faster and right, make it the Hopper tiles' (workloads/attention_tiles.cpp) and a tunable
#      of attn_fwd / attn_bwd (it is a generic until checked).
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0, then remove from
# .device/bin what this script does not use (the carry holds 64 MiB with the tracked tree).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "pytest test_attention_gpu.py: exit $?"; tail -3 "$out/py_attention.log"
timeout 300 $PY bench/attention_bwd_issue_time.py --out "$out/issue.jsonl" >"$out/issue.log" 2>&1
echo "attention_bwd_issue_time: exit $?"
[ -f "$out/issue.jsonl" ] && $PY - "$out/issue.jsonl" <<'PY'
import json, sys
print("| N | causal | density | step (dq by) | ISSUE=0 ms | ISSUE=1 ms | speedup | rel diff |")
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"| {r['N']} | {r['causal']} | {r['density_percent']} | {'forward' if r['atomic_dq'] == 'forward' else 'bwd, atomics' if r['atomic_dq'] == '1' else 'bwd, attn_dq'} | "
          f"{r['issue0_bwd_ms']:.3f} | {r['issue1_bwd_ms']:.3f} | {r['issue0_bwd_ms'] / r['issue1_bwd_ms']:.3f}x | {r['max_rel_diff']:.1e} |")
PY
