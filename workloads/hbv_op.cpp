// tilejit::ops::hbv_forward / hbv_backward (<tilejit/ops.h>): hbv's forward
// (kernels_src/workloads/hbv.tile) and the backward the compiler derives from it
// (grad:embedded:workloads/hbv.tile) on an application's tensors, in the same launches as the
// workload's plans (workloads/hbv_workload.cpp): the segment form, the checkpointed reverse from
// the training forward's states, or the checkpointed kernel alone.
#include "support/error.h"
#include "workloads/hbv_reference.h"
#include "workloads/hbv_segments.h"
#include "workloads/op_buffers.h"
#include "workloads/op_checks.h"
#include "workloads/op_plan.h"

#include <tilejit/ops.h>

#include <limits>

namespace tilejit::ops {
namespace {

const char* const kSource = "embedded:workloads/hbv.tile";
const char* const kDerived = "grad:embedded:workloads/hbv.tile";
const OpChecks forward_checks("hbv_forward");
const OpChecks backward_checks("hbv_backward");

/// A contiguous f32 [rows, cols] tensor; `what` says where the sizes come from.
void check_matrix(const OpChecks& c, const char* name, const Tensor& t, int64_t rows, int64_t cols,
                  const char* layout, const char* rows_what, const char* cols_what) {
  c.rank_and_dtype(name, t, 2, {DType::F32}, layout);
  c.size(name, t, 0, rows, rows_what);
  c.size(name, t, 1, cols, cols_what);
  c.contiguous(name, t);
}

/// Components per basin: 1 for params [B, 12], NM for [B, 12, NM] (hbv_forward_nmul).
int64_t components(const Tensor& params) {
  return params.shape.size() == 3 ? params.shape[2] : 1;
}

/// The forcings [B, T] (P's sizes) and params [B, 12], or [B, 12, NM] with NM components per
/// basin (2, 4, 8 or 16: hbv_forward_nmul's; its Q is their mean). `grad` names a gradient
/// checked like params ("d_params").
void check_params(const OpChecks& c, const char* name, const Tensor& params, int64_t b,
                  const char* layout) {
  const int rank = params.shape.size() == 3 ? 3 : 2;
  c.rank_and_dtype(name, params, rank, {DType::F32}, layout);
  c.size(name, params, 0, b, "P's basins B");
  c.size(name, params, 1, int64_t(workloads::kHbvParams), "the parameters' count");
  if (rank == 3 && !workloads::hbv_is_component_count(params.shape[2]))
    throw Error(str(c.named(name, params), " has ", params.shape[2],
                    " components per basin in dimension 2; one kernel takes 2, 4, 8 or 16 "
                    "(for another count, repeat the forcings per component: tilejit.ops.hbv's "
                    "nmul does)"));
  c.contiguous(name, params);
}

void check_inputs(const OpChecks& c, const Tensor& p, const Tensor& temp, const Tensor& pet,
                  const Tensor& params) {
  c.rank_and_dtype("P", p, 2, {DType::F32}, "[B, T] (basins, days)");
  c.contiguous("P", p);
  const int64_t b = p.shape[0], t = p.shape[1];
  check_matrix(c, "TEMP", temp, b, t, "[B, T] like P", "P's basins B", "P's days T");
  check_matrix(c, "PET", pet, b, t, "[B, T] like P", "P's basins B", "P's days T");
  check_params(c, "params", params, b,
               "[B, 12] (BETA, FC, K0, K1, K2, LP, PERC, UZL, TT, CFMAX, CFR, CWH) or [B, 12, "
               "NM] (NM components per basin)");
}

/// Why `segment` is not one the ops take (-1: the op's choice, 0: checkpoints, or a segment
/// length), or "" when it is.
std::string bad_segment(int64_t segment) {
  if (segment == -1 || segment == 0 || workloads::hbv_is_segment_length(segment)) return "";
  return str("segment = ", segment,
             " is not -1 (the op's choice), 0 (checkpoints) or one of 8, 16, 32, 64, 128, 256");
}

void check_segment(const OpChecks& c, const Tensor& p, int64_t segment) {
  if (const std::string why = bad_segment(segment); !why.empty())
    throw Error(str(c.named("P", p), ": ", why));
}

/// The form that runs: the caller's, or the op's choice for B x T.
int64_t resolve_form(int64_t b, int64_t t, int64_t segment) {
  return segment >= 0 ? segment : workloads::hbv_default_segment(b, t);
}

/// With several components per basin the untuned choice is the one for their B x NM models: on
/// an H200 at NM = 16, T = 1461 (bench/results/2026-11-29-hbv-nmul-h200.md) the segment form
/// took 0.95-0.99 ms at B = 256 (4096 models) against 2.18 for the reverse from the forward's
/// states, which at B = 1024 (16384 models, a tape over the budget) took 2.23-2.31.
int64_t form_of(int64_t segment, const Tensor& p, const Tensor& params) {
  return resolve_form(p.shape[0] * components(params), p.shape[1], segment);
}

/// The training forward's stored states, `seg` days apart: [cdiv(B, 32), cdiv(T, seg), 5, 32],
/// or with NM components [cdiv(B, BB), cdiv(T, 64), 5, BB, NM] (BB = 32 / NM).
void check_starts(const OpChecks& c, const Tensor& starts, int64_t b, int64_t t, int64_t seg,
                  int64_t nm) {
  const std::vector<int64_t> want = workloads::hbv_starts_shape(b, t, seg, nm);
  const int rank = static_cast<int>(want.size());
  c.rank_and_dtype("starts", starts, rank, {DType::F32},
                   nm > 1 ? "[cdiv(B, 32 / NM), cdiv(T, days), 5, 32 / NM, NM] (the training "
                            "forward's; days: the segment length, 64 for segment 0)"
                          : "[cdiv(B, 32), cdiv(T, days), 5, 32] (the training forward's; days: "
                            "the segment length, 64 for segment 0)");
  const char* what[5] = {nm > 1 ? "cdiv(B, 32 / NM)" : "cdiv(B, 32)", "cdiv(T, days)",
                         "the states' count", nm > 1 ? "32 / NM" : "32", "NM"};
  for (int dim = 0; dim < rank; ++dim) c.size("starts", starts, dim, want[dim], what[dim]);
  c.contiguous("starts", starts);
}

/// A work buffer of the segment form: f32 of exactly `want`, contiguous.
void check_work(const OpChecks& c, const char* name, const Tensor& t,
                const std::vector<int64_t>& want, const char* layout) {
  c.rank_and_dtype(name, t, static_cast<int>(want.size()), {DType::F32}, layout);
  for (int dim = 0; dim < static_cast<int>(want.size()); ++dim)
    c.size(name, t, dim, want[dim], layout);
  c.contiguous(name, t);
}

LaunchOptions segment_options(int64_t seg, void* stream) {
  LaunchOptions lo;
  lo.stream = stream;
  lo.config = {{"BB", std::to_string(workloads::kHbvSegmentBasins)},
               {"WARPS", std::to_string(workloads::kHbvSegmentBasins / 32)},
               {"SEG", std::to_string(seg)}};
  return lo;
}

/// Days between the training forward's stored states for backward form `form`: its segment
/// length, or the checkpointed reverse's interval.
int64_t interval_of(int64_t form) {
  return form > 0 ? form : workloads::kHbvForwardCheckpointDays;
}

/// The derived kernels' launch options, states every `seg` days: a warp of 32 basins per
/// program, or with NM components per basin 32 models (hbv_component_basins).
LaunchOptions derived_options(int64_t nm, int64_t seg, void* stream) {
  if (nm == 1) return segment_options(seg, stream);
  LaunchOptions lo;
  lo.stream = stream;
  lo.config = {{"BB", std::to_string(workloads::hbv_component_basins(nm))},
               {"WARPS", "1"},
               {"SEG", std::to_string(seg)}};
  return lo;
}

/// The kernel for params' components: hbv_forward's own name, or hbv_forward_nmul's.
std::string kernel_name(const Tensor& params, const char* suffix) {
  return std::string(components(params) > 1 ? "hbv_forward_nmul" : "hbv_forward") + suffix;
}

/// Whether the op's form can be resolved before the checks: P [B, T] and params with a count of
/// components one kernel takes (anything else is left to the checks, which name the tensor).
bool resolvable(const Tensor& p, const Tensor& params) {
  const int64_t nm = components(params);
  return p.rank() == 2 && params.rank() >= 2 && (nm == 1 || workloads::hbv_is_component_count(nm));
}

/// hbv_forward_grad_fwd (or hbv_forward_nmul_grad_fwd): Q and each segment's start state.
void launch_training_forward(Runtime& rt, const Tensor& p, const Tensor& temp, const Tensor& pet,
                             const Tensor& params, const Tensor& q, const Tensor& starts,
                             int64_t seg, void* stream) {
  static const std::string derived = kDerived;
  const int64_t nm = components(params);
  rt.launch(rt.load(derived, kernel_name(params, "_grad_fwd")),
            {Arg::of(p), Arg::of(temp), Arg::of(pet), Arg::of(params), Arg::of(q), Arg::of(starts)},
            derived_options(nm, seg, stream));
}

} // namespace

int64_t hbv_op_form(Runtime& rt, int64_t b, int64_t t, int64_t nm, int64_t segment) {
  if (b < 0 || t < 0) throw Error(str("hbv: B = ", b, " and T = ", t, " must not be negative"));
  if (nm != 1 && !workloads::hbv_is_component_count(nm))
    throw Error(str("hbv: ", nm, " components per basin; one kernel takes 1, 2, 4, 8 or 16"));
  if (const std::string why = bad_segment(segment); !why.empty()) throw Error("hbv: " + why);
  if (segment >= 0) return segment;
  // Sizes a tensor could have (B x T x 4 bytes below 2^63) are looked up; absurd ones, which
  // only a bad call passes, take the untuned choice without building a problem of that shape.
  constexpr int64_t kLargest = (int64_t{1} << 31) - 1;
  if (b > 0 && t > 0 && b <= kLargest && t <= kLargest) {
    // The workload's problem of this shape: its plan choice's key is what `tune` stored under.
    std::map<std::string, std::string> items = {{"B", std::to_string(b)}, {"T", std::to_string(t)}};
    if (nm > 1) items["NMUL"] = std::to_string(nm);
    const std::string shape_key = str("B=", b, " T=", t, " NM=", nm);
    if (auto tuned = workloads::tuned_plan(rt, "hbv", shape_key, [&] {
          return workloads::find_workload("hbv")->parse_shape(items, DType::F32);
        })) {
      // The plans the ops run: the segment forms, and the reverse from the forward's states
      // every kHbvForwardCheckpointDays (form 0). Another (checkpoints, other intervals) is
      // left to the untuned choice.
      const std::string& name = tuned->name;
      if (name == str("forward_checkpoints", workloads::kHbvForwardCheckpointDays)) return 0;
      if (name.rfind("segments", 0) == 0) {
        const std::string digits = name.substr(8);
        if (!digits.empty() && digits.size() <= 4 &&
            digits.find_first_not_of("0123456789") == std::string::npos &&
            workloads::hbv_is_segment_length(std::stoll(digits)))
          return std::stoll(digits);
      }
    }
  }
  const int64_t models = b > std::numeric_limits<int64_t>::max() / nm
                             ? std::numeric_limits<int64_t>::max()
                             : b * nm; // nm <= 16: saturates only for absurd B
  return resolve_form(models, t, segment);
}

int64_t hbv_backward_form(int64_t b, int64_t t, int64_t segment) {
  if (b < 0 || t < 0) throw Error(str("hbv: B = ", b, " and T = ", t, " must not be negative"));
  if (const std::string why = bad_segment(segment); !why.empty()) throw Error("hbv: " + why);
  return resolve_form(b, t, segment);
}

std::vector<int64_t> hbv_buffer_shape(const std::string& which, int64_t b, int64_t t, int64_t form,
                                      int64_t nm) {
  if (b < 0 || t < 0) throw Error(str("hbv: B = ", b, " and T = ", t, " must not be negative"));
  if (nm != 1 && !workloads::hbv_is_component_count(nm))
    throw Error(str("hbv: ", nm, " components per basin; one kernel takes 1, 2, 4, 8 or 16"));
  const int64_t days = hbv_starts_interval(form);
  if (which != "starts" && which != "tape" && which != "maps")
    throw Error(str("hbv: no work buffer '", which, "' (starts, tape or maps)"));
  if (which != "starts" && form == 0)
    throw Error(
        str("hbv: the ", which, " belongs to the segment form; form 0 (checkpoints) has none"));
  const std::vector<int64_t> shape = which == "starts" ? workloads::hbv_starts_shape(b, t, days, nm)
                                     : which == "tape" ? workloads::hbv_tape_shape(b, t, form, nm)
                                                       : workloads::hbv_maps_shape(b, t, form, nm);
  // Its f32 bytes must be a size: an absurd B x T is refused, not wrapped into a small buffer.
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d != 0 && elements > std::numeric_limits<int64_t>::max() / 4 / d)
      throw Error(str("hbv: B = ", b, " and T = ", t, " give a ", which,
                      " buffer of more than 2^63 bytes"));
    elements *= d;
  }
  return shape;
}

int64_t hbv_starts_interval(int64_t form) {
  if (form != 0 && !workloads::hbv_is_segment_length(form))
    throw Error(str("hbv: form ", form, " is not 0 (checkpoints) or a segment length"));
  return interval_of(form);
}

void check_hbv_forward(const HbvForwardArgs& a) {
  const OpChecks& c = forward_checks;
  check_inputs(c, a.P, a.TEMP, a.PET, a.params);
  if (a.Q)
    check_matrix(c, "Q", *a.Q, a.P.shape[0], a.P.shape[1], "[B, T] like P", "P's basins B",
                 "P's days T");
  check_segment(c, a.P, a.segment);
  if (a.starts) {
    if (!a.training)
      throw Error(str(c.named("starts", *a.starts),
                      " is given but training = false: only a training forward writes starts"));
    check_starts(c, *a.starts, a.P.shape[0], a.P.shape[1],
                 interval_of(form_of(a.segment, a.P, a.params)), components(a.params));
  }
  c.on_one_gpu({{"P", &a.P},
                {"TEMP", &a.TEMP},
                {"PET", &a.PET},
                {"params", &a.params},
                {"Q", a.Q ? &*a.Q : nullptr},
                {"starts", a.starts ? &*a.starts : nullptr}});
}

HbvForwardResult hbv_forward(Runtime& rt, const HbvForwardArgs& given) {
  // The op's form (segment -1) is resolved first, with the runtime's tuning database, so that
  // the checks of `starts` and the launches agree on it.
  HbvForwardArgs a = given;
  if (a.training && a.segment == -1 && resolvable(a.P, a.params))
    a.segment = hbv_op_form(rt, a.P.shape[0], a.P.shape[1], components(a.params), -1);
  check_hbv_forward(a);
  HbvForwardResult out;
  const int device = a.P.device_index;
  const int64_t b = a.P.shape[0], t = a.P.shape[1];
  auto owned = std::make_shared<OwnedBuffers>();
  out.Q = a.Q ? *a.Q : owned->allocate(DType::F32, {b, t}, device);
  out.segment = a.training ? form_of(a.segment, a.P, a.params) : 0;
  const int64_t interval = interval_of(out.segment);
  if (a.training)
    out.starts =
        a.starts
            ? *a.starts
            : owned->allocate(DType::F32,
                              workloads::hbv_starts_shape(b, t, interval, components(a.params)),
                              device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (b == 0 || t == 0) return out;
  if (a.training) {
    launch_training_forward(rt, a.P, a.TEMP, a.PET, a.params, out.Q, *out.starts, interval,
                            a.stream);
    return out;
  }
  // Inference: the forward as written.
  LaunchOptions lo;
  lo.stream = a.stream;
  lo.config = a.config;
  static const std::string source = kSource;
  rt.launch(rt.load(source, kernel_name(a.params, "")),
            {Arg::of(a.P), Arg::of(a.TEMP), Arg::of(a.PET), Arg::of(a.params), Arg::of(out.Q)}, lo);
  return out;
}

void check_hbv_backward(const HbvBackwardArgs& a) {
  const OpChecks& c = backward_checks;
  check_inputs(c, a.P, a.TEMP, a.PET, a.params);
  const int64_t b = a.P.shape[0], t = a.P.shape[1];
  check_matrix(c, "dQ", a.dQ, b, t, "[B, T] like P", "P's basins B", "P's days T");
  for (const auto& [name, g] : {std::pair<const char*, const std::optional<Tensor>*>{"d_P", &a.d_P},
                                {"d_TEMP", &a.d_TEMP},
                                {"d_PET", &a.d_PET}})
    if (*g) check_matrix(c, name, **g, b, t, "[B, T] like P", "P's basins B", "P's days T");
  if (a.d_params) {
    check_params(c, "d_params", *a.d_params, b, "like params");
    if (components(*a.d_params) != components(a.params))
      throw Error(str(c.named("d_params", *a.d_params), " must be shaped like params (",
                      c.named("params", a.params), ")"));
  }
  check_segment(c, a.P, a.segment);
  const int64_t nm = components(a.params);
  if (a.tape.has_value() != a.maps.has_value())
    throw Error(str(c.named(a.tape ? "tape" : "maps", a.tape ? *a.tape : *a.maps),
                    " is given without ", a.tape ? "maps" : "tape", ": give both or neither"));
  if (a.tape) {
    const int64_t form = form_of(a.segment, a.P, a.params);
    if (form == 0)
      throw Error(str(c.named("tape", *a.tape),
                      " is given but this backward checkpoints (segment 0): only the segment "
                      "form takes a tape and maps"));
    check_work(c, "tape", *a.tape, workloads::hbv_tape_shape(b, t, form, nm),
               nm > 1 ? "[cdiv(B, 32 / NM), cdiv(T, segment), segment, 5, 32 / NM, NM]"
                      : "[cdiv(B, 32), cdiv(T, segment), segment, 5, 32]");
    check_work(c, "maps", *a.maps, workloads::hbv_maps_shape(b, t, form, nm),
               nm > 1 ? "[cdiv(B, 32 / NM), cdiv(T, segment), 30, 32 / NM, NM]"
                      : "[cdiv(B, 32), cdiv(T, segment), 30, 32]");
  }
  if (a.starts) {
    if (a.segment < 0)
      throw Error(str(c.named("starts", *a.starts), " is given but segment = ", a.segment,
                      ": give the segment the training forward returned with it"));
    check_starts(c, *a.starts, b, t, interval_of(a.segment), nm);
  }
  c.on_one_gpu({{"P", &a.P},
                {"TEMP", &a.TEMP},
                {"PET", &a.PET},
                {"params", &a.params},
                {"dQ", &a.dQ},
                {"starts", a.starts ? &*a.starts : nullptr},
                {"tape", a.tape ? &*a.tape : nullptr},
                {"maps", a.maps ? &*a.maps : nullptr},
                {"d_P", a.d_P ? &*a.d_P : nullptr},
                {"d_TEMP", a.d_TEMP ? &*a.d_TEMP : nullptr},
                {"d_PET", a.d_PET ? &*a.d_PET : nullptr},
                {"d_params", a.d_params ? &*a.d_params : nullptr}});
}

HbvBackwardResult hbv_backward(Runtime& rt, const HbvBackwardArgs& given) {
  // As the forward: the op's form first (a starts given with segment -1 is refused by the
  // checks, which see the caller's segment).
  HbvBackwardArgs a = given;
  if (a.segment == -1 && !a.starts && resolvable(a.P, a.params))
    a.segment = hbv_op_form(rt, a.P.shape[0], a.P.shape[1], components(a.params), -1);
  check_hbv_backward(a);
  HbvBackwardResult out;
  const int device = a.P.device_index;
  const int64_t b = a.P.shape[0], t = a.P.shape[1];
  auto owned = std::make_shared<OwnedBuffers>();
  out.d_P = a.d_P ? *a.d_P : owned->allocate(DType::F32, {b, t}, device);
  out.d_TEMP = a.d_TEMP ? *a.d_TEMP : owned->allocate(DType::F32, {b, t}, device);
  out.d_PET = a.d_PET ? *a.d_PET : owned->allocate(DType::F32, {b, t}, device);
  out.d_params = a.d_params ? *a.d_params : owned->allocate(DType::F32, a.params.shape, device);
  if (!owned->buffers.empty()) out.storage = owned;
  out.segment = form_of(a.segment, a.P, a.params);
  if (b == 0) return out;
  static const std::string source = kSource, derived = kDerived;
  const int64_t nm = components(a.params);
  // The derived kernels add into the gradients; with no days, d_params is zero.
  LaunchOptions zero;
  zero.stream = a.stream;
  rt.launch(rt.load(source, nm > 1 ? "hbv_zero_grads_nmul" : "hbv_zero_grads"),
            {Arg::of(out.d_P), Arg::of(out.d_TEMP), Arg::of(out.d_PET), Arg::of(out.d_params)},
            zero);
  if (t == 0) return out;
  // The derived kernels take the forward's Q among their parameters but never read it (its
  // store is the loss's seed, d_Q): dQ, of Q's shape, stands in.
  const Tensor& q_unread = a.dQ;
  if (out.segment == 0 && a.starts) {
    // The checkpointed reverse from the training forward's states: no forward pass of its own.
    rt.launch(rt.load(derived, kernel_name(a.params, "_grad_ck")),
              {Arg::of(a.P), Arg::of(a.TEMP), Arg::of(a.PET), Arg::of(a.params), Arg::of(q_unread),
               Arg::of(a.dQ), Arg::of(out.d_P), Arg::of(out.d_TEMP), Arg::of(out.d_PET),
               Arg::of(out.d_params), Arg::of(*a.starts)},
              derived_options(nm, workloads::kHbvForwardCheckpointDays, a.stream));
    return out;
  }
  if (out.segment == 0) {
    LaunchOptions lo;
    lo.stream = a.stream;
    lo.config = a.config;
    rt.launch(rt.load(derived, kernel_name(a.params, "_grad")),
              {Arg::of(a.P), Arg::of(a.TEMP), Arg::of(a.PET), Arg::of(a.params), Arg::of(q_unread),
               Arg::of(a.dQ), Arg::of(out.d_P), Arg::of(out.d_TEMP), Arg::of(out.d_PET),
               Arg::of(out.d_params)},
              lo);
    return out;
  }
  const int64_t seg = out.segment;
  CallBuffers work(a.stream); // stream-ordered: back to the pool on return, after the launches
  Tensor starts =
      a.starts ? *a.starts
               : work.allocate(DType::F32, workloads::hbv_starts_shape(b, t, seg, nm), device);
  if (!a.starts) {
    // No training forward kept the starts: run it here (its Q goes to a work buffer).
    Tensor q = work.allocate(DType::F32, {b, t}, device);
    launch_training_forward(rt, a.P, a.TEMP, a.PET, a.params, q, starts, seg, a.stream);
  }
  Tensor tape = a.tape
                    ? *a.tape
                    : work.allocate(DType::F32, workloads::hbv_tape_shape(b, t, seg, nm), device);
  Tensor maps = a.maps
                    ? *a.maps
                    : work.allocate(DType::F32, workloads::hbv_maps_shape(b, t, seg, nm), device);
  const LaunchOptions lo = derived_options(nm, seg, a.stream);
  rt.launch(rt.load(derived, kernel_name(a.params, "_grad_lin")),
            {Arg::of(a.P), Arg::of(a.TEMP), Arg::of(a.PET), Arg::of(a.params), Arg::of(q_unread),
             Arg::of(a.dQ), Arg::of(starts), Arg::of(tape), Arg::of(maps)},
            lo);
  rt.launch(rt.load(derived, kernel_name(a.params, "_grad_seg")),
            {Arg::of(a.P), Arg::of(a.TEMP), Arg::of(a.PET), Arg::of(a.params), Arg::of(q_unread),
             Arg::of(a.dQ), Arg::of(out.d_P), Arg::of(out.d_TEMP), Arg::of(out.d_PET),
             Arg::of(out.d_params), Arg::of(tape), Arg::of(maps)},
            lo);
  return out;
}

} // namespace tilejit::ops
