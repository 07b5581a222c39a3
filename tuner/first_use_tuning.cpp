#include "tuner/first_use_tuning.h"

#include "compiler/launch_plan.h"
#include "compiler/ref/run_tile.h"
#include "dsl/ast.h"
#include "runtime/device_buffer.h"
#include "runtime/gpu_api.h"
#include "runtime/runtime_access.h"
#include "support/text.h"
#include "tuner/db_binary_source.h"
#include "tuner/tuner.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tilejit {
namespace {

/// The bytes a strided view spans (from its base to its last element), or nullopt when a
/// stride is negative (its span would start before `data`).
std::optional<size_t> span_bytes(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.strides[d] < 0) return std::nullopt;
    last += (t.shape[d] - 1) * t.strides[d];
  }
  return static_cast<size_t>(last + 1) * dtype_size(t.dtype);
}

/// A device copy of the memory one written tensor spans.
struct SavedTensor {
  Tensor view;
  size_t bytes = 0;
  DeviceBuffer saved;
};

/// ||got - want|| / ||want|| over the span, read as elements of `dtype`; infinite when NaN
/// appears where the reference has none (or the other way round).
double relative_error(DType dtype, const std::string& got, const std::string& want) {
  const int64_t n = static_cast<int64_t>(got.size() / dtype_size(dtype));
  ref::HostBuffer a(dtype, {n}), b(dtype, {n});
  std::memcpy(a.data(), got.data(), got.size());
  std::memcpy(b.data(), want.data(), want.size());
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (std::isnan(x) || x == y) continue; // equal infinities (lse = -inf) are equal
    if (std::isinf(x) || std::isinf(y)) return INFINITY;
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

} // namespace

FirstUseTuner make_first_use_tuner(std::shared_ptr<TuneDatabase> db, TuneIdentity identity,
                                   FirstUseTuningOptions options) {
  return [db, identity, options](Runtime& rt, KernelRef k, const std::vector<Arg>& args,
                                 const Config& forced, void* stream,
                                 std::string* why) -> std::optional<Config> {
    auto say = [&](const std::string& text) {
      if (why) *why = text;
    };
    if (const char* f = std::getenv(force_config_env); f && *f) return std::nullopt;
    const dsl::Kernel& kernel = RuntimeAccess::kernel(rt, k);
    Runtime::LaunchShape shape = rt.launch_shape(k, args, forced);
    TuneKey key =
        make_tune_key(kernel.name, rt.source_hash(k), shape.generics, shape.sizes, identity);
    if (db->winner(key)) return std::nullopt; // tuned before: the selector has it
    // The runtime's GPU, through its target's API (CUDA, or HIP on an AMD GPU).
    const GpuApi api = gpu_api(rt);
    const int device = rt.device_ordinal();
    // The caller's inputs may still be being written on its stream.
    synchronize_stream(api, stream);
    synchronize_device(api, device);
    // Save what the kernel writes, so every checked run (and the caller's real launch)
    // starts from the caller's buffers.
    std::vector<bool> written = params_written(kernel);
    std::vector<SavedTensor> saved;
    size_t next = 0;
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      if (kernel.params[i].is_scratch) continue;
      const Arg& a = args[next++];
      if (!written[i] || !a.is_tensor) continue;
      std::optional<size_t> bytes = span_bytes(a.tensor);
      if (!bytes) {
        say(fmt::format("not tuned on first use: '{}' has a negative stride",
                        kernel.params[i].name));
        return std::nullopt;
      }
      SavedTensor s;
      s.view = a.tensor;
      s.bytes = *bytes;
      if (s.bytes) {
        s.saved = DeviceBuffer(s.bytes, device, api);
        copy_on_device(api, device, s.saved.data(), s.view.data, s.bytes);
      }
      saved.push_back(std::move(s));
    }
    auto restore = [&] {
      for (SavedTensor& s : saved)
        if (s.bytes) copy_on_device(api, device, s.view.data, s.saved.data(), s.bytes);
    };
    auto read_back = [&] {
      std::vector<std::string> out;
      synchronize_device(api, device);
      for (SavedTensor& s : saved) {
        std::string bytes(s.bytes, '\0');
        if (s.bytes) copy_to_host(api, device, bytes.data(), s.view.data, s.bytes);
        out.push_back(std::move(bytes));
      }
      return out;
    };
    try {
      // The reference: what the default configuration writes.
      Config defaults = complete_bindings(kernel, shape.generics);
      restore();
      rt.launch_config(k, defaults, args);
      std::vector<std::string> expected = read_back();

      TuneRequest r;
      r.runtime = &rt;
      r.kernel = k;
      r.args = args;
      r.generics = shape.generics;
      r.strategy = options.strategy;
      r.budget = options.budget;
      r.repeats = options.repeats;
      r.warm_start = options.warm_start;
      r.prepare_check = restore;
      r.check = [&](std::string* bad) {
        std::vector<std::string> got = read_back();
        for (size_t i = 0; i < saved.size(); ++i) {
          double err = relative_error(saved[i].view.dtype, got[i], expected[i]);
          double tol = dtype_size(saved[i].view.dtype) <= 2 ? 1e-2 : 1e-4;
          if (!(err <= tol)) {
            if (bad)
              *bad = fmt::format("differs from the default configuration's output by {}", err);
            return false;
          }
        }
        return true;
      };
      TuneOutcome out = tune(r, *db, identity);
      restore();
      synchronize_device(api, device);
      say(fmt::format(
          "tuned on first use: {} trials, winner {:.1f} us{}", out.trials, out.winner_ms * 1e3,
          out.default_ms > 0 ? fmt::format(" (defaults {:.1f} us)", out.default_ms * 1e3) : ""));
      return out.winner;
    } catch (const std::exception& e) {
      try {
        restore();
      } catch (const std::exception&) {
        // The context is broken: the caller's launch will say so.
      }
      say(fmt::format("tuning on first use failed ({}); using the database or the defaults",
                      e.what()));
      return std::nullopt;
    }
  };
}

void use_tuning_database(Runtime& rt, std::shared_ptr<TuneDatabase> db,
                         FirstUseTuningOptions options) {
  TuneIdentity id = current_identity(rt);
  rt.set_config_selector(make_db_config_selector(db, id));
  rt.set_binary_source(make_db_binary_source(db));
  rt.set_first_use_tuner(make_first_use_tuner(std::move(db), std::move(id), options));
}

} // namespace tilejit
