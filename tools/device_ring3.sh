source tools/device_env.sh
DB="$out/devices.db"
S=(--workload paged_sparse --case ctx32768 --budget 6 --repeats 5 --warm-start 0)
for round in 1 2; do
  rm -f "$DB"*
  timeout 120 $B/tilejit --db "$DB" tune "${S[@]}" --devices all >"$out/all$round.out" 2>"$out/all$round.err"
  echo "tune --devices all (new database, round $round): exit $?"
  grep -E "workers|failed" "$out/all$round.err" "$out/all$round.out" | tail -3
done
$B/tilejit --db "$DB" cache list | wc -l
timeout 200 $B/gpu_kernels_test --gtest_filter='GpuAttention.SparseBackward' >"$out/tests.log" 2>&1
echo "GpuAttention.SparseBackward: exit $?"; grep -v "random seed" "$out/tests.log" | grep -E "Failure|FAILED|PASSED|exception" | head -5
