#!/usr/bin/env bash
# atomic_add(..., bulk = 1) checked and timed in one device call (about 6 minutes): the bulk
# atomics' GPU tests (gpu_kernels_test GpuBulkAtomics, attention's backward with dq's atomics),
# the attention GPU tests in Python (dq by atomics among them, the SA = 1 forward), then
# bench/attention_bwd_issue_time.py with the library before the change (.device/base) and after
# (.device/bin): dq by atomics is what changed, dq by attn_dq the control. A table last.
# Stage: tools/stage_device.sh build/capi/libtilejit.so.0.1.0 build/tests/gpu/gpu_kernels_test
# (the other binaries removed) and the earlier library in .device/base/libtilejit.so.0.1.0.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuBulkAtomics.*:GpuAttention.Backward:GpuAttention.SparseBackward:GpuDequant.W4A16PackedOnWarpgroupTensorCores' \
  >"$out/gpu_kernels.log" 2>&1
echo "gpu_kernels_test (bulk atomics, attention backward): exit $?"
grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED  \]" "$out/gpu_kernels.log" | head -12
timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  >"$out/py_attention.log" 2>&1
echo "attention GPU tests: exit $?"; tail -1 "$out/py_attention.log"
grep -E "^FAILED" "$out/py_attention.log" | head -5
for lib in base bin; do
  TILEJIT_LIBRARY=$PWD/.device/$lib/libtilejit.so.0.1.0 timeout 150 $PY bench/attention_bwd_issue_time.py \
    --out "$out/issue_$lib.jsonl" >"$out/issue_$lib.log" 2>&1
  echo "attention_bwd_issue_time ($lib): exit $?"
done
$PY - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
rows = {lib: [json.loads(l) for l in open(os.path.join(d, f"issue_{lib}.jsonl"))]
        for lib in ("base", "bin") if os.path.exists(os.path.join(d, f"issue_{lib}.jsonl"))}
print("| N | causal | density | dq | ISSUE 0 before | ISSUE 0 bulk | ISSUE 1 before | ISSUE 1 bulk |")
for a, b in zip(rows.get("base", []), rows.get("bin", [])):
    print(f"| {a['N']} | {a['causal']} | {a['density_percent']} | {a['atomic_dq']} | "
          f"{a['issue0_bwd_ms']:.3f} | {b['issue0_bwd_ms']:.3f} | {a['issue1_bwd_ms']:.3f} | "
          f"{b['issue1_bwd_ms']:.3f} |")
PY
