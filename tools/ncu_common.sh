# Sourced by the Nsight Compute scripts (tools/device_profile.sh, tools/device_dequant_profile.sh)
# from the repository root: where results go, the CLI and ncu, and the warp-stall reasons every
# profile reads (per issued instruction).
out=${OUT:-/tmp/tilejit-out}; mkdir -p "$out"
export TILEJIT_CACHE_DIR=/tmp/tilejit-modules
B=.device/bin/tilejit
NCU=${NCU:-ncu}
STALLS=$(printf "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio," long_scoreboard barrier \
  short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected \
  dispatch_stall no_instruction membar sleeping drain branch_resolving imc_miss)
STALLS=${STALLS%,}
