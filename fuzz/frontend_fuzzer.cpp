// libFuzzer target for the front end and the compiler: .tile text through the lexer, parser,
// checker, specialise, every pass and the CUDA emitter, and reverse mode's derivation. Bad input
// may be reported (a tilejit::Error, CompileError and ConstraintError included); an internal error,
// a crash, a sanitizer report, a leak or a timeout is a finding. tools/fuzz.sh builds and runs it.
#include "compiler/autodiff/reverse_mode.h"
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "compiler/specialise.h"
#include "compiler/target.h"
#include "dsl/lexer.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilejit;
  if (size > dsl::kMaxTileFileBytes) return 0; // load_tile_file refuses these unread
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    LoadedModule m = load_tile_text("fuzz.tile", text);
    for (const auto& k : m.module->kernels) {
      try {
        Bindings b = complete_bindings(*k, {});
        CompileOptions o;
        o.arch = "sm_90a";
        auto ir = lower_to_ir(*k, b, o);
        (void)ir->target->emit(*ir);
      } catch (const Error&) {
        // a diagnostic or a configuration that cannot exist: the next kernel
      }
      // Reverse mode on the same kernel: its derived text must parse and check, or be refused
      // with a diagnostic (never an internal error).
      try {
        autodiff::GradientKernel g = autodiff::derive_gradient(*k);
        (void)load_tile_text("grad:fuzz.tile", g.source);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
    // a diagnostic: what bad input should get
  }
  return 0;
}
