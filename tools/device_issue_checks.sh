#!/usr/bin/env bash
# The backward's ISSUE = 1 (both score products issued at once and waited for one at a time,
# dv / dk left running; attn_dq and attn_dq_sparse too) in one device call: its GPU tests, its
# time through the ops against ISSUE = 0 (bench/attention_bwd_issue_time.py), and each kernel's
# duration under Nsight Compute at ISSUE 0 and 1 (which kernel gains).
# Carry .device: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 (the test binaries unused).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
export TILEJIT_LIBRARY=$PWD/$B/libtilejit.so.0.1.0 PYTHONPATH=$PWD/python
timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  -k "issued_early or slot_release" >"$out/py_issue.log" 2>&1
echo "pytest (issued early, slot release): exit $?"; tail -2 "$out/py_issue.log"
timeout 200 $PY bench/attention_bwd_issue_time.py --out "$out/issue.jsonl" >"$out/issue.log" 2>&1
echo "attention_bwd_issue_time: exit $?"
for issue in 0 1; do
  timeout 120 "$NCU" --clock-control none --kernel-name-base function -k 'regex:attn_' \
    --launch-skip 4 --section SpeedOfLight $PY bench/attention_ncu_target.py --issue $issue \
    >"$out/ncu_issue$issue.txt" 2>&1
  echo "ncu ISSUE=$issue: exit $?"
done
$PY - "$out" <<'PY'
import json, os, re, sys
d = sys.argv[1]
print("| N | causal | density | step (dq by) | ISSUE=0 ms | ISSUE=1 ms | speedup | rel diff |")
for line in open(os.path.join(d, "issue.jsonl")):
    r = json.loads(line)
    step = {"forward": "forward", "1": "bwd, atomics", "0": "bwd, attn_dq"}[r["atomic_dq"]]
    print(f"| {r['N']} | {r['causal']} | {r['density_percent']} | {step} | {r['issue0_bwd_ms']:.3f} | "
          f"{r['issue1_bwd_ms']:.3f} | {r['issue0_bwd_ms'] / r['issue1_bwd_ms']:.3f}x | {r['max_rel_diff']:.1e} |")
def durations(path):
    out, name = [], None
    for l in open(path):
        m = re.match(r"  (attn_\w+) \(", l)
        if m:
            name = m.group(1)
        m = re.match(r"\s+Duration\s+(\w+)\s+([\d.,]+)", l)
        if m and name:
            v = float(m.group(2).replace(",", ""))
            out.append((name, v / 1000 if m.group(1) == "us" else v))
            name = None
    return out
a, b = (durations(os.path.join(d, f"ncu_issue{i}.txt")) for i in (0, 1))
print("| kernel (ncu, order of launch) | ISSUE=0 ms | ISSUE=1 ms |")
for (n0, t0), (n1, t1) in zip(a, b):
    print(f"| {n0}{'' if n0 == n1 else ' / ' + n1} | {t0:.3f} | {t1:.3f} |")
PY
