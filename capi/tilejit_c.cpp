// The C ABI (capi/tilejit_c.h) over the public C++ API. Every entry point catches everything:
// no C++ exception may cross into C (or into Python through ctypes).
#include "capi/tilejit_c.h"

#include "support/error.h"
#include "support/version.h"

#include <tilejit/ops.h>
#include <tilejit/ring_attention.h>
#include <tilejit/tilejit.h>
#include <tilejit/tuning.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

using tilejit::Arg;
using tilejit::Config;
using tilejit::KernelRef;
using tilejit::Runtime;
using tilejit::Tensor;

namespace {

thread_local std::string last_error;
thread_local int last_error_kind = TJ_OK;
thread_local std::string returned; ///< the string the last call returned

const char* give(std::string s) {
  returned = std::move(s);
  return returned.c_str();
}

/// Runs `body`, turning any exception into the thread's last error and `failed`.
template <class F, class R> R guarded(F body, R failed) {
  last_error.clear();
  last_error_kind = TJ_OK;
  try {
    return body();
  } catch (const tilejit::NoGpuError& e) {
    last_error = e.what();
    last_error_kind = TJ_NO_GPU;
  } catch (const tilejit::Error& e) {
    last_error = e.what();
    last_error_kind = TJ_ERROR;
  } catch (const tilejit::InternalError& e) {
    last_error = e.what();
    last_error_kind = TJ_INTERNAL;
  } catch (const std::exception& e) {
    last_error = e.what();
    last_error_kind = TJ_INTERNAL;
  } catch (...) {
    last_error = "unknown exception";
    last_error_kind = TJ_INTERNAL;
  }
  return failed;
}

Runtime& runtime_of(void* p) {
  if (!p) throw tilejit::Error("no runtime (a null handle)");
  return *static_cast<Runtime*>(p);
}

constexpr int kMaxRank = 16;

/// The packed records (capi/tilejit_c.h) as arguments; a malformed record is an error, never a
/// read past the array. Fills the calling thread's vector in place: from the second call of a
/// shape on, its tensors' shape and stride vectors are reused, so a launch allocates nothing.
const std::vector<Arg>& unpack_args(const int64_t* p, int64_t n) {
  thread_local std::vector<Arg> args;
  if (n < 0 || (n > 0 && !p)) throw tilejit::Error("packed arguments: a null array");
  size_t count = 0;
  int64_t i = 0;
  auto take = [&](const char* what) {
    if (i >= n)
      throw tilejit::Error(std::string("packed arguments: record ") + std::to_string(count) +
                           " ends before its " + what);
    return p[i++];
  };
  while (i < n) {
    if (args.size() <= count) args.emplace_back();
    Arg& a = args[count];
    int64_t kind = take("kind");
    switch (kind) {
    case 0:
    case 4: {
      a.is_tensor = true;
      Tensor& t = a.tensor;
      t.data = reinterpret_cast<void*>(static_cast<uintptr_t>(take("data pointer")));
      int64_t dtype = take("dtype");
      if (dtype < 0 || dtype > static_cast<int64_t>(tilejit::DType::F64))
        throw tilejit::Error("packed arguments: unknown dtype code " + std::to_string(dtype));
      t.dtype = static_cast<tilejit::DType>(dtype);
      t.device = take("device") == 1 ? tilejit::DeviceKind::CUDA : tilejit::DeviceKind::CPU;
      t.device_index = static_cast<int>(take("device index"));
      int64_t rank = take("rank");
      if (rank < 0 || rank > kMaxRank)
        throw tilejit::Error("packed arguments: rank " + std::to_string(rank) + " is not 0.." +
                             std::to_string(kMaxRank));
      t.shape.resize(rank);
      t.strides.resize(rank);
      for (auto& s : t.shape) s = take("sizes");
      if (kind == 0) {
        for (auto& s : t.strides) s = take("strides");
      } else { // dense row-major: the strides are the suffix products of the sizes
        int64_t step = 1;
        for (int64_t d = rank - 1; d >= 0; --d) {
          t.strides[d] = step;
          step *= std::max<int64_t>(t.shape[d], 1);
        }
      }
      break;
    }
    case 1: {
      int64_t bits = take("value");
      double v;
      std::memcpy(&v, &bits, sizeof v);
      a = Arg::f32(static_cast<float>(v));
      break;
    }
    case 2:
      a = Arg::i32(static_cast<int32_t>(take("value")));
      break;
    case 3:
      a = Arg::i64(take("value"));
      break;
    default:
      throw tilejit::Error("packed arguments: unknown kind " + std::to_string(kind));
    }
    ++count;
  }
  args.resize(count);
  return args;
}

Config parse_config(const char* text) {
  Config c;
  if (!text) return c;
  std::string s = text;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(';', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw tilejit::Error("config item '" + item + "' is not NAME=VALUE");
    std::string name = item.substr(0, eq);
    if (c.count(name)) throw tilejit::Error("config: '" + name + "' is given twice");
    c[name] = item.substr(eq + 1);
    start = end + 1;
  }
  return c;
}

tilejit::TuningBudget budget(int trials, double seconds, const char* strategy, int repeats) {
  tilejit::TuningBudget b;
  b.trials = trials;
  b.seconds = seconds;
  if (strategy && *strategy) b.strategy = strategy;
  b.repeats = repeats;
  return b;
}

} // namespace

namespace {

/// The tensors of a typed op's packed arguments, checked for count: `count`, or `or_count`
/// where an op takes optional trailing tensors (0: none).
const std::vector<Arg>& op_tensors(const char* op, const int64_t* packed, int64_t packed_len,
                                   size_t count, const char* names, size_t or_count = 0) {
  const std::vector<Arg>& args = unpack_args(packed, packed_len);
  if (args.size() != count && (or_count == 0 || args.size() != or_count))
    throw tilejit::Error(std::string(op) + " takes " + std::to_string(count) +
                         (or_count ? " or " + std::to_string(or_count) : std::string()) +
                         " tensors (" + names + "), got " + std::to_string(args.size()) +
                         " arguments");
  return args;
}

Tensor tensor_arg(const char* op, const Arg& a, const char* name) {
  if (!a.is_tensor) throw tilejit::Error(std::string(op) + ": '" + name + "' must be a tensor");
  return a.tensor;
}

/// The five tensors of an attention forward (q, k, v, o, lse) into the op's arguments (the
/// one-GPU op's and the ring's have these fields alike).
template <class Args>
void attention_forward_tensors(const char* op, const std::vector<Arg>& t, Args& a) {
  a.q = tensor_arg(op, t[0], "q");
  a.k = tensor_arg(op, t[1], "k");
  a.v = tensor_arg(op, t[2], "v");
  a.o = tensor_arg(op, t[3], "o");
  a.lse = tensor_arg(op, t[4], "lse");
}

/// The nine of a backward: q, k, v, o, lse, dout, then dq, dk, dv.
template <class Args>
void attention_backward_tensors(const char* op, const std::vector<Arg>& t, Args& a) {
  attention_forward_tensors(op, t, a); // the first five are the forward's
  a.dout = tensor_arg(op, t[5], "dout");
  a.dq = tensor_arg(op, t[6], "dq");
  a.dk = tensor_arg(op, t[7], "dk");
  a.dv = tensor_arg(op, t[8], "dv");
}

} // namespace

extern "C" {

const char* tj_version(void) {
  return tilejit::tilejit_version();
}

const char* tj_last_error(void) {
  return last_error.c_str();
}

int tj_last_error_kind(void) {
  return last_error_kind;
}

void* tj_runtime_new(const char* arch, const char* cache_dir, int tune_on_first_use, int debug,
                     double compile_timeout_s, int verbose, int device) {
  return guarded(
      [&]() -> void* {
        if (device < 0)
          throw tilejit::Error(tilejit::str("Runtime: device = ", device,
                                            " is not a CUDA "
                                            "device ordinal (0 and up)"));
        tilejit::RuntimeOptions o;
        o.device = device;
        if (arch) o.arch = arch;
        if (cache_dir) o.cache_dir = std::string(cache_dir);
        if (tune_on_first_use >= 0) o.tune_on_first_use = tune_on_first_use != 0;
        if (debug >= 0) o.debug_bounds = debug != 0;
        if (compile_timeout_s >= 0) o.compile_timeout_s = compile_timeout_s;
        if (verbose) o.log = [](const std::string& m) { std::cerr << m << "\n"; };
        return new Runtime(o);
      },
      static_cast<void*>(nullptr));
}

void tj_runtime_free(void* runtime) {
  delete static_cast<Runtime*>(runtime);
}

int tj_has_gpu(void* runtime) {
  return guarded([&] { return runtime_of(runtime).has_gpu() ? 1 : 0; }, -1);
}

const char* tj_arch(void* runtime) {
  return guarded([&] { return give(runtime_of(runtime).arch()); },
                 static_cast<const char*>(nullptr));
}

const char* tj_device_json(void* runtime) {
  return guarded(
      [&] {
        const tilejit::DeviceInfo& d = runtime_of(runtime).device();
        nlohmann::json j = {{"name", d.name},
                            {"arch", d.arch()},
                            {"compute_capability", {d.cc_major, d.cc_minor}},
                            {"sm_count", d.sm_count},
                            {"total_mem", d.total_mem},
                            {"smem_per_block_optin", d.smem_per_block_optin},
                            {"l2_bytes", d.l2_bytes},
                            {"driver_version", d.driver_version}};
        return give(j.dump());
      },
      static_cast<const char*>(nullptr));
}

const char* tj_default_database_path(void) {
  return guarded([] { return give(tilejit::default_tuning_database_path()); },
                 static_cast<const char*>(nullptr));
}

int tj_use_tuning_database(void* runtime, const char* path, int trials, double seconds,
                           const char* strategy, int repeats) {
  return guarded(
      [&] {
        tilejit::use_tuning_database(runtime_of(runtime), path ? path : "",
                                     budget(trials, seconds, strategy, repeats));
        return 0;
      },
      -1);
}

int tj_load(void* runtime, const char* source, const char* name) {
  return guarded(
      [&] {
        if (!source) throw tilejit::Error("load: no source given");
        return runtime_of(runtime).load(source, name ? name : "").id;
      },
      -1);
}

const char* tj_kernel_info_json(void* runtime, int kernel) {
  return guarded(
      [&] {
        tilejit::KernelInfo k = runtime_of(runtime).kernel_info(KernelRef{kernel});
        nlohmann::json params = nlohmann::json::array();
        for (const auto& p : k.params)
          params.push_back({{"name", p.name},
                            {"type", p.type},
                            {"is_tensor", p.is_tensor},
                            {"is_scratch", p.is_scratch},
                            {"dtype", p.dtype},
                            {"dims", p.dims}});
        auto choices = [](const std::vector<tilejit::ChoiceInfo>& cs) {
          nlohmann::json out = nlohmann::json::array();
          for (const auto& c : cs)
            out.push_back({{"name", c.name}, {"choices", c.choices}, {"default", c.default_value}});
          return out;
        };
        nlohmann::json j = {{"name", k.name},
                            {"source_hash", k.source_hash},
                            {"params", params},
                            {"generics", choices(k.generics)},
                            {"tunables", choices(k.tunables)}};
        return give(j.dump());
      },
      static_cast<const char*>(nullptr));
}

int tj_launch(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
              const char* config, void* stream, int synchronize) {
  return guarded(
      [&] {
        tilejit::LaunchOptions o;
        o.stream = stream;
        if (config && *config) o.config = parse_config(config);
        o.synchronize = synchronize != 0;
        runtime_of(runtime).launch(KernelRef{kernel}, unpack_args(packed, packed_len), o);
        return 0;
      },
      -1);
}

const char* tj_resolve_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                            const char* config) {
  return guarded(
      [&] {
        std::string why;
        Runtime& rt = runtime_of(runtime);
        const std::vector<Arg>& args = unpack_args(packed, packed_len);
        Config forced = parse_config(config);
        rt.launch_shape(KernelRef{kernel}, args, forced); // checks the arguments as a launch does
        Config c = rt.resolve_config(KernelRef{kernel}, args, forced, &why);
        return give(nlohmann::json({{"config", c}, {"why", why}}).dump());
      },
      static_cast<const char*>(nullptr));
}

const char* tj_compile_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                            const char* config) {
  return guarded(
      [&] {
        Runtime& rt = runtime_of(runtime);
        const std::vector<Arg>& args = unpack_args(packed, packed_len);
        Config c = rt.resolve_config(KernelRef{kernel}, args, parse_config(config));
        tilejit::CompileReport r = rt.compile(KernelRef{kernel}, c, args);
        nlohmann::json j = {{"kernel", r.kernel},
                            {"config", r.config},
                            {"arch", r.arch},
                            {"entry", r.entry},
                            {"language", r.language},
                            {"source", r.source},
                            {"binary_bytes", r.binary_bytes},
                            {"from_cache", r.from_cache},
                            {"compile_ms", r.compile_ms},
                            {"threads", r.threads},
                            {"smem_bytes", r.smem_bytes},
                            {"registers", r.registers},
                            {"spill_bytes", r.spill_bytes},
                            {"warnings", r.warnings}};
        return give(j.dump());
      },
      static_cast<const char*>(nullptr));
}

const char* tj_tune_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                         const char* config, void* stream, const char* path, int trials,
                         double seconds, const char* strategy, int repeats) {
  return guarded(
      [&] {
        tilejit::LaunchOptions o;
        o.stream = stream;
        o.config = parse_config(config);
        tilejit::TuningResult t = tilejit::tune_launch(
            runtime_of(runtime), KernelRef{kernel}, unpack_args(packed, packed_len), o,
            path ? path : "", budget(trials, seconds, strategy, repeats));
        return give(
            nlohmann::json({{"config", t.config}, {"tuned", t.tuned}, {"why", t.why}}).dump());
      },
      static_cast<const char*>(nullptr));
}

int tj_paged_sparse_decode(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                           const char* config, void* stream, int check_only) {
  return guarded(
      [&] {
        const std::vector<Arg>& args = unpack_args(packed, packed_len);
        if (args.size() != 9)
          throw tilejit::Error("paged_sparse_decode takes 9 tensors (q, k_cache, v_cache, "
                               "block_table, seq_lens, kept_idx, kept_len, o, lse), got " +
                               std::to_string(args.size()) + " arguments");
        for (const auto& a : args)
          if (!a.is_tensor) throw tilejit::Error("paged_sparse_decode takes tensors only");
        // Copy-assigned into the thread's own: their vectors keep their capacity.
        thread_local tilejit::ops::PagedSparseDecodeArgs p;
        p.q = args[0].tensor;
        p.k_cache = args[1].tensor;
        p.v_cache = args[2].tensor;
        p.block_table = args[3].tensor;
        p.seq_lens = args[4].tensor;
        p.kept_idx = args[5].tensor;
        p.kept_len = args[6].tensor;
        if (!p.o) p.o.emplace();
        if (!p.lse) p.lse.emplace();
        *p.o = args[7].tensor;
        *p.lse = args[8].tensor;
        p.scale.reset();
        if (!std::isnan(scale)) p.scale = scale;
        p.stream = stream;
        if (config && *config)
          p.config = parse_config(config);
        else if (!p.config.empty())
          p.config.clear();
        if (check_only) {
          tilejit::ops::check_paged_sparse_decode(p);
        } else {
          tilejit::ops::paged_sparse_decode(runtime_of(runtime), p);
        }
        return 0;
      },
      -1);
}

int tj_repack_int4(void* runtime, const int64_t* packed, int64_t packed_len, int64_t group_size,
                   void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "repack_int4";
        const auto& args = op_tensors(op, packed, packed_len, 8,
                                      "qweight, scales, qzeros, g_idx or 0, qweight_t, "
                                      "scales_out, qzeros_out, perm");
        tilejit::ops::RepackInt4Args a;
        a.qweight = tensor_arg(op, args[0], "qweight");
        a.scales = tensor_arg(op, args[1], "scales");
        a.qzeros = tensor_arg(op, args[2], "qzeros");
        if (args[3].is_tensor) a.g_idx = args[3].tensor;
        a.qweight_t = tensor_arg(op, args[4], "qweight_t");
        a.scales_out = tensor_arg(op, args[5], "scales_out");
        a.qzeros_out = tensor_arg(op, args[6], "qzeros_out");
        a.perm = tensor_arg(op, args[7], "perm");
        a.group_size = group_size;
        a.stream = stream;
        if (check_only)
          tilejit::ops::check_repack_int4(a);
        else
          tilejit::ops::repack_int4(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int tj_dequant_linear(void* runtime, const int64_t* packed, int64_t packed_len, int64_t group,
                      int act_order, const char* config, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "dequant_linear";
        const auto& args =
            op_tensors(op, packed, packed_len, 6, "x, qweight_t, scales, qzeros, perm, y");
        // The thread's own, copy-assigned: no allocation per call after the first.
        thread_local tilejit::ops::DequantLinearArgs a;
        a.x = tensor_arg(op, args[0], "x");
        a.weights.qweight_t = tensor_arg(op, args[1], "qweight_t");
        a.weights.scales = tensor_arg(op, args[2], "scales");
        a.weights.qzeros = tensor_arg(op, args[3], "qzeros");
        a.weights.perm = tensor_arg(op, args[4], "perm");
        a.weights.group = group;
        a.weights.act_order = act_order != 0;
        if (!a.y) a.y.emplace();
        *a.y = tensor_arg(op, args[5], "y");
        a.stream = stream;
        if (config && *config)
          a.config = parse_config(config);
        else if (!a.config.empty())
          a.config.clear();
        if (check_only)
          tilejit::ops::check_dequant_linear(a);
        else
          tilejit::ops::dequant_linear(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int tj_int8_linear(void* runtime, const int64_t* packed, int64_t packed_len, const char* config,
                   void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "int8_linear";
        const auto& args = op_tensors(op, packed, packed_len, 4, "x, w, scales, y");
        thread_local tilejit::ops::Int8LinearArgs a;
        a.x = tensor_arg(op, args[0], "x");
        a.w = tensor_arg(op, args[1], "w");
        a.scales = tensor_arg(op, args[2], "scales");
        if (!a.y) a.y.emplace();
        *a.y = tensor_arg(op, args[3], "y");
        a.stream = stream;
        if (config && *config)
          a.config = parse_config(config);
        else if (!a.config.empty())
          a.config.clear();
        if (check_only)
          tilejit::ops::check_int8_linear(a);
        else
          tilejit::ops::int8_linear(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

namespace {

/// ops::attention_forward from the packed tensors: q, k, v, o, lse, and for block-sparse
/// (`sparse`) block_counts and block_indices.
int attention_forward_call(void* runtime, const int64_t* packed, int64_t packed_len, bool sparse,
                           int64_t block, int causal, int exact, double scale, const char* config,
                           void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "attention_forward";
        // Block-sparse: the lists, then optionally their work list (9 tensors).
        const auto& args = op_tensors(
            op, packed, packed_len, sparse ? 7 : 5,
            sparse ? "q, k, v, o, lse, block_counts, block_indices[, block_items, block_bounds]"
                   : "q, k, v, o, lse",
            sparse ? 9 : 0);
        tilejit::ops::AttentionForwardArgs a;
        attention_forward_tensors(op, args, a);
        if (sparse)
          a.blocks = tilejit::ops::AttentionBlocks{block, tensor_arg(op, args[5], "block_counts"),
                                                   tensor_arg(op, args[6], "block_indices")};
        if (args.size() == 9)
          a.items = tilejit::ops::AttentionItems{tensor_arg(op, args[7], "block_items"),
                                                 tensor_arg(op, args[8], "block_bounds")};
        a.causal = causal != 0;
        a.exact = exact != 0;
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_attention_forward(a);
        else
          tilejit::ops::attention_forward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

/// ops::attention_backward from the packed tensors: q, k, v, o, lse, dout, dq, dk, dv, and for
/// block-sparse (`sparse`) block_counts and block_indices (per key block), optionally then the
/// forward's (per query block: AttentionBackwardArgs::forward_blocks).
int attention_backward_call(void* runtime, const int64_t* packed, int64_t packed_len, bool sparse,
                            int64_t block, int causal, int exact, double scale, const char* config,
                            void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "attention_backward";
        // Block-sparse: the backward's lists, then optionally the forward's (13 tensors).
        const auto& args =
            op_tensors(op, packed, packed_len, sparse ? 11 : 9,
                       sparse ? "q, k, v, o, lse, dout, dq, dk, dv, block_counts, block_indices[, "
                                "forward_block_counts, forward_block_indices]"
                              : "q, k, v, o, lse, dout, dq, dk, dv",
                       sparse ? 13 : 0);
        const bool with_forward_lists = args.size() == 13;
        tilejit::ops::AttentionBackwardArgs a;
        attention_backward_tensors(op, args, a);
        if (sparse)
          a.blocks = tilejit::ops::AttentionBlocks{block, tensor_arg(op, args[9], "block_counts"),
                                                   tensor_arg(op, args[10], "block_indices")};
        if (with_forward_lists)
          a.forward_blocks =
              tilejit::ops::AttentionBlocks{block, tensor_arg(op, args[11], "forward_block_counts"),
                                            tensor_arg(op, args[12], "forward_block_indices")};
        a.causal = causal != 0;
        a.exact = exact != 0;
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_attention_backward(a);
        else
          tilejit::ops::attention_backward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

} // namespace

int tj_attention_forward(void* runtime, const int64_t* packed, int64_t packed_len, int causal,
                         int exact, double scale, const char* config, void* stream,
                         int check_only) {
  return attention_forward_call(runtime, packed, packed_len, false, 0, causal, exact, scale, config,
                                stream, check_only);
}

int tj_attention_backward(void* runtime, const int64_t* packed, int64_t packed_len, int causal,
                          int exact, double scale, const char* config, void* stream,
                          int check_only) {
  return attention_backward_call(runtime, packed, packed_len, false, 0, causal, exact, scale,
                                 config, stream, check_only);
}

int tj_attention_forward_sparse(void* runtime, const int64_t* packed, int64_t packed_len,
                                int64_t block, int causal, int exact, double scale,
                                const char* config, void* stream, int check_only) {
  return attention_forward_call(runtime, packed, packed_len, true, block, causal, exact, scale,
                                config, stream, check_only);
}

int tj_attention_backward_sparse(void* runtime, const int64_t* packed, int64_t packed_len,
                                 int64_t block, int causal, int exact, double scale,
                                 const char* config, void* stream, int check_only) {
  return attention_backward_call(runtime, packed, packed_len, true, block, causal, exact, scale,
                                 config, stream, check_only);
}

int tj_ring_new_id(char* id) {
  return guarded(
      [&] {
        const tilejit::ops::RingGroup::Id made = tilejit::ops::RingGroup::new_id();
        std::memcpy(id, made.data(), made.size());
        return 0;
      },
      -1);
}

void* tj_ring_group_new(void* runtime, const char* id, int world, int rank) {
  return guarded(
      [&]() -> void* {
        tilejit::ops::RingGroup::Id given;
        std::memcpy(given.data(), id, given.size());
        return new tilejit::ops::RingGroup(runtime_of(runtime), given, world, rank);
      },
      static_cast<void*>(nullptr));
}

void tj_ring_group_free(void* ring) {
  delete static_cast<tilejit::ops::RingGroup*>(ring);
}

int tj_ring_attention_forward(void* runtime, void* ring, const int64_t* packed, int64_t packed_len,
                              int causal, double scale, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "ring_attention_forward";
        const auto& args = op_tensors(op, packed, packed_len, 5, "q, k, v, o, lse");
        tilejit::ops::RingAttentionForwardArgs a;
        attention_forward_tensors(op, args, a);
        a.causal = causal != 0;
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (check_only) {
          tilejit::ops::check_ring_attention_forward(a);
        } else {
          if (!ring) throw tilejit::Error(tilejit::str(op, ": no ring group (tj_ring_group_new)"));
          tilejit::ops::ring_attention_forward(runtime_of(runtime),
                                               *static_cast<tilejit::ops::RingGroup*>(ring), a);
        }
        return 0;
      },
      -1);
}

int tj_ring_attention_backward(void* runtime, void* ring, const int64_t* packed, int64_t packed_len,
                               int causal, double scale, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "ring_attention_backward";
        const auto& args =
            op_tensors(op, packed, packed_len, 9, "q, k, v, o, lse, dout, dq, dk, dv");
        tilejit::ops::RingAttentionBackwardArgs a;
        attention_backward_tensors(op, args, a);
        a.causal = causal != 0;
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (check_only) {
          tilejit::ops::check_ring_attention_backward(a);
        } else {
          if (!ring) throw tilejit::Error(tilejit::str(op, ": no ring group (tj_ring_group_new)"));
          tilejit::ops::ring_attention_backward(runtime_of(runtime),
                                                *static_cast<tilejit::ops::RingGroup*>(ring), a);
        }
        return 0;
      },
      -1);
}

int tj_linear_attn_forward(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                           const char* config, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "linear_attn_forward";
        const auto& args = op_tensors(op, packed, packed_len, 4, "q, k, v, o");
        tilejit::ops::LinearAttnForwardArgs a;
        a.q = tensor_arg(op, args[0], "q");
        a.k = tensor_arg(op, args[1], "k");
        a.v = tensor_arg(op, args[2], "v");
        a.o = tensor_arg(op, args[3], "o");
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_linear_attn_forward(a);
        else
          tilejit::ops::linear_attn_forward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int tj_linear_attn_backward(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                            const char* config, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "linear_attn_backward";
        const auto& args = op_tensors(op, packed, packed_len, 7, "q, k, v, dout, dq, dk, dv");
        tilejit::ops::LinearAttnBackwardArgs a;
        a.q = tensor_arg(op, args[0], "q");
        a.k = tensor_arg(op, args[1], "k");
        a.v = tensor_arg(op, args[2], "v");
        a.dout = tensor_arg(op, args[3], "dout");
        a.dq = tensor_arg(op, args[4], "dq");
        a.dk = tensor_arg(op, args[5], "dk");
        a.dv = tensor_arg(op, args[6], "dv");
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_linear_attn_backward(a);
        else
          tilejit::ops::linear_attn_backward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int64_t tj_hbv_backward_form(int64_t b, int64_t t, int64_t segment) {
  return guarded([&] { return tilejit::ops::hbv_backward_form(b, t, segment); }, int64_t{-1});
}

int64_t tj_hbv_op_form(void* runtime, int64_t b, int64_t t, int64_t nm, int64_t segment) {
  return guarded([&] { return tilejit::ops::hbv_op_form(runtime_of(runtime), b, t, nm, segment); },
                 int64_t{-1});
}

int64_t tj_hbv_starts_interval(int64_t form) {
  return guarded([&] { return tilejit::ops::hbv_starts_interval(form); }, int64_t{-1});
}

int tj_hbv_buffer_shape(const char* which, int64_t b, int64_t t, int64_t form, int64_t nm,
                        int64_t* shape, int capacity) {
  return guarded(
      [&] {
        if (!which)
          throw tilejit::Error("tj_hbv_buffer_shape: which is NULL (starts, tape or maps)");
        const std::vector<int64_t> s = tilejit::ops::hbv_buffer_shape(which, b, t, form, nm);
        if (!shape || capacity < static_cast<int>(s.size()))
          throw tilejit::Error("tj_hbv_buffer_shape: room for " + std::to_string(s.size()) +
                               " dimensions needed, " + std::to_string(shape ? capacity : 0) +
                               " given");
        std::copy(s.begin(), s.end(), shape);
        return static_cast<int>(s.size());
      },
      -1);
}

int tj_hbv_forward(void* runtime, const int64_t* packed, int64_t packed_len, int training,
                   int64_t segment, int has_starts, const char* config, void* stream,
                   int check_only) {
  return guarded(
      [&] {
        const char* op = "hbv_forward";
        const auto& args =
            op_tensors(op, packed, packed_len, has_starts ? 6 : 5,
                       has_starts ? "P, TEMP, PET, params, Q, starts" : "P, TEMP, PET, params, Q");
        tilejit::ops::HbvForwardArgs a;
        a.P = tensor_arg(op, args[0], "P");
        a.TEMP = tensor_arg(op, args[1], "TEMP");
        a.PET = tensor_arg(op, args[2], "PET");
        a.params = tensor_arg(op, args[3], "params");
        a.Q = tensor_arg(op, args[4], "Q");
        if (has_starts) a.starts = tensor_arg(op, args[5], "starts");
        a.training = training != 0;
        a.segment = segment;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_hbv_forward(a);
        else
          tilejit::ops::hbv_forward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int tj_hbv_backward(void* runtime, const int64_t* packed, int64_t packed_len, int64_t segment,
                    int has_starts, int has_work, const char* config, void* stream,
                    int check_only) {
  return guarded(
      [&] {
        const char* op = "hbv_backward";
        std::string names = "P, TEMP, PET, params, dQ, d_P, d_TEMP, d_PET, d_params";
        if (has_starts) names += ", starts";
        if (has_work) names += ", tape, maps";
        const int n = 9 + (has_starts ? 1 : 0) + (has_work ? 2 : 0);
        const auto& args = op_tensors(op, packed, packed_len, n, names.c_str());
        tilejit::ops::HbvBackwardArgs a;
        a.P = tensor_arg(op, args[0], "P");
        a.TEMP = tensor_arg(op, args[1], "TEMP");
        a.PET = tensor_arg(op, args[2], "PET");
        a.params = tensor_arg(op, args[3], "params");
        a.dQ = tensor_arg(op, args[4], "dQ");
        a.d_P = tensor_arg(op, args[5], "d_P");
        a.d_TEMP = tensor_arg(op, args[6], "d_TEMP");
        a.d_PET = tensor_arg(op, args[7], "d_PET");
        a.d_params = tensor_arg(op, args[8], "d_params");
        if (has_starts) a.starts = tensor_arg(op, args[9], "starts");
        if (has_work) {
          const size_t at = has_starts ? 10 : 9;
          a.tape = tensor_arg(op, args[at], "tape");
          a.maps = tensor_arg(op, args[at + 1], "maps");
        }
        a.segment = segment;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_hbv_backward(a);
        else
          tilejit::ops::hbv_backward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

extern "C++" { // a helper of the C functions below, with C++ linkage
namespace {

/// The C ABI's cu_seqlens (a count and its offsets) as the op takes them.
std::vector<int64_t> cu_seqlens_arg(const char* op, const int64_t* cu, int64_t len) {
  if (len < 0 || len > (int64_t{1} << 32))
    throw tilejit::Error(std::string(op) + ": cu_seqlens has " + std::to_string(len) + " entries");
  if (len > 0 && !cu)
    throw tilejit::Error(std::string(op) + ": cu_seqlens is NULL with " + std::to_string(len) +
                         " entries");
  return len ? std::vector<int64_t>(cu, cu + len) : std::vector<int64_t>{};
}

} // namespace
} // extern "C++"

int tj_gated_delta_rule_forward(void* runtime, const int64_t* packed, int64_t packed_len,
                                int has_h0, const int64_t* cu_seqlens, int64_t cu_seqlens_len,
                                int normalize, int64_t chunk, double scale, const char* config,
                                void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "gated_delta_rule_forward";
        const auto& args =
            op_tensors(op, packed, packed_len, has_h0 ? 8 : 7,
                       has_h0 ? "q, k, v, g, beta, o, ht, h0" : "q, k, v, g, beta, o, ht");
        tilejit::ops::GatedDeltaRuleArgs a;
        a.q = tensor_arg(op, args[0], "q");
        a.k = tensor_arg(op, args[1], "k");
        a.v = tensor_arg(op, args[2], "v");
        a.g = tensor_arg(op, args[3], "g");
        a.beta = tensor_arg(op, args[4], "beta");
        a.o = tensor_arg(op, args[5], "o");
        a.ht = tensor_arg(op, args[6], "ht");
        if (has_h0) a.h0 = tensor_arg(op, args[7], "h0");
        a.cu_seqlens = cu_seqlens_arg(op, cu_seqlens, cu_seqlens_len);
        a.normalize = normalize != 0;
        a.chunk = chunk;
        if (!std::isnan(scale)) a.scale = scale;
        a.stream = stream;
        if (config && *config) a.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_gated_delta_rule_forward(a);
        else
          tilejit::ops::gated_delta_rule_forward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

int tj_gated_delta_rule_backward(void* runtime, const int64_t* packed, int64_t packed_len,
                                 int has_h0, int has_dht, const int64_t* cu_seqlens,
                                 int64_t cu_seqlens_len, int normalize, int64_t chunk, double scale,
                                 const char* config, void* stream, int check_only) {
  return guarded(
      [&] {
        const char* op = "gated_delta_rule_backward";
        const int n = 12 + (has_h0 ? 1 : 0) + (has_dht ? 1 : 0);
        const char* names = has_h0 && has_dht
                                ? "q, k, v, g, beta, dout, dq, dk, dv, dg, dbeta, dh0, h0, dht"
                            : has_h0  ? "q, k, v, g, beta, dout, dq, dk, dv, dg, dbeta, dh0, h0"
                            : has_dht ? "q, k, v, g, beta, dout, dq, dk, dv, dg, dbeta, dh0, dht"
                                      : "q, k, v, g, beta, dout, dq, dk, dv, dg, dbeta, dh0";
        const auto& args = op_tensors(op, packed, packed_len, n, names);
        tilejit::ops::GatedDeltaRuleBackwardArgs a;
        tilejit::ops::GatedDeltaRuleArgs& f = a.forward;
        f.q = tensor_arg(op, args[0], "q");
        f.k = tensor_arg(op, args[1], "k");
        f.v = tensor_arg(op, args[2], "v");
        f.g = tensor_arg(op, args[3], "g");
        f.beta = tensor_arg(op, args[4], "beta");
        a.dout = tensor_arg(op, args[5], "dout");
        a.dq = tensor_arg(op, args[6], "dq");
        a.dk = tensor_arg(op, args[7], "dk");
        a.dv = tensor_arg(op, args[8], "dv");
        a.dg = tensor_arg(op, args[9], "dg");
        a.dbeta = tensor_arg(op, args[10], "dbeta");
        a.dh0 = tensor_arg(op, args[11], "dh0");
        int next = 12;
        if (has_h0) f.h0 = tensor_arg(op, args[next++], "h0");
        if (has_dht) a.dht = tensor_arg(op, args[next++], "dht");
        f.cu_seqlens = cu_seqlens_arg(op, cu_seqlens, cu_seqlens_len);
        f.normalize = normalize != 0;
        f.chunk = chunk;
        if (!std::isnan(scale)) f.scale = scale;
        f.stream = stream;
        if (config && *config) f.config = parse_config(config);
        if (check_only)
          tilejit::ops::check_gated_delta_rule_backward(a);
        else
          tilejit::ops::gated_delta_rule_backward(runtime_of(runtime), a);
        return 0;
      },
      -1);
}

} // extern "C"
