#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and UBSan into build-fuzz/,
# and runs each for FUZZ_SECONDS (default 60) from a seed corpus of the shipped kernels, the
# test programs and export files. A crash, an internal error, a sanitizer report, a leak or an
# input that runs over 10 s fails (exit 1), leaving the input in build-fuzz/ (crash-*, leak-*,
# timeout-*). A longer run: FUZZ_SECONDS=3600 FUZZ_SEED=0 tools/fuzz.sh; one target:
# tools/fuzz.sh import. tools/test.sh (CI) runs both for 45 s each.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
# A fixed seed by default: CI explores the same inputs as every run before it (a slower
# machine a prefix of them), so its answer does not depend on luck. FUZZ_SEED=0: a random one.
seed=${FUZZ_SEED:-1}
targets=("${@:-frontend import}")
read -r -a targets <<< "${targets[*]}"
tools/sanitized_build.sh
cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)" --target frontend_fuzzer import_fuzzer
status=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    frontend) find kernels_src bench/kernels tests/data tests/dsl/diagnostics tests/filecheck -name '*.tile' -not -path '*/Inputs/*' \
                -exec cp {} "$corpus"/ \; ;;
    import) cp fuzz/seeds/import/*.json "$corpus"/ ;;
    *) echo "fuzz: unknown target '$t' (frontend, import)" >&2; exit 2 ;;
  esac
  echo "fuzz: $t for ${seconds}s"
  if ! (cd build-fuzz && "./fuzz/${t}_fuzzer" "corpus-$t" -max_total_time="$seconds" -seed="$seed" -timeout=10 \
          -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 2>"$t.log"); then
    echo "fuzz: $t FAILED (build-fuzz/$t.log):" >&2
    grep -E "ERROR|SUMMARY|Test unit written|internal error" "build-fuzz/$t.log" | head -20 >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/$t.log" | sed "s/^/fuzz: $t /"
  fi
done
exit $status
