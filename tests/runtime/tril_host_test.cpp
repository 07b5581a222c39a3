// The prelude's in-tile triangular solve (kernels_src/prelude/tj/tril.cuh, behind solve_tril)
// run on the host: one std::thread per GPU thread, __syncthreads as a std::barrier, the very
// code NVRTC compiles (the FMA form of the block products: on the GPU they run on the tensor
// cores, which GpuSemantics.SolveTril checks). Checked against a float64 inverse on fresh random
// inputs, every element of X (its diagonal 1 and upper part 0 included), for both forms (rows;
// blocks of 16), thread counts below and above C, at the padded row strides.
#include "kernels_src/prelude/tj/tril.cuh"

#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

namespace tilejit::test {
namespace {

enum class Form { rows, blocked, chosen };

/// The block's barrier for host threads.
struct HostBarrier {
  std::barrier<>* b;
  void operator()() const { b->arrive_and_wait(); }
};

/// Runs the solve with NT threads on A's lower part, given C x C (the upper part and diagonal
/// are noise, as they are in a kernel), laid out at the solve's row strides with noise in the
/// padding; returns X (C x C) read back from its padded buffer, poisoned first.
template <int C, int NT> std::vector<float> solve_on_host(const std::vector<float>& a0, Form form) {
  constexpr int SA = tj::TrilStride<C>::A, SX = tj::TrilStride<C>::X;
  std::vector<float> a(C * SA, 1e30f), xs(C * SX, -777.0f);
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) a[i * SA + j] = a0[i * C + j];
  std::barrier<> sync(NT);
  std::vector<std::thread> threads;
  for (int t = 0; t < NT; ++t)
    threads.emplace_back([&, t] {
      HostBarrier barrier{&sync};
      if (form == Form::rows)
        tj::tril_inverse_rows<C, NT>(a.data(), xs.data(), t, barrier);
      else if (form == Form::chosen)
        tj::tril_inverse<C, NT>(a.data(), xs.data(), t, barrier);
      else if constexpr (C % 16 == 0)
        tj::tril_inverse_blocked<C, NT>(a.data(), xs.data(), t, barrier);
    });
  for (auto& th : threads) th.join();
  std::vector<float> x(C * C);
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) x[i * C + j] = xs[i * SX + j];
  return x;
}

template <int C, int NT> void check(Form form) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("C=", C, " NT=", NT, " form=", static_cast<int>(form), " seed=", seed));
  std::mt19937 rng(seed);
  // Entries like gated_delta's (beta exp(G_t - G_s) k_t . k_s, normalised keys): |A| < 1 with
  // decay along the rows, so that the inverse stays of moderate size and f32 can be compared.
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<float> a(C * C);
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j)
      a[i * C + j] = static_cast<float>(j < i ? u(rng) * 0.9 * std::pow(0.97, i - j) : 5 * u(rng));
  std::vector<float> x = solve_on_host<C, NT>(a, form);
  // float64: X = (I + L)^-1 by substitution.
  std::vector<double> ref(C * C, 0.0);
  for (int i = 0; i < C; ++i) {
    ref[i * C + i] = 1;
    for (int j = 0; j < i; ++j) {
      double acc = 0;
      for (int k = j; k < i; ++k) acc += a[i * C + k] * ref[k * C + j];
      ref[i * C + j] = -acc;
    }
  }
  double err = 0, norm = 0;
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) {
      if (j >= i) {
        EXPECT_EQ(x[i * C + j], i == j ? 1.0f : 0.0f) << "X[" << i << "][" << j << "]";
        continue;
      }
      ASSERT_TRUE(std::isfinite(x[i * C + j])) << i << " " << j;
      err += std::pow(x[i * C + j] - ref[i * C + j], 2);
      norm += std::pow(ref[i * C + j], 2);
    }
  EXPECT_LE(std::sqrt(err / norm), 1e-5) << "relative error over X's strictly lower part";
}

TEST(TrilHost, RowsForm) {
  check<16, 32>(Form::rows);
  check<24, 8>(Form::rows);
  check<64, 128>(Form::rows);
}

TEST(TrilHost, BlockedForm) {
  check<32, 32>(Form::blocked);
  check<64, 128>(Form::blocked);
  check<64, 32>(Form::blocked); // fewer threads than columns
  check<128, 256>(Form::blocked);
  check<48, 64>(Form::blocked);
}

TEST(TrilHost, ChosenFormMatchesTheReference) {
  check<16, 64>(Form::chosen);
  check<16, 8>(Form::chosen);
  check<40, 64>(Form::chosen);
  check<64, 256>(Form::chosen);
}

} // namespace
} // namespace tilejit::test
