// The shape of hbv's derived backward in its segment form (reverse_mode.h: a program per block
// of 32 basins and segment of SEG days), shared by the workload's plans and the typed op
// (tilejit::ops::hbv_backward): which segment lengths a shape may use, its tensors' shapes, and
// the length the op takes when nothing says otherwise.
#pragma once

#include <cstdint>
#include <vector>

namespace tilejit::workloads {

/// Basins per program of the segment form: one warp, hbv_forward's default.
inline constexpr int64_t kHbvSegmentBasins = 32;
/// Every segment length the form is offered with.
inline constexpr int64_t kHbvSegmentLengths[] = {8, 16, 32, 64, 128, 256};
/// The checkpoint intervals offered for the checkpointed reverse on the training forward's
/// states (hbv_forward_grad_ck): its memory is one state per interval, so every shape has them.
inline constexpr int64_t kHbvStartsIntervals[] = {32, 64, 128};
/// The op's checkpoint interval when the backward checkpoints (segment 0): its training forward
/// stores every 64th day's states for hbv_forward_grad_ck. On an H200 at B = 16384, T = 1461
/// (bench/results/2026-11-29-fed7ab8-hbv-h200.md): backward 1.71 ms against 2.06 with the
/// kernel's own forward pass, and 1.65 at 128 days, whose per-program tape (40 MB there) would
/// take the step's memory to Triton's half exactly.
inline constexpr int64_t kHbvForwardCheckpointDays = 64;
/// A tape (every day's five states: about B * T * 20 bytes) larger than this is not offered, so
/// that large shapes keep the checkpointed kernel's small footprint.
inline constexpr int64_t kHbvTapeBudgetBytes = int64_t(256) << 20;

/// Components per basin that hbv_forward_nmul takes in one kernel (params [B, 12, NM]).
inline constexpr int64_t kHbvComponentCounts[] = {2, 4, 8, 16};
bool hbv_is_component_count(int64_t nm);
/// Basins per program of hbv_forward_nmul's training forward and checkpointed reverse: 32
/// models, one per lane of one warp. (Four per lane, 128 models, ran no faster on an H200 at
/// B = 1024, NM = 16: a warp per SM waits on its four chains as four warps do on one each.)
int64_t hbv_component_basins(int64_t nm);

/// `ck__f32[NP, NS, 5, BB]`: each segment's start state (the training forward writes it); with
/// NM > 1 components per basin `[NP, NS, 5, BB, NM]`, BB = hbv_component_basins(NM).
std::vector<int64_t> hbv_starts_shape(int64_t b, int64_t t, int64_t seg, int64_t nm = 1);
/// `tp__f32[NP, NS, SEG, 5, BB]`: every day's five states (with NM components
/// `[NP, NS, SEG, 5, BB, NM]`, as hbv_starts_shape).
std::vector<int64_t> hbv_tape_shape(int64_t b, int64_t t, int64_t seg, int64_t nm = 1);
/// `ln__f32[NP, NS, 30, BB]`: each segment's affine map of the carried adjoints (with NM
/// components `[NP, NS, 30, BB, NM]`).
std::vector<int64_t> hbv_maps_shape(int64_t b, int64_t t, int64_t seg, int64_t nm = 1);

/// The lengths offered for B basins (of NM components) and T days: those whose tape fits
/// kHbvTapeBudgetBytes.
std::vector<int64_t> hbv_segment_lengths(int64_t b, int64_t t, int64_t nm = 1);
bool hbv_is_segment_length(int64_t seg);

/// The segment length the typed op uses untuned, 0 for the checkpointed reverse: on an H200
/// (bench/results/2026-11-29-fed7ab8-hbv-h200.md) 16 to 32 days were fastest up to B = 1024 and
/// 128 at B = 4096; past 4096 basins, or beyond the tape budget, the checkpointed reverse.
int64_t hbv_default_segment(int64_t b, int64_t t);

} // namespace tilejit::workloads
