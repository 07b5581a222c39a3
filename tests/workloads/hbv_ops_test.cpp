// hbv's derived backward forms (workloads/hbv_segments.h) and tilejit::ops::hbv_forward /
// hbv_backward's checks from C++ (host tensors, so a good call stops at the device check).
#include "tests/workloads/op_test_util.h"
#include "workloads/hbv_segments.h"

#include <tilejit/ops.h>

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace tilejit {
namespace {

using test::error_of;
using test::HostTensor;

TEST(HbvSegments, OfferedWhileTheTapeFitsItsBudget) {
  using workloads::hbv_segment_lengths;
  EXPECT_EQ(hbv_segment_lengths(1024, 1461), (std::vector<int64_t>{8, 16, 32, 64, 128, 256}));
  EXPECT_TRUE(hbv_segment_lengths(16384, 1461).empty()); // 479 MB of tape
  EXPECT_TRUE(hbv_segment_lengths(0, 10).empty());
  EXPECT_TRUE(hbv_segment_lengths(10, 0).empty());
  // An absurd B x T does not overflow into a small tape.
  EXPECT_TRUE(hbv_segment_lengths(int64_t(1) << 40, int64_t(1) << 40).empty());
  // Tapes round T up to whole segments and B to whole programs of 32 basins.
  EXPECT_EQ(workloads::hbv_tape_shape(33, 9, 8), (std::vector<int64_t>{2, 2, 8, 5, 32}));
  EXPECT_EQ(workloads::hbv_starts_shape(33, 9, 8), (std::vector<int64_t>{2, 2, 5, 32}));
  EXPECT_EQ(workloads::hbv_maps_shape(33, 9, 8), (std::vector<int64_t>{2, 2, 30, 32}));
  // With NM components: 32 / NM basins per program, the components last; the budget counts
  // every model's tape (B x NM x T x 20 bytes).
  EXPECT_EQ(workloads::hbv_tape_shape(33, 9, 8, 16), (std::vector<int64_t>{17, 2, 8, 5, 2, 16}));
  EXPECT_EQ(workloads::hbv_maps_shape(33, 9, 8, 2), (std::vector<int64_t>{3, 2, 30, 16, 2}));
  EXPECT_EQ(hbv_segment_lengths(64, 1461, 16), (std::vector<int64_t>{8, 16, 32, 64, 128, 256}));
  EXPECT_TRUE(hbv_segment_lengths(1024, 1461, 16).empty()); // 16384 models: 479 MB
}

// The work buffers' shapes as the ops check them (and Python allocates them): starts per form,
// tape and maps for the segment form, with or without components; bad values named.
TEST(HbvSegments, BufferShapesAndTheirBadValues) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(ops::hbv_buffer_shape("starts", 33, 9, 8), (V{2, 2, 5, 32}));
  EXPECT_EQ(ops::hbv_buffer_shape("starts", 33, 130, 0), (V{2, 3, 5, 32})); // every 64th day
  EXPECT_EQ(ops::hbv_buffer_shape("starts", 33, 9, 8, 16), (V{17, 2, 5, 2, 16}));
  EXPECT_EQ(ops::hbv_buffer_shape("tape", 33, 9, 8, 16), (V{17, 2, 8, 5, 2, 16}));
  EXPECT_EQ(ops::hbv_buffer_shape("maps", 33, 9, 8, 2), (V{3, 2, 30, 16, 2}));
  EXPECT_EQ(ops::hbv_buffer_shape("starts", 0, 0, 0), (V{0, 0, 5, 32}));
  auto error = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error([] { ops::hbv_buffer_shape("starts", -1, 9, 8); }).find("must not be negative"),
            std::string::npos);
  EXPECT_NE(error([] { ops::hbv_buffer_shape("starts", 4, 9, 8, 3); }).find("3 components"),
            std::string::npos);
  EXPECT_NE(error([] { ops::hbv_buffer_shape("starts", 4, 9, 7); }).find("form 7"),
            std::string::npos);
  EXPECT_NE(error([] { ops::hbv_buffer_shape("tapes", 4, 9, 8); }).find("no work buffer 'tapes'"),
            std::string::npos);
  EXPECT_NE(error([] { ops::hbv_buffer_shape("maps", 4, 9, 0); }).find("form 0 (checkpoints)"),
            std::string::npos);
  // Near INT64_MAX: refused by name, never a negative or wrapped count of programs.
  EXPECT_NE(error([] { ops::hbv_buffer_shape("starts", INT64_MAX, 5, 8); }).find("2^63 bytes"),
            std::string::npos);
  EXPECT_NE(error([] { ops::hbv_buffer_shape("tape", 5, INT64_MAX, 8); }).find("2^63 bytes"),
            std::string::npos);
  EXPECT_EQ(ops::hbv_buffer_shape("starts", int64_t(1) << 40, 1461, 0, 16),
            (V{int64_t(1) << 39, 23, 5, 2, 16}));
}

TEST(HbvSegments, TheOpsUntunedChoice) {
  EXPECT_EQ(ops::hbv_backward_form(1024, 1461, -1), 32);
  EXPECT_EQ(ops::hbv_backward_form(32, 365, -1), 32);
  EXPECT_EQ(ops::hbv_backward_form(4096, 1461, -1), 128);
  EXPECT_EQ(ops::hbv_backward_form(16384, 1461, -1), 0);
  EXPECT_EQ(ops::hbv_backward_form(16384, 100, -1), 0); // the tape would fit: lanes fill the GPU
  EXPECT_EQ(ops::hbv_backward_form(4096, 100, -1), 128);
  EXPECT_EQ(ops::hbv_backward_form(16384, 1461, 16), 16); // asked for: taken
  EXPECT_NE(error_of([] { ops::hbv_backward_form(5, 5, 12); }).find("segment = 12 is not"),
            std::string::npos);
  EXPECT_NE(error_of([] { ops::hbv_backward_form(-1, 5, 0); }).find("must not be negative"),
            std::string::npos);
}

/// check_hbv_forward / check_hbv_backward's error on host tensors of B = 37 basins and T = 19
/// days with `params` (and `edit`'s changes): "" when every check passes.
struct HbvChecks {
  static constexpr int64_t B = 37, T = 19;
  HostTensor p{DType::F32, {B, T}}, temp{DType::F32, {B, T}}, pet{DType::F32, {B, T}},
      dq{DType::F32, {B, T}};
  std::string forward(const HostTensor& params,
                      const std::function<void(ops::HbvForwardArgs&)>& edit) const {
    ops::HbvForwardArgs a;
    a.P = p.t, a.TEMP = temp.t, a.PET = pet.t, a.params = params.t;
    edit(a);
    return error_of([&] { ops::check_hbv_forward(a); });
  }
  std::string backward(const HostTensor& params,
                       const std::function<void(ops::HbvBackwardArgs&)>& edit) const {
    ops::HbvBackwardArgs a;
    a.P = p.t, a.TEMP = temp.t, a.PET = pet.t, a.params = params.t, a.dQ = dq.t;
    edit(a);
    return error_of([&] { ops::check_hbv_backward(a); });
  }
};

bool has(const std::string& error, const char* part) {
  return error.find(part) != std::string::npos;
}

TEST(HbvOps, BadTensorsAreNamed) {
  constexpr int64_t B = HbvChecks::B, T = HbvChecks::T;
  const HbvChecks checks;
  HostTensor params(DType::F32, {B, 12});
  auto forward = [&](const std::function<void(ops::HbvForwardArgs&)>& edit) {
    return checks.forward(params, edit);
  };
  auto backward = [&](const std::function<void(ops::HbvBackwardArgs&)>& edit) {
    return checks.backward(params, edit);
  };
  EXPECT_TRUE(has(forward([](auto&) {}), "hbv_forward: tensor 'P' (f32[37, 19] cpu) is in host"));
  EXPECT_TRUE(has(backward([](auto&) {}), "hbv_backward: tensor 'P'"));
  HostTensor short_temp(DType::F32, {B, T - 1}), params11(DType::F32, {B, 11}),
      half(DType::F16, {B, T});
  EXPECT_TRUE(has(forward([&](auto& a) { a.TEMP = short_temp.t; }),
                  "tensor 'TEMP' (f32[37, 18] cpu) has 18 in dimension 1 but P's days T = 19"));
  EXPECT_TRUE(has(forward([&](auto& a) { a.params = params11.t; }),
                  "has 11 in dimension 1 but the parameters' count = 12"));
  EXPECT_TRUE(
      has(backward([&](auto& a) { a.dQ = half.t; }), "tensor 'dQ' (f16[37, 19] cpu) must be f32"));
  EXPECT_TRUE(has(backward([&](auto& a) { a.d_params = params11.t; }), "tensor 'd_params'"));
  HostTensor starts8(DType::F32, {2, 3, 5, 32}), starts_wrong(DType::F32, {2, 2, 5, 32});
  EXPECT_TRUE(has(forward([&](auto& a) {
                    a.training = true;
                    a.segment = 8;
                    a.starts = starts8.t;
                  }),
                  "is in host memory"));
  EXPECT_TRUE(has(forward([&](auto& a) { a.starts = starts8.t; }),
                  "tensor 'starts' (f32[2, 3, 5, 32] cpu) is given but training = false"));
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 8;
                    a.starts = starts_wrong.t;
                  }),
                  "tensor 'starts' (f32[2, 2, 5, 32] cpu) has 2 in dimension 1 but "
                  "cdiv(T, days) = 3"));
  EXPECT_TRUE(has(backward([&](auto& a) { a.starts = starts8.t; }), "is given but segment = -1"));
  EXPECT_TRUE(has(backward([&](auto& a) { a.segment = 7; }), "segment = 7 is not"));
  // Segment 0 with the training forward's states: every 64th day's (one row at T = 19).
  HostTensor every64(DType::F32, {2, 1, 5, 32});
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 0;
                    a.starts = every64.t;
                  }),
                  "is in host memory"));
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 0;
                    a.starts = starts8.t;
                  }),
                  "has 3 in dimension 1 but cdiv(T, days) = 1"));
  EXPECT_EQ(ops::hbv_starts_interval(0), 64);
  EXPECT_EQ(ops::hbv_starts_interval(16), 16);
  EXPECT_NE(error_of([] { ops::hbv_starts_interval(5); }).find("form 5 is not"), std::string::npos);
  // The segment form's work buffers: both, of the form's shapes.
  HostTensor tape(DType::F32, {2, 3, 8, 5, 32}), maps(DType::F32, {2, 3, 30, 32}),
      maps16(DType::F32, {2, 2, 30, 32});
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 8;
                    a.tape = tape.t;
                    a.maps = maps.t;
                  }),
                  "is in host memory"));
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 8;
                    a.tape = tape.t;
                  }),
                  "tensor 'tape' (f32[2, 3, 8, 5, 32] cpu) is given without maps"));
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 8;
                    a.tape = tape.t;
                    a.maps = maps16.t;
                  }),
                  "tensor 'maps' (f32[2, 2, 30, 32] cpu) has 2 in dimension 1"));
  EXPECT_TRUE(has(backward([&](auto& a) {
                    a.segment = 0;
                    a.tape = tape.t;
                    a.maps = maps.t;
                  }),
                  "is given but this backward checkpoints"));
}

// Several components per basin in one kernel: params [B, 12, NM], NM = 2, 4, 8 or 16; the
// backward checkpoints, its states [cdiv(B, 32 / NM), cdiv(T, 64), 5, 32 / NM, NM].
TEST(HbvOps, ComponentsPerBasinAreCheckedAndNamed) {
  constexpr int64_t B = HbvChecks::B, T = HbvChecks::T;
  const HbvChecks checks;
  HostTensor p16(DType::F32, {B, 12, 16}), p3(DType::F32, {B, 12, 3}), p4(DType::F32, {B, 12, 4}),
      p13(DType::F32, {B, 13, 16}), flat(DType::F32, {B, 12});
  auto forward = [&](const HostTensor& params,
                     const std::function<void(ops::HbvForwardArgs&)>& edit) {
    return checks.forward(params, edit);
  };
  auto backward = [&](const HostTensor& params,
                      const std::function<void(ops::HbvBackwardArgs&)>& edit) {
    return checks.backward(params, edit);
  };
  // Good shapes stop at the device check.
  EXPECT_TRUE(has(forward(p16, [](auto&) {}), "is in host memory"));
  EXPECT_TRUE(has(backward(p4, [](auto&) {}), "is in host memory"));
  EXPECT_TRUE(has(forward(p3, [](auto&) {}),
                  "tensor 'params' (f32[37, 12, 3] cpu) has 3 components per basin in dimension "
                  "2; one kernel takes 2, 4, 8 or 16"));
  EXPECT_TRUE(has(forward(p13, [](auto&) {}), "has 13 in dimension 1 but the parameters' count"));
  // The segment form with components when asked for: its states, tape and maps end in NM.
  EXPECT_TRUE(has(forward(p16, [](auto& a) { a.segment = 32; }), "is in host memory"));
  HostTensor starts8(DType::F32, {19, 3, 5, 2, 16}), tape8(DType::F32, {19, 3, 8, 5, 2, 16}),
      maps8(DType::F32, {19, 3, 30, 2, 16}), flat_tape(DType::F32, {2, 3, 8, 5, 32});
  EXPECT_TRUE(has(backward(p16,
                           [&](auto& a) {
                             a.segment = 8;
                             a.starts = starts8.t;
                             a.tape = tape8.t;
                             a.maps = maps8.t;
                           }),
                  "is in host memory"));
  EXPECT_TRUE(has(backward(p16,
                           [&](auto& a) {
                             a.segment = 8;
                             a.tape = flat_tape.t;
                             a.maps = maps8.t;
                           }),
                  "tensor 'tape' (f32[2, 3, 8, 5, 32] cpu) must have 6 dimensions: [cdiv(B, 32 "
                  "/ NM), cdiv(T, segment), segment, 5, 32 / NM, NM]"));
  EXPECT_TRUE(has(backward(p16, [&](auto& a) { a.d_params = flat.t; }),
                  "tensor 'd_params' (f32[37, 12] cpu) must be shaped like params"));
  EXPECT_TRUE(has(backward(p16, [&](auto& a) { a.d_params = p4.t; }),
                  "tensor 'd_params' (f32[37, 12, 4] cpu) must be shaped like params"));
  // The training forward's states: 32 / 16 = 2 basins per program, every 64th day.
  HostTensor starts(DType::F32, {19, 1, 5, 2, 16}), starts_flat(DType::F32, {2, 1, 5, 32});
  EXPECT_EQ(workloads::hbv_starts_shape(B, T, 64, 16), (std::vector<int64_t>{19, 1, 5, 2, 16}));
  EXPECT_EQ(workloads::hbv_starts_shape(B, T, 64, 2), (std::vector<int64_t>{3, 1, 5, 16, 2}));
  EXPECT_TRUE(has(backward(p16,
                           [&](auto& a) {
                             a.segment = 0;
                             a.starts = starts.t;
                           }),
                  "is in host memory"));
  EXPECT_TRUE(
      has(backward(p16,
                   [&](auto& a) {
                     a.segment = 0;
                     a.starts = starts_flat.t;
                   }),
          "tensor 'starts' (f32[2, 1, 5, 32] cpu) must have 5 dimensions: [cdiv(B, 32 / NM)"));
  EXPECT_TRUE(has(forward(p16,
                          [&](auto& a) {
                            a.training = true;
                            a.starts = starts.t;
                          }),
                  "is in host memory"));
}

} // namespace
} // namespace tilejit
