#include "workloads/hbv_reference.h"

#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace tilejit::workloads {
namespace {

struct State {
  double sp, mw, sm, suz, slz; // SNOWPACK, MELTWATER, SM, SUZ, SLZ
};

/// One day of one basin with every intermediate kept (names follow WORKLOADS.md; a digit counts
/// the updates of a state within the day).
struct Step {
  // forcings and parameters
  double P, TEMP, PET;
  double BETA, FC, K0, K1, K2, LP, PERC, UZL, TT, CFMAX, CFR, CWH;
  // snow
  bool warm;
  double rain, snow, sp1, mr, mp, melt, mw1, sp2, rr, rp, refr, sp3, mw2, w, tosoil, mw3;
  // soil
  double ratio, pw, wet, recharge, sm1, excess, sm2, v, ef, pet_ef, et, d, sm3;
  // response
  double suz1, perc, suz2, u, q0, suz3, q1, suz4, slz1, q2, slz2, q;
  /// The branches taken (1 << HbvDecision), as compared here or as given (hbv_backward's
  /// `decisions`); the adjoint follows them.
  uint16_t taken = 0;
  bool has(HbvDecision d) const { return (taken >> d) & 1u; }
};

/// WORKLOADS.md's min and max, recording the comparison that decided them, and how close the
/// comparisons on computed states came to going the other way: `near` is the smallest
/// |a - b| / scale over the day's decisions (ties between zeros left out), where scale is the size
/// of what a and b were computed from (f32's rounding of the states moves a - b by about
/// 1e-7 of it per operation).
struct Branches {
  std::vector<uint8_t>* out = nullptr;
  double near = std::numeric_limits<double>::infinity();
  bool note(bool c) {
    if (out) out->push_back(c);
    return c;
  }
  /// How close `diff`, computed from values of size `scale`, came to 0. (An exact 0 from values
  /// that are not 0 counts: float64's rounding made it a tie, f32's may not, as on cold dry days
  /// where w = mw2 - CWH * sp3 is 0 by construction.)
  void measure(double diff, double scale) {
    if (scale > 0) near = std::min(near, std::abs(diff) / scale);
  }
};

double clamp01(double x) {
  return std::min(std::max(x, 0.0), 1.0);
}

/// One day. `forced`, when given, holds the branches to take (1 << HbvDecision) instead of the
/// comparisons' outcomes here.
Step step(const State& s, double P, double TEMP, double PET, const double* prm, Branches& br,
          const uint16_t* forced = nullptr) {
  Step k{};
  // The comparison `c` for decision `d` (its margin measured by the caller where it has one).
  auto decide = [&](HbvDecision d, bool c) {
    const bool v = forced ? ((*forced >> d) & 1u) != 0 : c;
    if (v) k.taken = static_cast<uint16_t>(k.taken | (1u << d));
    return br.note(v);
  };
  auto at_least = [&](HbvDecision d, double diff, double scale) {
    br.measure(diff, scale);
    return decide(d, diff >= 0);
  };
  k.P = P, k.TEMP = TEMP, k.PET = PET;
  k.BETA = prm[kBeta], k.FC = prm[kFc], k.K0 = prm[kK0], k.K1 = prm[kK1], k.K2 = prm[kK2];
  k.LP = prm[kLp], k.PERC = prm[kPerc], k.UZL = prm[kUzl], k.TT = prm[kTt];
  k.CFMAX = prm[kCfmax], k.CFR = prm[kCfr], k.CWH = prm[kCwh];
  k.warm = decide(kWarm, TEMP >= k.TT);
  k.rain = k.warm ? P : 0.0;
  k.snow = P - k.rain;
  k.sp1 = s.sp + k.snow;
  k.mr = k.CFMAX * (TEMP - k.TT);
  k.mp = decide(kMeltRate, k.mr >= 0) ? k.mr : 0.0;
  k.melt = at_least(kMeltAll, k.sp1 - k.mp, std::abs(k.sp1) + std::abs(k.mp)) ? k.mp : k.sp1;
  k.mw1 = s.mw + k.melt;
  k.sp2 = k.sp1 - k.melt;
  k.rr = k.CFR * k.CFMAX * (k.TT - TEMP);
  k.rp = decide(kRefreezeRate, k.rr >= 0) ? k.rr : 0.0;
  k.refr = at_least(kRefreezeAll, k.mw1 - k.rp, std::abs(k.mw1) + std::abs(k.rp)) ? k.rp : k.mw1;
  k.sp3 = k.sp2 + k.refr;
  k.mw2 = k.mw1 - k.refr;
  k.w = k.mw2 - k.CWH * k.sp3;
  k.tosoil = at_least(kToSoil, k.w, std::abs(k.mw2) + std::abs(k.CWH * k.sp3)) ? k.w : 0.0;
  k.mw3 = k.mw2 - k.tosoil;
  k.ratio = s.sm / k.FC;
  k.pw = std::pow(k.ratio, k.BETA);
  decide(kWetInside, k.pw >= 0 && k.pw <= 1);
  br.measure(1 - k.pw, 1);
  k.wet = clamp01(k.pw);
  k.recharge = (k.rain + k.tosoil) * k.wet;
  k.sm1 = s.sm + k.rain + k.tosoil - k.recharge;
  k.excess = at_least(kExcess, k.sm1 - k.FC, std::abs(k.sm1) + std::abs(k.FC)) ? k.sm1 - k.FC : 0.0;
  k.sm2 = k.sm1 - k.excess;
  k.v = k.sm2 / (k.LP * k.FC);
  decide(kEfInside, k.v >= 0 && k.v <= 1);
  br.measure(1 - k.v, 1); // (v >= 0 always: sm2 > 0)
  k.ef = clamp01(k.v);
  k.pet_ef = PET * k.ef;
  k.et =
      at_least(kEtAll, k.pet_ef - k.sm2, std::abs(k.pet_ef) + std::abs(k.sm2)) ? k.sm2 : k.pet_ef;
  k.d = k.sm2 - k.et;
  k.sm3 = at_least(kAboveFloor, k.d - 1e-5, std::abs(k.sm2) + std::abs(k.et)) ? k.d : 1e-5;
  k.suz1 = s.suz + k.recharge + k.excess;
  k.perc =
      at_least(kPercAll, k.PERC - k.suz1, std::abs(k.PERC) + std::abs(k.suz1)) ? k.suz1 : k.PERC;
  k.suz2 = k.suz1 - k.perc;
  k.u = at_least(kAboveUzl, k.suz2 - k.UZL, std::abs(k.suz2) + std::abs(k.UZL)) ? k.suz2 - k.UZL
                                                                                : 0.0;
  k.q0 = k.K0 * k.u;
  k.suz3 = k.suz2 - k.q0;
  k.q1 = k.K1 * k.suz3;
  k.suz4 = k.suz3 - k.q1;
  k.slz1 = s.slz + k.perc;
  k.q2 = k.K2 * k.slz1;
  k.slz2 = k.slz1 - k.q2;
  k.q = k.q0 + k.q1 + k.q2;
  return k;
}

State after(const Step& k) {
  return {k.sp3, k.mw3, k.sm3, k.suz4, k.slz2};
}

void check_inputs(const HbvInputs& in) {
  const size_t forcings = static_cast<size_t>(in.b * in.t);
  if (in.b < 0 || in.t < 0 || in.p.size() != forcings || in.temp.size() != forcings ||
      in.pet.size() != forcings || in.params.size() != static_cast<size_t>(in.b * kHbvParams))
    throw Error("hbv reference: P, TEMP and PET must hold B x T values and the parameters "
                "B x 12");
}

} // namespace

const char* hbv_param_name(int p) {
  static const char* const names[kHbvParams] = {"BETA", "FC",  "K0", "K1",    "K2",  "LP",
                                                "PERC", "UZL", "TT", "CFMAX", "CFR", "CWH"};
  return p >= 0 && p < kHbvParams ? names[p] : "?";
}

std::vector<double> hbv_forward(const HbvInputs& in, std::vector<uint8_t>* branches,
                                std::vector<double>* nearest_tie) {
  check_inputs(in);
  std::vector<double> q(static_cast<size_t>(in.b * in.t));
  Branches br{branches};
  if (nearest_tie) nearest_tie->assign(static_cast<size_t>(in.b), 0.0);
  for (int64_t b = 0; b < in.b; ++b) {
    br.near = std::numeric_limits<double>::infinity();
    State s{kHbvInitialState, kHbvInitialState, kHbvInitialState, kHbvInitialState,
            kHbvInitialState};
    const double* prm = &in.params[b * kHbvParams];
    for (int64_t t = 0; t < in.t; ++t) {
      const int64_t i = b * in.t + t;
      const Step k = step(s, in.p[i], in.temp[i], in.pet[i], prm, br);
      q[i] = k.q;
      s = after(k);
    }
    if (nearest_tie) (*nearest_tie)[static_cast<size_t>(b)] = br.near;
  }
  return q;
}

std::vector<bool> hbv_basins_to_compare(const std::vector<double>& nearest_tie, double min_share) {
  std::vector<bool> clear(nearest_tie.size());
  size_t n = 0;
  for (size_t b = 0; b < nearest_tie.size(); ++b) n += clear[b] = nearest_tie[b] >= kHbvNearKink;
  if (n == 0 || double(n) < min_share * double(nearest_tie.size()))
    clear.assign(nearest_tie.size(), true);
  return clear;
}

HbvGradients hbv_backward(const HbvInputs& in, const std::vector<double>& dq,
                          const std::vector<uint16_t>* decisions) {
  check_inputs(in);
  if (dq.size() != static_cast<size_t>(in.b * in.t))
    throw Error("hbv reference: dQ must hold B x T values");
  if (decisions && decisions->size() != dq.size())
    throw Error("hbv reference: the decisions must hold B x T values");
  auto forced = [&](int64_t i) {
    return decisions ? &(*decisions)[static_cast<size_t>(i)] : nullptr;
  };
  HbvGradients g;
  g.params.assign(in.params.size(), 0.0);
  g.p.assign(in.p.size(), 0.0);
  g.temp.assign(in.temp.size(), 0.0);
  g.pet.assign(in.pet.size(), 0.0);
  Branches none;
  std::vector<State> states(static_cast<size_t>(in.t));
  for (int64_t b = 0; b < in.b; ++b) {
    const double* prm = &in.params[b * kHbvParams];
    State s{kHbvInitialState, kHbvInitialState, kHbvInitialState, kHbvInitialState,
            kHbvInitialState};
    for (int64_t t = 0; t < in.t; ++t) { // the state each day starts from
      const int64_t i = b * in.t + t;
      states[t] = s;
      s = after(step(s, in.p[i], in.temp[i], in.pet[i], prm, none, forced(i)));
    }
    double* gp = &g.params[b * kHbvParams];
    // Adjoints of the state carried from day t to day t + 1 (nothing reads the last one).
    double g_sp = 0, g_mw = 0, g_sm = 0, g_suz = 0, g_slz = 0;
    for (int64_t t = in.t - 1; t >= 0; --t) {
      const int64_t i = b * in.t + t;
      const Step k = step(states[t], in.p[i], in.temp[i], in.pet[i], prm, none, forced(i));
      const State& s0 = states[t];
      // Adjoints of this day's outputs: Q and the five states it hands on.
      double g_sp3 = g_sp, g_mw3 = g_mw, g_sm3 = g_sm, g_suz4 = g_suz, g_slz2 = g_slz;
      const double g_q = dq[i];
      double g_q0 = g_q, g_q1 = g_q, g_q2 = g_q;
      // slz2 = slz1 - q2; q2 = K2 * slz1; slz1 = slz + perc
      double g_slz1 = g_slz2;
      g_q2 -= g_slz2;
      gp[kK2] += g_q2 * k.slz1;
      g_slz1 += g_q2 * k.K2;
      double g_perc = g_slz1;
      const double g_slz0 = g_slz1;
      // suz4 = suz3 - q1; q1 = K1 * suz3
      double g_suz3 = g_suz4;
      g_q1 -= g_suz4;
      gp[kK1] += g_q1 * k.suz3;
      g_suz3 += g_q1 * k.K1;
      // suz3 = suz2 - q0; q0 = K0 * u; u = max(suz2 - UZL, 0)
      double g_suz2 = g_suz3;
      g_q0 -= g_suz3;
      gp[kK0] += g_q0 * k.u;
      const double g_u = g_q0 * k.K0;
      if (k.has(kAboveUzl)) g_suz2 += g_u, gp[kUzl] -= g_u;
      // suz2 = suz1 - perc; perc = min(suz1, PERC)
      double g_suz1 = g_suz2;
      g_perc -= g_suz2;
      if (k.has(kPercAll))
        g_suz1 += g_perc;
      else
        gp[kPerc] += g_perc;
      // suz1 = suz + recharge + excess
      const double g_suz0 = g_suz1;
      double g_recharge = g_suz1, g_excess = g_suz1;
      // sm3 = max(d, 1e-5); d = sm2 - et
      const double g_d = k.has(kAboveFloor) ? g_sm3 : 0.0;
      double g_sm2 = g_d, g_et = -g_d;
      // et = min(sm2, PET * ef)
      double g_ef = 0;
      if (k.has(kEtAll)) {
        g_sm2 += g_et;
      } else {
        g.pet[i] += g_et * k.ef;
        g_ef = g_et * k.PET;
      }
      // ef = clamp(v, 0, 1); v = sm2 / (LP * FC)
      const double g_v = k.has(kEfInside) ? g_ef : 0.0;
      g_sm2 += g_v / (k.LP * k.FC);
      gp[kLp] -= g_v * k.sm2 / (k.LP * k.LP * k.FC);
      gp[kFc] -= g_v * k.sm2 / (k.LP * k.FC * k.FC);
      // sm2 = sm1 - excess; excess = max(sm1 - FC, 0)
      double g_sm1 = g_sm2;
      g_excess -= g_sm2;
      if (k.has(kExcess)) g_sm1 += g_excess, gp[kFc] -= g_excess;
      // sm1 = sm + rain + tosoil - recharge
      double g_sm0 = g_sm1, g_rain = g_sm1, g_tosoil = g_sm1;
      g_recharge -= g_sm1;
      // recharge = (rain + tosoil) * wet
      g_rain += g_recharge * k.wet;
      g_tosoil += g_recharge * k.wet;
      const double g_wet = g_recharge * (k.rain + k.tosoil);
      // wet = clamp(pw, 0, 1); pw = ratio^BETA (gradient 0 at ratio = 0); ratio = sm / FC
      const double g_pw = k.has(kWetInside) ? g_wet : 0.0;
      if (k.ratio > 0) {
        const double g_ratio = g_pw * k.BETA * std::pow(k.ratio, k.BETA - 1);
        gp[kBeta] += g_pw * k.pw * std::log(k.ratio);
        g_sm0 += g_ratio / k.FC;
        gp[kFc] -= g_ratio * s0.sm / (k.FC * k.FC);
      }
      // mw3 = mw2 - tosoil; tosoil = max(w, 0); w = mw2 - CWH * sp3
      double g_mw2 = g_mw3;
      g_tosoil -= g_mw3;
      if (k.has(kToSoil)) {
        g_mw2 += g_tosoil;
        gp[kCwh] -= g_tosoil * k.sp3;
        g_sp3 -= g_tosoil * k.CWH;
      }
      // sp3 = sp2 + refr; mw2 = mw1 - refr
      double g_sp2 = g_sp3, g_refr = g_sp3 - g_mw2, g_mw1 = g_mw2;
      // refr = min(rp, mw1); rp = max(rr, 0); rr = CFR * CFMAX * (TT - TEMP)
      double g_rp = 0;
      if (k.has(kRefreezeAll))
        g_rp = g_refr;
      else
        g_mw1 += g_refr;
      if (k.has(kRefreezeRate)) {
        gp[kCfr] += g_rp * k.CFMAX * (k.TT - k.TEMP);
        gp[kCfmax] += g_rp * k.CFR * (k.TT - k.TEMP);
        gp[kTt] += g_rp * k.CFR * k.CFMAX;
        g.temp[i] -= g_rp * k.CFR * k.CFMAX;
      }
      // mw1 = mw + melt; sp2 = sp1 - melt
      const double g_mw0 = g_mw1;
      const double g_melt = g_mw1 - g_sp2;
      double g_sp1 = g_sp2;
      // melt = min(mp, sp1); mp = max(mr, 0); mr = CFMAX * (TEMP - TT)
      double g_mp = 0;
      if (k.has(kMeltAll))
        g_mp = g_melt;
      else
        g_sp1 += g_melt;
      if (k.has(kMeltRate)) {
        gp[kCfmax] += g_mp * (k.TEMP - k.TT);
        g.temp[i] += g_mp * k.CFMAX;
        gp[kTt] -= g_mp * k.CFMAX;
      }
      // sp1 = sp + snow; snow = P - rain; rain = P if TEMP >= TT else 0
      const double g_sp0 = g_sp1, g_snow = g_sp1;
      g.p[i] += g_snow;
      g_rain -= g_snow;
      if (k.has(kWarm)) g.p[i] += g_rain;
      g_sp = g_sp0, g_mw = g_mw0, g_sm = g_sm0, g_suz = g_suz0, g_slz = g_slz0;
    }
  }
  return g;
}

std::vector<uint16_t> hbv_decisions_f32(const HbvInputs& in) {
  check_inputs(in);
  std::vector<uint16_t> out(static_cast<size_t>(in.b * in.t));
  for (int64_t b = 0; b < in.b; ++b) {
    float prm[kHbvParams];
    for (int p = 0; p < kHbvParams; ++p) prm[p] = static_cast<float>(in.param(b, p));
    const float BETA = prm[kBeta], FC = prm[kFc], K0 = prm[kK0], K1 = prm[kK1], K2 = prm[kK2];
    const float LP = prm[kLp], PERC = prm[kPerc], UZL = prm[kUzl], TT = prm[kTt];
    const float CFMAX = prm[kCfmax], CFR = prm[kCfr], CWH = prm[kCwh];
    // hbv.tile, line by line; one f32 rounding per operation.
    const float inv_fc = 1.0f / FC;
    const float lpfc = LP * FC;
    const float inv_lpfc = 1.0f / lpfc;
    const float init = static_cast<float>(kHbvInitialState);
    float sp = init, mw = init, sm = init, suz = init, slz = init;
    for (int64_t t = 0; t < in.t; ++t) {
      const size_t i = static_cast<size_t>(b * in.t + t);
      const float p = static_cast<float>(in.p[i]), temp = static_cast<float>(in.temp[i]);
      const float pet = static_cast<float>(in.pet[i]);
      uint16_t bits = 0;
      auto note = [&](HbvDecision d, bool c) {
        if (c) bits = static_cast<uint16_t>(bits | (1u << d));
        return c;
      };
      const float rain = note(kWarm, temp >= TT) ? p : 0.0f;
      const float snow = p - rain;
      sp = sp + snow;
      // min(max(rate, 0), cap), both comparisons noted (melt and refreeze).
      auto capped = [&](HbvDecision positive, HbvDecision all, float rate, float cap) {
        note(positive, rate >= 0.0f);
        const float r = std::fmax(rate, 0.0f);
        note(all, r <= cap);
        return std::fmin(r, cap);
      };
      const float dt = temp - TT;
      const float melt = capped(kMeltRate, kMeltAll, CFMAX * dt, sp);
      mw = mw + melt;
      sp = sp - melt;
      const float cc = CFR * CFMAX;
      const float td = TT - temp;
      const float refr = capped(kRefreezeRate, kRefreezeAll, cc * td, mw);
      sp = sp + refr;
      mw = mw - refr;
      const float held = CWH * sp;
      const float w = mw - held;
      note(kToSoil, w >= 0.0f);
      const float tosoil = std::fmax(w, 0.0f);
      mw = mw - tosoil;
      const float ratio = sm * inv_fc;
      const float pw = std::pow(ratio, BETA);
      note(kWetInside, pw >= 0.0f && pw <= 1.0f);
      const float wet = std::fmin(std::fmax(pw, 0.0f), 1.0f);
      const float inflow = rain + tosoil;
      const float recharge = inflow * wet;
      sm = ((sm + rain) + tosoil) - recharge;
      const float over = sm - FC;
      note(kExcess, over >= 0.0f);
      const float excess = std::fmax(over, 0.0f);
      sm = sm - excess;
      const float v = sm * inv_lpfc;
      note(kEfInside, v >= 0.0f && v <= 1.0f);
      const float ef = std::fmin(std::fmax(v, 0.0f), 1.0f);
      const float pet_ef = pet * ef;
      note(kEtAll, sm <= pet_ef);
      const float et = std::fmin(sm, pet_ef);
      const float d = sm - et;
      note(kAboveFloor, d >= 1e-5f);
      sm = std::fmax(d, 1e-5f);
      suz = (suz + recharge) + excess;
      note(kPercAll, suz <= PERC);
      const float perc = std::fmin(suz, PERC);
      suz = suz - perc;
      const float u = suz - UZL;
      note(kAboveUzl, u >= 0.0f);
      const float q0 = K0 * std::fmax(u, 0.0f);
      suz = suz - q0;
      const float q1 = K1 * suz;
      suz = suz - q1;
      slz = slz + perc;
      const float q2 = K2 * slz;
      slz = slz - q2;
      out[i] = bits;
    }
  }
  return out;
}

HbvInputs random_hbv_inputs(int64_t b, int64_t t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  HbvInputs in;
  in.b = b, in.t = t;
  const size_t n = static_cast<size_t>(b * t);
  in.p.resize(n), in.temp.resize(n), in.pet.resize(n);
  for (size_t i = 0; i < n; ++i) {
    in.p[i] = u(rng) < 0.5 ? 0.0 : 50 * u(rng); // about half the days dry
    in.temp[i] = -20 + 50 * u(rng);
    in.pet[i] = 10 * u(rng);
  }
  in.params.resize(static_cast<size_t>(b * kHbvParams));
  for (int64_t i = 0; i < b; ++i)
    for (int p = 0; p < kHbvParams; ++p)
      in.params[i * kHbvParams + p] =
          kHbvParamLow[p] + (kHbvParamHigh[p] - kHbvParamLow[p]) * u(rng);
  return in;
}

} // namespace tilejit::workloads
