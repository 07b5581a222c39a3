// hbv (WORKLOADS.md section 5, issue 17): the HBV-96 hydrological model in float64, forward and
// a hand-written reverse-mode adjoint. This is the reference the DSL kernels and the
// compiler-derived backward are checked against, so it is written out step by step here and
// shares no code with the compiler's differentiation. The tie conventions are WORKLOADS.md's: at
// a tie of min or max the whole gradient goes to the first argument as written; clamp passes
// the gradient to x at its bounds (PyTorch's clamp); x^BETA at x = 0 has gradient 0.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tilejit::workloads {

/// The 12 parameters per basin, in WORKLOADS.md's order.
enum HbvParam : int {
  kBeta,
  kFc,
  kK0,
  kK1,
  kK2,
  kLp,
  kPerc,
  kUzl,
  kTt,
  kCfmax,
  kCfr,
  kCwh,
  kHbvParams
};
/// "BETA", "FC", ... (for messages).
const char* hbv_param_name(int p);
/// WORKLOADS.md's range of each parameter, [low, high].
inline constexpr double kHbvParamLow[kHbvParams] = {1, 50, 0.05, 0.01, 0.001, 0.2,
                                                    0, 0,  -2.5, 0.5,  0,     0};
inline constexpr double kHbvParamHigh[kHbvParams] = {6,  1000, 0.9, 0.5, 0.2, 1,
                                                     10, 100,  2.5, 10,  0.1, 0.2};

/// Inputs of B basins over T days: forcings [B, T] row-major, parameters [B, 12].
struct HbvInputs {
  int64_t b = 0, t = 0;
  std::vector<double> p, temp, pet;
  std::vector<double> params;
  double param(int64_t basin, int which) const { return params[basin * kHbvParams + which]; }
};

/// The state every store starts in (SNOWPACK, MELTWATER, SM, SUZ, SLZ).
inline constexpr double kHbvInitialState = 0.001;

/// Q [B, T]. `branches`, when given, receives every comparison the steps made, in order (a
/// finite-difference check compares them to stay away from kinks). `nearest_tie`, when given,
/// receives per basin how close its comparisons on computed states came to a tie (|a - b|
/// relative to the size of what they were computed from; infinity: none came close): a basin
/// whose value is near f32's rounding may take the other branch of a min, max or clamp in f32
/// than here, and then its gradients differ from this float64 reference by more than rounding.
std::vector<double> hbv_forward(const HbvInputs& in, std::vector<uint8_t>* branches = nullptr,
                                std::vector<double>* nearest_tie = nullptr);

/// A relative margin under which a basin counts as near a kink for f32 (nearest_tie). The
/// branches that f32 took differently on an H100 came within ~1e-7 (about 1 in 4 random draws
/// of 1024 basins x 1461 days had one); 1e-5 leaves a factor of 100 and marks ~10% of random
/// basins over 1461 days (3% at 3e-6, 47% at 1e-4).
inline constexpr double kHbvNearKink = 1e-5;

/// Which basins' gradients to compare with this reference, from hbv_forward's `nearest_tie`:
/// those clear of kHbvNearKink, as long as they are at least `min_share` of the basins (else
/// all, so that a comparison never rests on a few). A basin of 16 components is clear when all
/// 16 are (0.9^16, ~19% of random basins over 1461 days): the workload asks 1/8 of those.
std::vector<bool> hbv_basins_to_compare(const std::vector<double>& nearest_tie,
                                        double min_share = 0.5);

/// Gradients of the loss sum(dq * Q): [B, 12] for the parameters, [B, T] for each forcing.
struct HbvGradients {
  std::vector<double> params, p, temp, pet;
};

/// The branches of one day, in the order the day takes them: each bit set when the comparison
/// came out true (which also picks the first argument of a min or max at a tie, WORKLOADS.md).
enum HbvDecision : int {
  kWarm,         ///< TEMP >= TT: the day's P falls as rain
  kMeltRate,     ///< CFMAX * (TEMP - TT) >= 0
  kMeltAll,      ///< the melt rate <= the snowpack (melt = the rate)
  kRefreezeRate, ///< CFR * CFMAX * (TT - TEMP) >= 0
  kRefreezeAll,  ///< the refreeze rate <= the meltwater
  kToSoil,       ///< MELTWATER - CWH * SNOWPACK >= 0
  kWetInside,    ///< (SM / FC)^BETA inside [0, 1]
  kExcess,       ///< SM - FC >= 0
  kEfInside,     ///< SM / (LP * FC) inside [0, 1]
  kEtAll,        ///< SM <= PET * ef (et = SM)
  kAboveFloor,   ///< SM - et >= 1e-5
  kPercAll,      ///< SUZ <= PERC (perc = SUZ)
  kAboveUzl,     ///< SUZ - UZL >= 0
};

/// Reverse mode over the steps of hbv_forward (states saved per step, then one backward sweep
/// per basin), `dq` [B, T]. `decisions` [B, T], when given (1 << HbvDecision per day), are the
/// branches to take instead of this float64 forward's own: the adjoint of the path an f32 run
/// took (hbv_decisions_f32), so that a comparison decided by rounding near a tie goes the same
/// way on both sides.
HbvGradients hbv_backward(const HbvInputs& in, const std::vector<double>& dq,
                          const std::vector<uint16_t>* decisions = nullptr);

/// The branches an f32 run of kernels_src/workloads/hbv.tile takes, [B, T] (1 << HbvDecision
/// per day): the kernel's operations in its order, each rounded to f32 as the reference
/// interpreter rounds them (the GPU contracts multiply-adds into FMAs, so its branches near a
/// tie may differ again).
std::vector<uint16_t> hbv_decisions_f32(const HbvInputs& in);

/// Random inputs in WORKLOADS.md's ranges (P in [0, 50] with about half the days dry, TEMP in
/// [-20, 30], PET in [0, 10]), deterministic for a seed.
HbvInputs random_hbv_inputs(int64_t b, int64_t t, uint64_t seed);

} // namespace tilejit::workloads
