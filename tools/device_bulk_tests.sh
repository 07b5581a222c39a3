#!/usr/bin/env bash
# The bulk atomics' GPU tests alone (about 2 minutes): gpu_kernels_test GpuBulkAtomics
# (tests/data/bulk_atomic.tile against the interpreter) and the attention tests of BULK = 1
# and of q read through a descriptor (SA = 1). Stage as tools/device_bulk_checks.sh says.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/device_env.sh
timeout 150 $B/gpu_kernels_test --gtest_filter='GpuBulkAtomics.*' >"$out/gpu_bulk.log" 2>&1
echo "gpu_kernels_test GpuBulkAtomics: exit $?"
grep -E "OK \]|FAILED|Failure|differs|Which is" "$out/gpu_bulk.log" | head -12
timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu python/tests/test_attention_gpu.py \
  -k "bulk_copy_engine or descriptor" >"$out/py_bulk.log" 2>&1
echo "attention GPU tests (BULK = 1, SA = 1): exit $?"; tail -1 "$out/py_bulk.log"
grep -E "^FAILED|Error" "$out/py_bulk.log" | head -5
