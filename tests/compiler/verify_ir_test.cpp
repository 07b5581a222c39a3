// The IR verifier: the shipped pipeline passes it (every CPU test compiles with it on), and IR
// broken on purpose — a barrier removed, two live tiles at one offset, a register tile without
// a layout, a shape that does not match — is caught, naming the pass and the statement.
#include "compiler/ir.h"
#include "compiler/ir_reader.h"
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "compiler/verify_ir.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

std::unique_ptr<ir::Kernel> lower(const std::string& tile, const Bindings& given,
                                  const std::string& after) {
  LoadedModule m = load_tile_file(std::string(TILEJIT_SOURCE_DIR) + "/" + tile);
  CompileOptions o;
  for (const auto& p : m.kernel().params) o.vector_aligned.insert(p.name);
  return lower_to_ir(m.kernel(), complete_bindings(m.kernel(), given), o, after);
}

/// The verifier's message for `k` after `pass`, or "" when it passes.
std::string verify_error(ir::Kernel& k, const std::string& pass) {
  try {
    verify_ir(k, pass);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(VerifyIr, IsOnInTestBuilds) {
  EXPECT_TRUE(verify_ir_enabled());
}

TEST(VerifyIr, TheShippedPipelinePasses) {
  for (const auto& pass : pass_names()) {
    auto k = lower("kernels_src/examples/gemm.tile", {{"T", "f16"}}, pass);
    EXPECT_EQ(verify_error(*k, pass), "") << pass;
  }
}

TEST(VerifyIr, CatchesARemovedBarrier) {
  // shared_reuse: tile b takes a's storage once a is dead; barriers order a's reads before b's
  // write, and b's write before its read.
  auto k = lower("tests/data/shared_reuse.tile", {}, "insert-barriers");
  ASSERT_EQ(verify_error(*k, "insert-barriers"), "");
  bool removed = false;
  for (size_t i = 0; i < k->body.size() && !removed; ++i)
    if (k->body[i]->kind == ir::StmtKind::Barrier) {
      k->body.erase(k->body.begin() + static_cast<long>(i));
      removed = true;
    }
  ASSERT_TRUE(removed);
  std::string e = verify_error(*k, "insert-barriers");
  EXPECT_NE(e.find("IR verifier after pass 'insert-barriers'"), std::string::npos) << e;
  EXPECT_NE(e.find("no barrier before a shared-memory hazard"), std::string::npos) << e;
  EXPECT_NE(e.find("in: "), std::string::npos) << e; // the statement
  EXPECT_NE(e.find("shared_reuse.tile:"), std::string::npos) << e;
}

TEST(VerifyIr, CatchesOverlappingSharedTiles) {
  // gemm's a and b ring buffers are live together: they must not share bytes.
  auto k = lower("kernels_src/examples/gemm.tile", {{"T", "f16"}}, "plan-shared-memory");
  ASSERT_EQ(verify_error(*k, "plan-shared-memory"), "");
  ir::Var *a = nullptr, *b = nullptr;
  for (auto& v : k->vars)
    if (v->type.space == ir::Space::Shared) (a ? b : a) = v.get();
  ASSERT_TRUE(a && b);
  b->smem_offset = a->smem_offset;
  std::string e = verify_error(*k, "plan-shared-memory");
  EXPECT_NE(e.find("share bytes but may be live at once"), std::string::npos) << e;
  // Outside the block's bytes.
  b->smem_offset = k->smem_bytes;
  e = verify_error(*k, "plan-shared-memory");
  EXPECT_NE(e.find("is outside the tiles' area"), std::string::npos) << e;
}

TEST(VerifyIr, TilesWithDisjointLifetimesMayShare) {
  auto k = lower("tests/data/shared_reuse.tile", {}, "plan-shared-memory");
  int64_t first = -1;
  int sharing = 0;
  for (auto& v : k->vars)
    if (v->type.space == ir::Space::Shared) {
      if (first < 0) first = v->smem_offset;
      sharing += v->smem_offset == first;
    }
  EXPECT_GE(sharing, 2); // the plan reuses storage here, and the verifier accepts it
  EXPECT_EQ(verify_error(*k, "plan-shared-memory"), "");
}

TEST(VerifyIr, CatchesAMissingLayoutAndABadShape) {
  auto k = lower("kernels_src/examples/gemm.tile", {{"T", "f16"}}, "assign-layouts");
  ir::Var* acc = nullptr;
  for (auto& v : k->vars)
    if (v->name == "acc") acc = v.get();
  ASSERT_TRUE(acc);
  const ir::Layout* saved = acc->layout;
  acc->layout = nullptr;
  std::string e = verify_error(*k, "assign-layouts");
  EXPECT_NE(e.find("variable 'acc' (frag f32[64, 64]) has no layout"), std::string::npos) << e;
  // Before assign-layouts, no layout is needed.
  EXPECT_EQ(verify_error(*k, "infer-types"), "");
  acc->layout = saved;
  acc->type.shape = {64, 32};
  e = verify_error(*k, "infer-types");
  EXPECT_NE(e.find("IR verifier after pass 'infer-types'"), std::string::npos) << e;
}

TEST(VerifyIr, CatchesHandWrittenIrThatBreaksAnInvariant) {
  // Read back from text: a barrier-free read after a write of a shared tile.
  const std::string text =
      "// after insert-barriers\n"
      "kernel k\n"
      "  threads 128, shared memory 16640 bytes, scratch 0 bytes, limit "
      "232448 bytes, grid rank 1, target sm_90a, source \"k.tile\"\n"
      "  param x: f32[N, 64] aligned16\n"
      "  param y: f32[N, 64] aligned16\n"
      "  shared f32[16, 64] t @smem[0] row_stride=68 = load(x[0 :+ 16, 0 :+ 64])\n"
      "  store y[0 :+ 16, 0 :+ 64] <- t[0 :+ 16]\n";
  auto k = ir::read_kernel("k.ir", text);
  std::string e = verify_error(*k, "insert-barriers");
  EXPECT_NE(e.find("no barrier before a shared-memory hazard ('t' was written)"), std::string::npos)
      << e;
  EXPECT_EQ(verify_error(*k, "plan-shared-memory"), "");
}

} // namespace
} // namespace tilejit

namespace tilejit {
namespace {

TEST(VerifyIr, CatchesAScratchUserWithoutAHalf) {
  auto k = lower("kernels_src/examples/cumsum.tile", {}, "place-scratch"); // a scan, a reduction
  ASSERT_EQ(verify_error(*k, "place-scratch"), "");
  ir::Expr* user = nullptr;
  ir::for_each_stmt(k->body, [&](ir::Stmt& s) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (!user && e.scratch_region >= 0) user = &e;
      });
    });
  });
  ASSERT_NE(user, nullptr);
  user->scratch_region = -1;
  std::string e = verify_error(*k, "place-scratch");
  EXPECT_NE(e.find("IR verifier after pass 'place-scratch'"), std::string::npos) << e;
  EXPECT_NE(e.find("has scratch half -1 (it exchanges values through the scratch area)"),
            std::string::npos)
      << e;
}

} // namespace
} // namespace tilejit
