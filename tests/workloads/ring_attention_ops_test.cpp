// Ring attention's op (<tilejit/ring_attention.h>) without a GPU: its checks name the tensor (a
// good call stops at the device check, host tensors), the zigzag positions, and a ring that
// cannot be made (bad world or rank, no NCCL, no GPU) says why instead of crashing.
#include "runtime/nccl.h"
#include "tests/workloads/op_test_util.h"

#include <tilejit/ring_attention.h>

#include <gtest/gtest.h>

#include <cstdlib>

namespace tilejit {
namespace {

using test::error_of;
using test::HostTensor;

constexpr int64_t B = 2, HQ = 4, HKV = 2, N2 = 2 * 37, D = 64;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Forward {
  HostTensor q{DType::BF16, {B, HQ, N2, D}}, k{DType::BF16, {B, HKV, N2, D}},
      v{DType::BF16, {B, HKV, N2, D}};
  ops::RingAttentionForwardArgs args() const {
    ops::RingAttentionForwardArgs a;
    a.q = q.t;
    a.k = k.t;
    a.v = v.t;
    return a;
  }
};

TEST(RingAttentionOps, ForwardChecksNameTheTensor) {
  Forward f;
  // A good call reaches the device check.
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_forward(f.args()); }), "host memory"));
  // An odd local length is not two zigzag chunks.
  HostTensor q_odd(DType::BF16, {B, HQ, N2 - 1, D}), k_odd(DType::BF16, {B, HKV, N2 - 1, D});
  ops::RingAttentionForwardArgs a = f.args();
  a.q = q_odd.t;
  a.k = a.v = k_odd.t;
  const std::string odd = error_of([&] { ops::check_ring_attention_forward(a); });
  EXPECT_TRUE(has(odd, "ring_attention_forward: tensor 'q'")) << odd;
  EXPECT_TRUE(has(odd, "not two equal zigzag chunks")) << odd;
  // k travels as it lies: a strided view is refused by name.
  a = f.args();
  a.k.strides = {HKV * N2 * D, D, HKV * D, 1}; // [B, N, H, D] viewed as [B, H, N, D]
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_forward(a); }), "tensor 'k'"));
  // GQA, dtypes and outputs as the one-GPU op.
  HostTensor k3(DType::BF16, {B, 3, N2, D});
  a = f.args();
  a.k = a.v = k3.t;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_forward(a); }), "GQA"));
  HostTensor lse_bad(DType::F32, {B, HQ, N2 + 2});
  a = f.args();
  a.lse = lse_bad.t;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_forward(a); }), "tensor 'lse'"));
  a = f.args();
  a.scale = -1.0;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_forward(a); }), "negative"));
}

TEST(RingAttentionOps, BackwardChecksNameTheTensor) {
  Forward f;
  HostTensor o(DType::BF16, {B, HQ, N2, D}), lse(DType::F32, {B, HQ, N2}),
      dout(DType::BF16, {B, HQ, N2, D}), dout_f16(DType::F16, {B, HQ, N2, D}),
      dk_bad(DType::BF16, {B, HQ, N2, D});
  ops::RingAttentionBackwardArgs a;
  a.q = f.q.t;
  a.k = f.k.t;
  a.v = f.v.t;
  a.o = o.t;
  a.lse = lse.t;
  a.dout = dout.t;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_backward(a); }), "host memory"));
  ops::RingAttentionBackwardArgs bad = a;
  bad.dout = dout_f16.t;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_backward(bad); }), "tensor 'dout'"));
  bad = a;
  bad.dk = dk_bad.t;
  EXPECT_TRUE(has(error_of([&] { ops::check_ring_attention_backward(bad); }), "tensor 'dk'"));
}

TEST(RingAttentionOps, ZigzagPositions) {
  // World 3, chunks of 10: rank 0 holds [0, 10) and [50, 60), rank 2 [20, 30) and [30, 40).
  auto p0 = ops::ring_local_positions(3, 0, 10), p2 = ops::ring_local_positions(3, 2, 10);
  EXPECT_EQ(p0[0], (std::array<int64_t, 2>{0, 10}));
  EXPECT_EQ(p0[1], (std::array<int64_t, 2>{50, 60}));
  EXPECT_EQ(p2[0], (std::array<int64_t, 2>{20, 30}));
  EXPECT_EQ(p2[1], (std::array<int64_t, 2>{30, 40}));
}

TEST(RingAttentionOps, ARingThatCannotBeMadeSaysWhy) {
  RuntimeOptions options;
  options.arch = "sm_90a";
  Runtime rt(options);
  const ops::RingGroup::Id id{};
  EXPECT_TRUE(has(error_of([&] { ops::RingGroup(rt, id, 0, 0); }), "world = 0 ranks"));
  EXPECT_TRUE(has(error_of([&] { ops::RingGroup(rt, id, 2, 2); }), "rank 2 is not one of"));
  EXPECT_TRUE(has(error_of([&] { ops::RingGroup(rt, id, 2, -1); }), "rank -1 is not one of"));
  // Here (CI: no NCCL, no GPU) the group names what is missing; with NCCL and no GPU, the GPU.
  // (With both, a well-formed id would wait for the other rank: not tried.)
  if (Nccl::available() && rt.has_gpu()) return;
  const std::string why = error_of([&] { ops::RingGroup(rt, id, 2, 0); });
  if (!Nccl::available()) {
    EXPECT_TRUE(has(why, "NCCL not found")) << why;
    EXPECT_TRUE(has(why, "TILEJIT_NCCL_LIBRARY")) << why;
    EXPECT_TRUE(has(error_of([] { ops::RingGroup::new_id(); }), "NCCL not found"));
  } else {
    EXPECT_TRUE(has(why, "GPU") || has(why, "libcuda")) << why;
  }
}

} // namespace
} // namespace tilejit
