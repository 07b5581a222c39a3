// Pipelined loops on the interpreter, on the IR of every pass from infer-types on: after
// expand-pipelines the interpreter runs the ring buffers' slots, the prologue and the
// producers that run ahead, so a wrong slot, a wrong direction or a producer that skips a
// block shows up as a wrong result. Loops that count down, copies under `if`, and a copy the
// body does itself; odd sizes (rows not a multiple of the 16-row blocks, columns of no tile).
#include "pipeline_checks.h"

#include "compiler/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tilejit::test {
namespace {

/// The passes whose IR the interpreter can run (infer-types and after).
std::vector<std::string> runnable_passes() {
  const auto& all = pass_names();
  auto first = std::find(all.begin(), all.end(), "infer-types");
  return {first, all.end()};
}

TEST(RefPipelines, CountingDown) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    for (const char* stages : {"2", "3", "4"}) {
      check_reverse_blocks(run, 77, 100, {{"STAGES", stages}, {"BC", "32"}});
      check_reverse_blocks(run, 16, 64, {{"STAGES", stages}});
      check_reverse_blocks(run, 5, 33, {{"STAGES", stages}}); // fewer blocks than stages
    }
  }
}

TEST(RefPipelines, CopiesUnderIf) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    for (const char* stages : {"2", "3"}) {
      check_kept_blocks(run, 200, 70, 0.5, {{"STAGES", stages}});
      check_kept_blocks(run, 77, 64, 1.0, {{"STAGES", stages}, {"BC", "32"}});
      check_kept_blocks(run, 77, 64, 0.0, {{"STAGES", stages}});
    }
  }
}

// A list of block indices: the body's loaded index read an iteration ahead (expand-pipelines),
// indices outside the rows, an empty list, a count past the list's end.
TEST(RefPipelines, ListedBlocks) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    for (const char* stages : {"2", "3"}) {
      check_listed_blocks(run, 77, 70, 9, 9, {{"STAGES", stages}});
      check_listed_blocks(run, 200, 64, 5, 7, {{"STAGES", stages}, {"BC", "32"}});
      check_listed_blocks(run, 40, 33, 4, 0, {{"STAGES", stages}});
      check_listed_blocks(run, 40, 33, 4, 1, {{"STAGES", stages}});
    }
  }
}

// A persistent kernel's tiles taken in turn from a list, each with copies before its pipelined
// loop (the producer warps' on Hopper; here, with no TMA, the threads'): repeated entries and
// tiles never named, a loop with no iteration (N <= BN), more programs than entries.
TEST(RefPipelines, TilesInTurn) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    check_tiles_in_turn(run, 150, 4, 5, {{"STAGES", "2"}, {"PROGRAMS", "3"}});
    check_tiles_in_turn(run, 50, 3, 2, {{"STAGES", "3"}, {"PROGRAMS", "3"}});
  }
}

// copy(..., reuse = 1) changes nothing in the results (the interpreter copies every time).
TEST(RefPipelines, ReusedRows) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    check_reused_rows(run, 100, 90, 9, {{"STAGES", "2"}});
    check_reused_rows(run, 64, 64, 3, {{"STAGES", "3"}});
  }
}

TEST(RefPipelines, ACopyTheBodyDoesItself) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    KernelRunner run = interpreter_runner(pass);
    for (const char* stages : {"2", "3"}) {
      check_trailing_copy(run, 77, 100, {{"STAGES", stages}});
      check_trailing_copy(run, 16, 64, {{"STAGES", stages}});
    }
  }
}

TEST(RefSharedReuse, TwoPhases) {
  for (const std::string& pass : runnable_passes()) {
    SCOPED_TRACE("after " + pass);
    check_two_phases(interpreter_runner(pass), 100);
    check_two_phases(interpreter_runner(pass), 128);
  }
}

} // namespace
} // namespace tilejit::test
