// Lowering (compiler/specialise.cpp and the passes after it) on the deepest input the parser
// accepts: chains of `else if`, subscripts and operators up to its nesting limit (200 levels)
// must lower and run without exhausting the stack.
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "compiler/ref/run_tile.h"

#include <gtest/gtest.h>

#include <string>

namespace tilejit {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Specialise, ChainsAtTheParsersDepthLimitLowerAndRun) {
  // 190 runtime `else if`s (each a level), a 190-link subscript chain and a 190-term sum.
  std::string text = "kernel k(X: i32[8], Y: i32[8]) grid (1) {\n"
                     "  let n = load(X[0]);\n"
                     "  frag t = load(X[0 : 8])" +
                     repeat("[:]", 190) +
                     ";\n"
                     "  let s = 0" +
                     repeat(" + 1", 190) + ";\n  " +
                     repeat("if n == 1 { store(Y[1], 1); } else ", 190) +
                     "{ store(Y[0 : 8], t + s); }\n}\n";
  LoadedModule m = load_tile_text("deep.tile", text);
  EXPECT_NO_THROW(lower_to_ir(m.kernel(), {}, CompileOptions{}));
  ref::HostBuffer x(DType::I32, {8}), y(DType::I32, {8});
  for (int k = 0; k < 8; ++k) x.set_int(k, 10 + k);
  ref::run_tile(m.kernel(), {}, {x.arg(), y.arg()});
  for (int k = 0; k < 8; ++k) EXPECT_EQ(y.get_int(k), 10 + k + 190);
}

} // namespace
} // namespace tilejit
