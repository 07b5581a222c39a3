// Issue 12's indexing and broadcasting rules on the GPU (label `gpu`): every kernel of
// tests/data/semantics.tile (outer-product and zipped gathers, 1|X dimensions given size 1 or
// the full size, [N, 1] register tiles, a dot with one column) on fresh random inputs at odd
// sizes and several configurations, against the reference interpreter, outputs poisoned
// first; and the debug mode (RuntimeOptions::debug_bounds, TILEJIT_DEBUG=1), whose launches
// throw the first out-of-range point or gather subscript and otherwise change nothing.
#include "compiler/kernel_library.h"
#include "compiler/ref/run_tile.h"
#include "example_checks.h"
#include "gpu_runner.h"
#include "paged_sparse_checks.h"
#include "runtime/device_buffer.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>

namespace tilejit::test {
namespace {

const std::string kFile = TILEJIT_SOURCE_DIR "/tests/data/semantics.tile";

const LoadedModule& module() {
  static LoadedModule m = load_tile_file(kFile);
  return m;
}

/// A Runtime and the kernels of semantics.tile loaded into it (each once, so that repeated
/// launches of a shape reuse their prepared launch).
struct Device {
  explicit Device(RuntimeOptions options = {}) : rt(std::move(options)) {}
  Runtime rt;
  std::map<std::string, KernelRef> kernels;
  KernelRef kernel(const std::string& name) {
    auto it = kernels.find(name);
    if (it == kernels.end()) it = kernels.emplace(name, rt.load(kFile, name)).first;
    return it->second;
  }
};

/// Runs kernel `name` on the GPU with `config` forced; every buffer is uploaded and
/// downloaded again.
void run_gpu(Device& device, const std::string& name, const Bindings& config,
             const std::vector<ref::HostBuffer*>& buffers) {
  Runtime& rt = device.rt;
  KernelRef kernel = device.kernel(name);
  std::vector<std::unique_ptr<DeviceBuffer>> dev;
  std::vector<Arg> args;
  for (ref::HostBuffer* b : buffers) {
    size_t bytes = static_cast<size_t>(b->numel()) * dtype_size(b->dtype());
    dev.push_back(std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 16)));
    dev.back()->upload(b->data(), bytes);
    args.push_back(Arg::of(Tensor::contiguous(dev.back()->data(), b->dtype(), b->shape())));
  }
  LaunchOptions o;
  o.config = config;
  o.synchronize = true;
  rt.launch(kernel, args, o);
  for (size_t i = 0; i < buffers.size(); ++i)
    dev[i]->download(buffers[i]->data(),
                     static_cast<size_t>(buffers[i]->numel()) * dtype_size(buffers[i]->dtype()));
}

void run_interpreter(const std::string& name, const Bindings& config,
                     const std::vector<ref::HostBuffer*>& buffers) {
  std::vector<ref::HostArg> args;
  for (ref::HostBuffer* b : buffers) args.push_back(b->arg());
  ref::run_tile(module().kernel(name), config, args);
}

Device& plain_device() {
  static Device d;
  return d;
}

ref::HostBuffer random_buffer(DType t, std::vector<int64_t> shape, std::mt19937& rng, double lo,
                              double hi) {
  ref::HostBuffer b(t, std::move(shape));
  if (dtype_is_float(t)) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int64_t k = 0; k < b.numel(); ++k) b.set(k, d(rng));
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (int64_t k = 0; k < b.numel(); ++k) b.set_int(k, d(rng));
  }
  return b;
}

/// Runs `name` on the GPU and on the interpreter with the same inputs; the buffers at
/// `outputs` are poisoned first on both sides and must agree: exactly when `tolerance` is 0,
/// else within ||gpu - ref|| / ||ref|| <= tolerance.
/// `accumulated`: outputs the kernel adds into (compared, but keeping their random start).
void check_against_interpreter(const std::string& name, const Bindings& config,
                               std::vector<ref::HostBuffer> inputs,
                               const std::vector<size_t>& outputs, double tolerance,
                               const std::vector<size_t>& accumulated = {}) {
  SCOPED_TRACE(str(name, " ", config_text(config)));
  std::vector<ref::HostBuffer> gpu = inputs, cpu = inputs;
  for (size_t o : outputs) {
    if (std::find(accumulated.begin(), accumulated.end(), o) != accumulated.end()) continue;
    gpu[o].poison();
    cpu[o].poison();
  }
  std::vector<ref::HostBuffer*> g, c;
  for (auto& b : gpu) g.push_back(&b);
  for (auto& b : cpu) c.push_back(&b);
  run_interpreter(name, config, c);
  run_gpu(plain_device(), name, config, g);
  for (size_t o : outputs) {
    double err = 0, norm = 0;
    int64_t mismatches = 0, first = -1;
    for (int64_t k = 0; k < cpu[o].numel(); ++k) {
      double want = cpu[o].get(k), got = gpu[o].get(k);
      bool same = want == got || (std::isnan(want) && std::isnan(got));
      if (!same && first < 0) first = k;
      mismatches += !same;
      if (std::isfinite(want) && std::isfinite(got)) {
        err += (got - want) * (got - want);
        norm += want * want;
      } else if (!same) {
        err = INFINITY;
      }
    }
    if (tolerance == 0)
      EXPECT_EQ(mismatches, 0) << "output " << o << ": first mismatch at element " << first
                               << ": gpu " << (first >= 0 ? gpu[o].get(first) : 0) << ", reference "
                               << (first >= 0 ? cpu[o].get(first) : 0);
    else
      EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), tolerance)
          << "output " << o << ", first difference at element " << first;
  }
}

TEST(GpuSemantics, OuterProductGathers) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const int64_t G = 5, N = 19, K = 37, C = 23;
  for (const Bindings& cfg : std::vector<Bindings>{{{"BK", "16"}, {"BN", "16"}},
                                                   {{"BK", "16"}, {"BN", "8"}, {"WARPS", "1"}},
                                                   {{"BK", "32"}, {"BN", "64"}},
                                                   {{"BK", "32"}, {"BN", "8"}, {"WARPS", "4"}}})
    check_against_interpreter("outer_gather", cfg,
                              {random_buffer(DType::I32, {G, N}, rng, -1000, 1000),
                               random_buffer(DType::I32, {K}, rng, 0, G - 1),
                               random_buffer(DType::I32, {C}, rng, 0, N - 1),
                               ref::HostBuffer(DType::I32, {K, C})},
                              {3}, 0);
  for (const Bindings& cfg :
       std::vector<Bindings>{{}, {{"BK", "64"}, {"BN", "16"}}, {{"BK", "16"}, {"BN", "16"}}})
    check_against_interpreter(
        "outer_gather_shared", cfg,
        {random_buffer(DType::F16, {7, 41}, rng, -2, 2), random_buffer(DType::I32, {21}, rng, 0, 6),
         random_buffer(DType::I32, {45}, rng, 0, 40), ref::HostBuffer(DType::F32, {21, 45})},
        {3}, 0);
}

// Column streams (compiler/cuda/cuda_column_streams.h): the staged reads, writes and atomic
// adds of three serial loops (forward, backwards through a let, a negative step) give what the
// interpreter's per-step accesses give, at odd R and T (a partial last window, T below one
// window, no step at all), one and several rows per thread, several programs.
TEST(GpuSemantics, ColumnStreamsMatchThePerStepAccesses) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const std::vector<Bindings> configs{{{"BR", "32"}, {"WARPS", "1"}},
                                      {{"BR", "64"}, {"WARPS", "1"}},
                                      {{"BR", "64"}, {"WARPS", "2"}},
                                      {{"BR", "128"}, {"WARPS", "4"}}};
  const std::vector<std::pair<int64_t, int64_t>> shapes{{77, 33}, {5, 3},   {300, 45},
                                                        {130, 1}, {64, 16}, {33, 0}};
  for (const auto& [R, T] : shapes)
    for (const Bindings& cfg : configs) {
      SCOPED_TRACE(str("R=", R, " T=", T));
      check_against_interpreter(
          "column_streams", cfg,
          {random_buffer(DType::F32, {R, T}, rng, -1, 1),
           random_buffer(DType::I32, {R, T}, rng, 0, 15),
           random_buffer(DType::I64, {R, T}, rng, -7, 7), ref::HostBuffer(DType::F32, {R, T}),
           ref::HostBuffer(DType::F32, {R, T}), random_buffer(DType::I32, {R, T}, rng, -100, 100),
           ref::HostBuffer(DType::F32, {R, T}), ref::HostBuffer(DType::F32, {R})},
          {3, 4, 5, 6, 7}, 1e-6, {5});
    }
}

TEST(GpuSemantics, SixtyFourBitSubscriptsOutOfRangeStayOutOfBounds) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const int64_t R = 37;
  ref::HostBuffer x = random_buffer(DType::F32, {R}, rng, -2, 2), wide(DType::I64, {R});
  std::uniform_int_distribution<int64_t> small(0, R - 1);
  for (int64_t r = 0; r < R; ++r) wide.set_int(r, small(rng));
  // In range: as the interpreter.
  check_against_interpreter("wide_subscripts", {},
                            {x, wide, random_buffer(DType::F32, {R}, rng, -2, 2),
                             ref::HostBuffer(DType::F32, {R}), ref::HostBuffer(DType::F32, {R})},
                            {2, 3, 4}, 0);
  // 2^32 + 18 is out of bounds: truncated to 32 bits it was 18, and Y[18] was written. The
  // debug mode reports the subscript as written; without it the store is skipped.
  wide.set_int(5, (int64_t(1) << 32) + 18);
  ref::HostBuffer y(DType::F32, {R}), z(DType::F32, {R}), w(DType::F32, {R});
  for (auto* b : {&y, &z, &w}) b->poison();
  RuntimeOptions options;
  options.debug_bounds = true;
  Device debug(options);
  std::string e;
  try {
    run_gpu(debug, "wide_subscripts", {}, {&x, &wide, &y, &z, &w});
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("index 4294967314 is out of bounds for dimension 0 ('R') of 'Y' of size 37"),
            std::string::npos)
      << e;
  ref::HostBuffer y2(DType::F32, {R});
  y2.poison();
  run_gpu(plain_device(), "wide_subscripts", {}, {&x, &wide, &y2, &z, &w});
  // Y[18] is written only by the rows whose subscript really is 18.
  bool written = false;
  for (int64_t r = 0; r < R; ++r) written = written || (r != 5 && wide.get_int(r) == 18);
  ref::HostBuffer untouched(DType::F32, {R});
  untouched.poison();
  const double got = y2.get(18), want = untouched.get(18);
  if (!written) {
    EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << got;
  }
}

TEST(GpuSemantics, ZippedGathers) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  for (const Bindings& cfg : std::vector<Bindings>{{}, {{"BR", "32"}, {"BD", "64"}}})
    for (int64_t D : {70, 64}) // rows of 16-byte vectors, and rows that are not
      check_against_interpreter("zip_gather", cfg,
                                {random_buffer(DType::F32, {6, 5, D}, rng, -2, 2),
                                 random_buffer(DType::I32, {33}, rng, 0, 5),
                                 random_buffer(DType::I32, {33}, rng, 0, 4),
                                 ref::HostBuffer(DType::F32, {33, D})},
                                {3}, 0);
}

TEST(GpuSemantics, BroadcastDimensionsGivenOneOrTheFullSize) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const int64_t B = 3, H = 5, N = 150;
  for (const char* bs : {"16", "32"}) {
    const int64_t NB = (N + std::stoi(bs) - 1) / std::stoi(bs);
    for (auto [mb, mh] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {B, 1}, {1, H}, {B, H}})
      for (int64_t nbias : {int64_t(1), B})
        check_against_interpreter("broadcast_dims", {{"BS", bs}},
                                  {random_buffer(DType::F32, {B, H, N}, rng, -2, 2),
                                   random_buffer(DType::U8, {mb, mh, NB}, rng, 0, 1),
                                   random_buffer(DType::F32, {nbias}, rng, -1, 1),
                                   ref::HostBuffer(DType::F32, {B, H, N})},
                                  {3}, 1e-6);
  }
}

TEST(GpuSemantics, ClusterSumAddsThePartsOfEveryProgramOfTheCluster) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  for (const char* split : {"1", "2", "4", "8"})
    for (const char* br : {"16", "32"})
      for (int64_t C : {1001, 5}) // 5: some programs' slices are empty
        check_against_interpreter("cluster_rowsum", {{"SPLIT", split}, {"BR", br}},
                                  {random_buffer(DType::F32, {37, C}, rng, -2, 2),
                                   ref::HostBuffer(DType::F32, {37}),
                                   ref::HostBuffer(DType::I32, {37})},
                                  {1, 2}, 1e-6);
}

TEST(GpuSemantics, PackedConversionsMatchTheInterpreterExactly) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const int64_t R = 13;
  for (const char* t : {"f16", "bf16", "f32"})
    for (const char* br : {"4", "8"}) {
      const DType T = *parse_dtype(t);
      check_against_interpreter(
          "packed_casts", {{"T", t}, {"BR", br}},
          {random_buffer(DType::I32, {R, 8}, rng, -2147483648.0, 2147483647.0),
           random_buffer(DType::I32, {R}, rng, 0, 100),
           random_buffer(DType::I8, {R, 64}, rng, -128, 127),
           random_buffer(DType::U8, {R, 64}, rng, 0, 255), ref::HostBuffer(T, {R, 64}),
           ref::HostBuffer(T, {R, 64}), ref::HostBuffer(T, {R, 64}), ref::HostBuffer(T, {R, 64})},
          {4, 5, 6, 7}, 0);
    }
}

// Both orders of 4-bit fields, unpacked alone and straight into tensor-core fragments with B
// read either way round: exactly the interpreter's values, and its sums to f32 rounding.
TEST(GpuSemantics, Unpack4InterleavedAndIntoDot) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  for (const char* il : {"0", "1"})
    for (const auto& [warps, R] :
         std::vector<std::pair<const char*, int64_t>>{{"4", 64}, {"4", 50}, {"3", 48}, {"3", 41}})
      for (int64_t C : {8, 5}) {
        std::vector<ref::HostBuffer> bufs = {
            random_buffer(DType::I32, {R, 16}, rng, -2147483648.0, 2147483647.0),
            random_buffer(DType::I32, {R}, rng, 0, 100),
            random_buffer(DType::F16, {C, 128}, rng, -1, 1),
            random_buffer(DType::F16, {128, C}, rng, -1, 1),
            ref::HostBuffer(DType::F16, {R, 128}),
            ref::HostBuffer(DType::F32, {R, C}),
            ref::HostBuffer(DType::F32, {R, C})};
        check_against_interpreter("q4_dot", {{"IL", il}, {"WARPS", warps}}, bufs, {4}, 0);
        check_against_interpreter("q4_dot", {{"IL", il}, {"WARPS", warps}}, std::move(bufs), {5, 6},
                                  1e-6);
      }
}

// Dot epilogues: dots added to the variable they are assigned to (accumulated into it in place),
// and an accumulator whose rows do not fill its warps scaled by a shared vector (its padded
// rows must read inside the tile). Kernel, K and N of A [R, K] @ B [K, N], scale S [R].
TEST(GpuSemantics, DotsAccumulatingInPlaceAndPaddedRows) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  struct Case {
    const char* kernel;
    int64_t k, n;
    std::vector<int64_t> rows;
  };
  for (const Case& c :
       {Case{"dot_accumulate", 32, 64, {64, 37}}, Case{"padded_rows", 64, 8, {96, 90}}})
    for (int64_t R : c.rows)
      check_against_interpreter(c.kernel, {},
                                {random_buffer(DType::F16, {R, c.k}, rng, -1, 1),
                                 random_buffer(DType::F16, {c.k, c.n}, rng, -1, 1),
                                 random_buffer(DType::F32, {R}, rng, -2, 2),
                                 ref::HostBuffer(DType::F32, {R, c.n})},
                                {3}, 1e-6);
}

// solve_tril on the GPU (tj/tril.cuh: blocks of 16 with the block products on the TF32 tensor
// cores in 3xTF32, or row by row) against the interpreter's f32 substitution: every C the DSL
// kernels use and two the blocked form does not take (24) or takes at its largest (128), one
// warp to eight, an odd count of matrices. Entries like gated_delta's (|A| < 1, decaying away
// from the diagonal) so that the inverse stays of moderate size; the diagonal and upper part
// are large noise the solve must not read.
TEST(GpuSemantics, SolveTrilMatchesTheInterpreter) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  struct Case {
    int64_t c, warps;
  };
  for (const Case& cs : {Case{16, 1}, Case{24, 2}, Case{32, 4}, Case{48, 2}, Case{64, 1},
                         Case{64, 4}, Case{64, 8}, Case{128, 8}}) {
    const int64_t n = 7, c = cs.c;
    ref::HostBuffer a(DType::F32, {n, c, c});
    for (int64_t m = 0; m < n; ++m)
      for (int64_t i = 0; i < c; ++i)
        for (int64_t j = 0; j < c; ++j)
          a.set((m * c + i) * c + j,
                j < i ? u(rng) * 0.9 * std::pow(0.97, static_cast<double>(i - j)) : 50 * u(rng));
    check_against_interpreter("tril_inverse",
                              {{"C", std::to_string(c)}, {"WARPS", std::to_string(cs.warps)}},
                              {a, ref::HostBuffer(DType::F32, {n, c, c})}, {1}, 1e-5);
  }
}

TEST(GpuSemantics, UnitAxisTilesBroadcast) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  for (const Bindings& cfg : std::vector<Bindings>{{},
                                                   {{"BR", "1"}, {"BC", "32"}, {"WARPS", "1"}},
                                                   {{"BR", "2"}, {"BC", "128"}, {"WARPS", "4"}},
                                                   {{"BR", "16"}, {"BC", "128"}, {"WARPS", "1"}}})
    for (int64_t C : {29, 100}) {
      int64_t R = 37;
      check_against_interpreter("unit_axis", cfg,
                                {random_buffer(DType::F32, {R, C}, rng, -2, 2),
                                 ref::HostBuffer(DType::F32, {R, C}),
                                 ref::HostBuffer(DType::F32, {R, C})},
                                {1, 2}, 1e-6);
    }
  // s[:, None] of a row sum added, stored and reduced: once per row (BC times before).
  for (const char* br : {"1", "2", "16"})
    for (const char* bc : {"16", "32"})
      check_against_interpreter("unit_axis_sums", {{"BR", br}, {"BC", bc}},
                                {random_buffer(DType::F32, {37, 21}, rng, -2, 2),
                                 random_buffer(DType::F32, {37, 4}, rng, -2, 2),
                                 ref::HostBuffer(DType::F32, {37})},
                                {1, 2}, 1e-6, {1});
  for (const char* br : {"1", "4", "16"})
    check_against_interpreter(
        "unit_corner", {{"BR", br}},
        {random_buffer(DType::F32, {23, 30}, rng, -2, 2), ref::HostBuffer(DType::F32, {23, 30})},
        {1}, 1e-6);
  for (const Bindings& cfg : std::vector<Bindings>{{}, {{"BM", "64"}, {"BC", "64"}}})
    check_against_interpreter("unit_dot", cfg,
                              {random_buffer(DType::F16, {45, 16}, rng, -1, 1),
                               random_buffer(DType::F16, {16, 1}, rng, -1, 1),
                               random_buffer(DType::F32, {45, 30}, rng, -2, 2),
                               ref::HostBuffer(DType::F32, {45, 30})},
                              {3}, 1e-5);
}

// ---- the debug mode -------------------------------------------------------------------------
/// "semantics.tile:N:" for the line of kFile holding `text` (the file grows; its line numbers
/// are not written into the tests).
std::string file_line_of(const std::string& text) {
  std::ifstream in(kFile);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return str("semantics.tile:", n, ":");
  ADD_FAILURE() << "no line of " << kFile << " holds " << text;
  return "(not found)";
}

std::string launch_error(Device& device, ref::HostBuffer& idx) {
  ref::HostBuffer x(DType::F32, {9}), y(DType::F32, {12});
  for (int64_t k = 0; k < 9; ++k) x.set(k, 10 + k);
  try {
    run_gpu(device, "point_index", {}, {&x, &idx, &y});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GpuSemantics, DebugModeReportsTheFirstOutOfRangeSubscript) {
  REQUIRE_GPU();
  RuntimeOptions options;
  options.debug_bounds = true;
  Device debug(options);
  ref::HostBuffer idx(DType::I32, {12});
  for (int64_t k = 0; k < 12; ++k) idx.set_int(k, k % 9);
  // In range: no error, and the results of a launch without checks.
  EXPECT_EQ(launch_error(debug, idx), "(no error)");
  check_against_interpreter(
      "point_index", {}, {ref::HostBuffer(DType::F32, {9}), idx, ref::HostBuffer(DType::F32, {12})},
      {2}, 0);

  // A gathered index out of range at an unmasked element.
  idx.set_int(3, -2);
  std::string e = launch_error(debug, idx);
  EXPECT_NE(e.find(file_line_of("frag g = load(X[i], mask = iota(16) < M - 1);")),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("runtime error in kernel point_index, program (0,0,0): gathered index -2 is "
                   "out of bounds for dimension 0 ('N') of 'X' of size 9 (TILEJIT_DEBUG bounds "
                   "check)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("frag g = load(X[i], mask = iota(16) < M - 1);"), std::string::npos) << e;
  // Without the debug mode the same launch runs (the element is skipped).
  EXPECT_EQ(launch_error(plain_device(), idx), "(no error)");

  // The record is cleared after a report: a correct launch of the same shape is fine again.
  idx.set_int(3, 3);
  EXPECT_EQ(launch_error(debug, idx), "(no error)");

  // idx[M - 1] = 9: the masked loads of it are fine, the unguarded point is reported.
  idx.set_int(11, 9);
  e = launch_error(debug, idx);
  EXPECT_NE(e.find(file_line_of("store(Y[0], load(X[n]));")), std::string::npos) << e;
  EXPECT_NE(e.find("): index 9 is out of bounds for dimension 0 ('N') of 'X' of size 9"),
            std::string::npos)
      << e;
  EXPECT_EQ(launch_error(plain_device(), idx), "(no error)");
}

TEST(GpuSemantics, DebugModeFromTheEnvironment) {
  REQUIRE_GPU();
  const char* saved = std::getenv("TILEJIT_DEBUG");
  std::string saved_value = saved ? saved : "";
  ::setenv("TILEJIT_DEBUG", "1", 1);
  Device from_env;
  if (saved)
    ::setenv("TILEJIT_DEBUG", saved_value.c_str(), 1);
  else
    ::unsetenv("TILEJIT_DEBUG");
  ref::HostBuffer idx(DType::I32, {12});
  for (int64_t k = 0; k < 12; ++k) idx.set_int(k, k % 9);
  idx.set_int(11, -1);
  std::string e = launch_error(from_env, idx);
  EXPECT_NE(e.find("index -1 is out of bounds for dimension 0 ('N') of 'X'"), std::string::npos)
      << e;
}

// The example kernels in the debug mode: nothing is out of range, the results are unchanged.
TEST(GpuSemantics, ExamplesAreCleanInTheDebugMode) {
  REQUIRE_GPU();
  RuntimeOptions options;
  options.debug_bounds = true;
  GpuRunner runner(options);
  KernelRunner run = runner.runner();
  check_gemm(run, DType::F16, 37, 45, 64, gemm_configs().front());
  check_softmax(run, DType::F32, 37, 1000, softmax_configs().front(), 1e-5);
  check_cumsum(run, DType::F16, 33, 257, cumsum_configs().front(), 1e-2);
  check_bucket_scan(run, 77, 33, {{"BB", "64"}});
}

// paged_sparse in the debug mode: every subscript of the workload's kernel is in range on a
// ragged problem (kept_len 0 and 1 included), so the checks report nothing and the results are
// those of the plain kernel.
TEST(GpuSemantics, PagedSparseIsCleanInTheDebugMode) {
  REQUIRE_GPU();
  RuntimeOptions options;
  options.debug_bounds = true;
  GpuRunner runner(options);
  KernelRunner run = runner.runner();
  PagedSparseShape s;
  s.dtype = DType::F16;
  s.head_dim = 128;
  s.page_size = 16;
  s.seq_lens = {5003, 77, 1999};
  std::vector<int64_t> kept;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t h = 0; h < 8; ++h)
      kept.push_back(std::min<int64_t>(s.seq_lens[b], 13 + 211 * h + 7 * b));
  kept[0] = 0;
  kept[9] = 1;
  s.kept_lens = kept;
  auto d = make_paged_sparse_data(s, fresh_seed());
  for (const Bindings& cfg : std::vector<Bindings>{
           {}, {{"CHUNK", "64"}, {"BN", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"PF", "2"}}})
    check_paged_sparse(run, *d, cfg);
}

} // namespace
} // namespace tilejit::test
