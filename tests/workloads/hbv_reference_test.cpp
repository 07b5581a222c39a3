// The hbv float64 reference (workloads/hbv_reference.h): its hand-written adjoint against
// central finite differences of the forward, away from kinks (a coordinate is checked only when
// the forward takes the same branches at x - h, x and x + h), on random inputs from
// WORKLOADS.md's ranges; the tie conventions at a range's edge (CFR = 0 makes max(rr, 0) a
// tie every cold day: the gradient passes to rr, so it equals the one-sided difference from
// above); and bad inputs.
#include "support/error.h"
#include "workloads/hbv_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

namespace tilejit::workloads {
namespace {

double loss(const HbvInputs& in, const std::vector<double>& dq, std::vector<uint8_t>* branches) {
  const std::vector<double> q = hbv_forward(in, branches);
  double l = 0;
  for (size_t i = 0; i < q.size(); ++i) l += dq[i] * q[i];
  return l;
}

struct FdResult {
  int checked = 0, skipped = 0, nonzero = 0;
};

/// Checks d loss / d x against the adjoint's `grad` for the coordinate `x` points into (a
/// parameter or a forcing of `in`), by a central difference when no branch changes.
void check_coordinate(HbvInputs& in, const std::vector<double>& dq, double* x, double grad,
                      const std::string& what, FdResult& r) {
  const double x0 = *x, h = 1e-6 * std::max(1.0, std::abs(x0));
  std::vector<uint8_t> b0, bm, bp;
  loss(in, dq, &b0);
  *x = x0 + h;
  const double lp = loss(in, dq, &bp);
  *x = x0 - h;
  const double lm = loss(in, dq, &bm);
  *x = x0;
  if (bp != b0 || bm != b0) {
    ++r.skipped; // a kink within h: the difference quotient measures the jump, not the slope
    return;
  }
  ++r.checked;
  const double fd = (lp - lm) / (2 * h);
  if (std::abs(fd) > 1e-9) ++r.nonzero;
  EXPECT_NEAR(grad, fd, 1e-5 * std::max(1.0, std::abs(fd))) << what;
}

TEST(HbvReference, AdjointMatchesFiniteDifferencesAwayFromKinks) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int64_t B = 3, T = 60;
    HbvInputs in = random_hbv_inputs(B, T, seed);
    std::mt19937_64 rng(seed + 100);
    std::normal_distribution<double> n(0, 1);
    std::vector<double> dq(static_cast<size_t>(B * T));
    for (double& v : dq) v = n(rng);
    const HbvGradients g = hbv_backward(in, dq);
    FdResult r;
    for (int64_t b = 0; b < B; ++b) {
      for (int p = 0; p < kHbvParams; ++p) {
        const size_t i = static_cast<size_t>(b * kHbvParams + p);
        check_coordinate(in, dq, &in.params[i], g.params[i],
                         std::string(hbv_param_name(p)) + " of basin " + std::to_string(b), r);
      }
      for (int64_t t = 0; t < T; t += 7) {
        const size_t i = static_cast<size_t>(b * T + t);
        const std::string at = " at (" + std::to_string(b) + ", " + std::to_string(t) + ")";
        check_coordinate(in, dq, &in.p[i], g.p[i], "P" + at, r);
        check_coordinate(in, dq, &in.temp[i], g.temp[i], "TEMP" + at, r);
        check_coordinate(in, dq, &in.pet[i], g.pet[i], "PET" + at, r);
      }
    }
    // Most coordinates are away from kinks, and most slopes are not 0: a test that skipped
    // them all, or compared zeros, would prove nothing.
    EXPECT_GT(r.checked, 4 * r.skipped) << r.checked << " checked, " << r.skipped << " skipped";
    EXPECT_GT(2 * r.nonzero, r.checked) << r.nonzero << " of " << r.checked << " slopes not 0";
  }
}

TEST(HbvReference, TieAtARangeEdgeGivesTheGradientToTheFirstArgument) {
  // A cold dry day with CFR = 0 (its range's lower edge): rr = CFR * CFMAX * (TT - TEMP) is
  // exactly 0, a tie in max(rr, 0). The whole gradient goes to rr (the first argument as
  // written); with TEMP < TT, rr grows with CFR, so that is the slope from above: the one-sided
  // difference (L(h) - L(0)) / h, no other branch changing between 0 and h (checked). The
  // refrozen water leaves the meltwater that drains to the soil (CWH = 0), which reaches Q.
  HbvInputs in = random_hbv_inputs(1, 1, 4);
  in.temp[0] = -8.0;
  in.p[0] = 0.0;
  in.params[kTt] = 0.0;
  in.params[kCwh] = 0.0;
  in.params[kCfr] = 0.0;
  in.params[kBeta] = 1.0;
  in.params[kFc] = 50.0;
  const std::vector<double> dq(1, 1.0);
  const HbvGradients g = hbv_backward(in, dq);
  std::vector<uint8_t> b0, bh;
  const double l0 = loss(in, dq, &b0);
  const double h = 1e-7;
  in.params[kCfr] = h;
  const double lh = loss(in, dq, &bh);
  ASSERT_EQ(b0, bh) << "another branch changed between CFR = 0 and h";
  const double one_sided = (lh - l0) / h;
  EXPECT_GT(std::abs(one_sided), 1e-7) << "the test needs the refreezing to reach Q";
  EXPECT_NEAR(g.params[kCfr], one_sided, 1e-4 * std::abs(one_sided));
}

// nearest_tie marks the basins whose branches f32's rounding could flip: over four years of
// random days most basins are clear of every tie, and a clear basin keeps every branch when its
// states are disturbed at f32's scale (each forcing and parameter moved by 2^-22 of itself,
// more than f32's rounding of them).
TEST(HbvReference, NearestTieMarksTheBasinsRoundingCanSendDownAnotherBranch) {
  const int64_t b = 60, t = 1461;
  const HbvInputs in = random_hbv_inputs(b, t, 11);
  std::vector<double> nearest;
  hbv_forward(in, nullptr, &nearest);
  ASSERT_EQ(nearest.size(), size_t(b));
  int near = 0, clear_checked = 0;
  for (int64_t basin = 0; basin < b; ++basin) {
    const bool is_near = nearest[size_t(basin)] < kHbvNearKink;
    near += is_near;
    if (is_near) continue;
    // This basin alone, then disturbed.
    HbvInputs one;
    one.b = 1, one.t = t;
    one.p.assign(in.p.begin() + basin * t, in.p.begin() + (basin + 1) * t);
    one.temp.assign(in.temp.begin() + basin * t, in.temp.begin() + (basin + 1) * t);
    one.pet.assign(in.pet.begin() + basin * t, in.pet.begin() + (basin + 1) * t);
    one.params.assign(in.params.begin() + basin * kHbvParams,
                      in.params.begin() + (basin + 1) * kHbvParams);
    std::vector<uint8_t> b0, b1;
    hbv_forward(one, &b0);
    std::mt19937 rng{static_cast<uint32_t>(basin)};
    auto disturb = [&](std::vector<double>& v) {
      for (double& x : v) x *= 1 + std::ldexp(rng() % 2 ? 1.0 : -1.0, -22);
    };
    disturb(one.p), disturb(one.temp), disturb(one.pet), disturb(one.params);
    hbv_forward(one, &b1);
    EXPECT_EQ(b0, b1) << "basin " << basin << " (nearest tie " << nearest[size_t(basin)]
                      << ") changed a branch";
    ++clear_checked;
  }
  EXPECT_LT(near * 4, b) << near << " of " << b << " basins near a tie";
  EXPECT_GT(clear_checked, 0);
  // The basins compared: the clear ones, or all when fewer than half are clear.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(hbv_basins_to_compare({inf, 0.0, 1e-3, 1e-6}),
            (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(hbv_basins_to_compare({inf, 0.0, 1e-7, 1e-6}), (std::vector<bool>(4, true)));
  EXPECT_TRUE(hbv_basins_to_compare({}).empty());
  // A smaller share asked (basins of many components): 1 clear in 4 is enough for 1/8, none
  // never is.
  EXPECT_EQ(hbv_basins_to_compare({inf, 0.0, 1e-7, 1e-6}, 0.125),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(hbv_basins_to_compare({0.0, 1e-7}, 0.125), (std::vector<bool>(2, true)));
}

// The branches an f32 run takes (hbv_decisions_f32) are float64's on nearly every day of random
// inputs, and the adjoint that follows given branches is the plain adjoint when they are its own
// (bit for bit); forcing one day's melt branch the other way changes that day's d_TEMP.
TEST(HbvReference, DecisionsOfAnF32RunSteerTheAdjoint) {
  const HbvInputs in = random_hbv_inputs(16, 300, 11);
  std::vector<double> dq(size_t(in.b * in.t));
  std::mt19937 rng(3);
  for (double& x : dq) x = std::uniform_real_distribution<>(-1, 1)(rng);
  const std::vector<uint16_t> f32 = hbv_decisions_f32(in);
  ASSERT_EQ(f32.size(), dq.size());
  // float64's own decisions, from the bits its forward notes (13 per day, in HbvDecision order).
  std::vector<uint8_t> notes;
  hbv_forward(in, &notes);
  ASSERT_EQ(notes.size(), dq.size() * 13);
  std::vector<uint16_t> own(dq.size());
  size_t differ = 0, warm_days = 0;
  for (size_t i = 0; i < own.size(); ++i) {
    for (int d = 0; d < 13; ++d)
      if (notes[i * 13 + d]) own[i] = uint16_t(own[i] | (1u << d));
    differ += own[i] != f32[i];
    warm_days += (own[i] >> kWarm) & 1u;
  }
  EXPECT_LT(differ, own.size() / 100) << "f32 and float64 branch alike away from ties";
  EXPECT_GT(warm_days, own.size() / 4);
  const HbvGradients plain = hbv_backward(in, dq), steered = hbv_backward(in, dq, &own);
  EXPECT_EQ(plain.temp, steered.temp);
  EXPECT_EQ(plain.params, steered.params);
  // A warm day with melt (rate below the snowpack) taken as all the snowpack melting instead.
  size_t day = own.size();
  for (size_t i = 0; i < own.size() && day == own.size(); ++i)
    if ((own[i] >> kMeltRate & 1u) && (own[i] >> kMeltAll & 1u) && plain.temp[i] != 0) day = i;
  ASSERT_LT(day, own.size());
  std::vector<uint16_t> flipped = own;
  flipped[day] = uint16_t(flipped[day] ^ (1u << kMeltAll));
  EXPECT_NE(hbv_backward(in, dq, &flipped).temp[day], plain.temp[day]);
}

TEST(HbvReference, BadInputsNameWhatIsWrong) {
  HbvInputs in = random_hbv_inputs(2, 5, 1);
  in.pet.pop_back();
  try {
    hbv_forward(in);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("P, TEMP and PET must hold B x T values"),
              std::string::npos)
        << e.what();
  }
  const HbvInputs ok = random_hbv_inputs(2, 5, 1);
  try {
    hbv_backward(ok, std::vector<double>(3, 1.0));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dQ must hold B x T values"), std::string::npos)
        << e.what();
  }
  try {
    const std::vector<uint16_t> short_by_one(9);
    hbv_backward(ok, std::vector<double>(10, 1.0), &short_by_one);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decisions must hold B x T values"), std::string::npos)
        << e.what();
  }
  // No basins or no days: nothing to compute, no error.
  EXPECT_TRUE(hbv_forward(random_hbv_inputs(0, 7, 1)).empty());
  EXPECT_TRUE(hbv_backward(random_hbv_inputs(3, 0, 1), {}).p.empty());
}

} // namespace
} // namespace tilejit::workloads
