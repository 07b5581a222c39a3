#include "workloads/hbv_segments.h"

#include <algorithm>

namespace tilejit::workloads {
namespace {

/// ceil(a / b) for a >= 0, b > 0, with no overflow near INT64_MAX (a + b - 1 wrapped there and
/// gave a negative count of programs).
int64_t cdiv(int64_t a, int64_t b) {
  return a / b + (a % b != 0);
}

} // namespace

bool hbv_is_component_count(int64_t nm) {
  return std::find(std::begin(kHbvComponentCounts), std::end(kHbvComponentCounts), nm) !=
         std::end(kHbvComponentCounts);
}

int64_t hbv_component_basins(int64_t nm) {
  return 32 / nm;
}

std::vector<int64_t> hbv_starts_shape(int64_t b, int64_t t, int64_t seg, int64_t nm) {
  if (nm > 1) {
    const int64_t bb = hbv_component_basins(nm);
    return {cdiv(b, bb), cdiv(t, seg), 5, bb, nm};
  }
  return {cdiv(b, kHbvSegmentBasins), cdiv(t, seg), 5, kHbvSegmentBasins};
}

std::vector<int64_t> hbv_tape_shape(int64_t b, int64_t t, int64_t seg, int64_t nm) {
  std::vector<int64_t> s = hbv_starts_shape(b, t, seg, nm); // [NP, NS, 5, BB(, NM)]
  s.insert(s.begin() + 2, seg);
  return s;
}

std::vector<int64_t> hbv_maps_shape(int64_t b, int64_t t, int64_t seg, int64_t nm) {
  std::vector<int64_t> s = hbv_starts_shape(b, t, seg, nm);
  s[2] = 30; // the 5 x 6 coefficients of each segment's affine map
  return s;
}

std::vector<int64_t> hbv_segment_lengths(int64_t b, int64_t t, int64_t nm) {
  std::vector<int64_t> out;
  if (b <= 0 || t <= 0) return out;
  for (int64_t seg : kHbvSegmentLengths) {
    // Compared in elements first: an absurd B x T must not overflow the byte count.
    const std::vector<int64_t> tape = hbv_tape_shape(b, t, seg, nm);
    int64_t n = 1;
    bool fits = true;
    for (int64_t d : tape) {
      if (d > 0 && n > kHbvTapeBudgetBytes / 4 / d) {
        fits = false;
        break;
      }
      n *= d;
    }
    if (fits && n * 4 <= kHbvTapeBudgetBytes) out.push_back(seg);
  }
  return out;
}

bool hbv_is_segment_length(int64_t seg) {
  return std::find(std::begin(kHbvSegmentLengths), std::end(kHbvSegmentLengths), seg) !=
         std::end(kHbvSegmentLengths);
}

int64_t hbv_default_segment(int64_t b, int64_t t) {
  // Past 4096 basins the lanes alone fill the GPU and the segment form's extra reverses cost
  // more than its time-parallelism saves (H200, B = 16384: T = 100 0.287 ms against 0.160 for
  // the checkpointed reverse from the forward's states; T = 365 0.704 against 0.540).
  if (b > 4096) return 0;
  const std::vector<int64_t> offered = hbv_segment_lengths(b, t);
  const int64_t want = b <= 2048 ? 32 : 128;
  if (std::find(offered.begin(), offered.end(), want) != offered.end()) return want;
  return offered.empty() ? 0 : offered.back();
}

} // namespace tilejit::workloads
