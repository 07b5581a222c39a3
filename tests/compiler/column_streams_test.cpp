// Which accesses the CUDA backend stages as column streams (compiler/cuda/cuda_column_streams.h)
// and the window buffers' swizzle: every (row, column) of a window has its own element, and the
// 32 rows a warp reads at one step fall in 32 different banks.
#include "compiler/cuda/cuda_column_streams.h"
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <set>
#include <string>
#include <vector>

namespace tilejit {
namespace {

using cuda::ColumnStream;
using cuda::StagedLoop;

std::unique_ptr<ir::Kernel> lowered(const std::string& path, const std::string& name,
                                    const Bindings& b) {
  static std::vector<LoadedModule> keep; // the IR points into the AST's source locations
  keep.push_back(load_tile_file(path));
  CompileOptions o;
  o.index32 = true;
  return lower_to_ir(keep.back().kernel(name), b, o);
}

/// The staged loops in body order, as "NAME:kind ..." per loop, with the window size.
std::vector<std::string> describe(const ir::Kernel& k,
                                  const std::map<const ir::Stmt*, StagedLoop>& plan) {
  std::vector<std::string> out;
  ir::for_each_stmt(const_cast<ir::Block&>(k.body), [&](ir::Stmt& s) {
    auto it = plan.find(&s);
    if (it == plan.end()) return;
    std::string d = "TB=" + std::to_string(it->second.tb);
    for (const ColumnStream& cs : it->second.streams)
      d += " " + k.params[cs.access->param].name +
           (cs.kind == ColumnStream::Kind::Load    ? ":read"
            : cs.kind == ColumnStream::Kind::Store ? ":write"
                                                   : ":add") +
           (cs.dir > 0 ? "+" : "-");
    out.push_back(d);
  });
  return out;
}

const std::string kSemantics = TILEJIT_SOURCE_DIR "/tests/data/semantics.tile";

TEST(ColumnStreams, StagesTheColumnsOfSerialLoopsThatNothingElseTouches) {
  auto k = lowered(kSemantics, "column_streams", {{"BR", "64"}, {"WARPS", "2"}});
  auto plan = cuda::plan_column_streams(*k, 48 * 1024);
  // Y is written by the first loop and read by the second: staged in neither.
  EXPECT_EQ(describe(*k, plan),
            (std::vector<std::string>{"TB=16 X:read+ W:read+ L:read+ Z:write+",
                                      "TB=16 W:read- A:add- A:add-", "TB=16 X:read- V:write-"}));
}

TEST(ColumnStreams, NarrowerWindowsWhenSharedMemoryIsShortAndNoneBelowFour) {
  auto k = lowered(kSemantics, "column_streams", {{"BR", "128"}, {"WARPS", "4"}});
  // The first loop's four streams need 2 x 128 rows x TB x (4 + 4 + 8 + 4) bytes.
  EXPECT_EQ(describe(*k, cuda::plan_column_streams(*k, 48 * 1024))[0],
            "TB=8 X:read+ W:read+ L:read+ Z:write+");
  EXPECT_EQ(describe(*k, cuda::plan_column_streams(*k, 30 * 1024))[0],
            "TB=4 X:read+ W:read+ L:read+ Z:write+");
  EXPECT_TRUE(cuda::plan_column_streams(*k, 1024).empty());
}

TEST(ColumnStreams, KernelsWithTheirOwnCopyPipelinesAreLeftAlone) {
  LoadedModule m = load_embedded_tile("workloads/paged_sparse.tile");
  CompileOptions o;
  o.index32 = true;
  auto k = lower_to_ir(m.kernel(),
                       {{"T", "f16"},
                        {"D", "128"},
                        {"G", "4"},
                        {"PS", "16"},
                        {"CHUNK", "256"},
                        {"BN", "32"},
                        {"STAGES", "2"},
                        {"WARPS", "4"},
                        {"PF", "4"}},
                       o);
  EXPECT_TRUE(cuda::plan_column_streams(*k, 48 * 1024).empty());
}

// A derived backward recomputes whole steps, a load into a value nothing reads included (hbv's
// used to reload the next day's forcings that way). Such a load is not staged (the C++ compiler
// drops it); the loads that are read and the column written are.
TEST(ColumnStreams, LoadsNothingReadsAreNotStaged) {
  static std::vector<LoadedModule> keep;
  keep.push_back(load_tile_text("dead_load.tile", R"(
kernel dead_load(X: f32[R, T], U: f32[R, T], Y: f32[R, T])
  grid (cdiv(R, 32))
  threads 32
{
  let r0 = program_id(0) * 32;
  frag s: f32[32] = 0.0;
  for t in serial(0, T) {
    frag unused = load(U[r0 : r0 + 32, t]);
    s = 0.5 * s + load(X[r0 : r0 + 32, t]);
    store(Y[r0 : r0 + 32, t], s);
  }
}
)"));
  CompileOptions o;
  o.index32 = true;
  auto k = lower_to_ir(keep.back().kernel("dead_load"), {}, o);
  EXPECT_EQ(describe(*k, cuda::plan_column_streams(*k, 48 * 1024)),
            (std::vector<std::string>{"TB=16 X:read+ Y:write+"}));
}

TEST(ColumnStreams, WindowElementsAreDistinctAndAWarpsRowsHitEveryBank) {
  for (int tb : {4, 8, 16}) {
    const int rows = 256;
    std::set<int64_t> seen;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < tb; ++k) {
        const int64_t i = cuda::column_stream_index(tb, r, k);
        EXPECT_GE(i, 0);
        EXPECT_LT(i, rows * tb);
        seen.insert(i);
      }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), rows * tb) << "TB " << tb;
    for (int64_t r0 = 0; r0 < rows; r0 += 32)
      for (int64_t k = 0; k < tb; ++k) {
        std::set<int64_t> banks;
        for (int64_t r = r0; r < r0 + 32; ++r)
          banks.insert(cuda::column_stream_index(tb, r, k) % 32);
        EXPECT_EQ(banks.size(), 32u) << "TB " << tb << " rows from " << r0 << " column " << k;
      }
  }
}

} // namespace
} // namespace tilejit
