// Hostile and careless input to the front end (issue 13), each once a crash, a hang, gigabytes
// of memory or silently wrong code: now a clear error, quickly, with bounded output.
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "dsl/diagnostics.h"
#include "dsl/lexer.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

namespace tilejit {
namespace {

/// The error `f` throws (a tilejit::Error, CompileError included), or "" when it throws none.
template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tilejit-hostile-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(HostileInput, DirectoriesDevicesAndHugeFilesAreRefusedBeforeReading) {
  std::string e = error_of([] { load_tile_file("/tmp"); });
  EXPECT_NE(e.find("'/tmp' is a directory, not a .tile file"), std::string::npos) << e;
  auto start = std::chrono::steady_clock::now();
  e = error_of([] { load_tile_file("/dev/zero"); }); // never ends when read
  EXPECT_NE(e.find("is not a regular file"), std::string::npos) << e;
  EXPECT_LT(seconds_since(start), 1.0);
  const std::string big = temp_path("big.tile");
  {
    std::ofstream out(big);
    out << std::string(dsl::kMaxTileFileBytes + 1, ' ');
  }
  e = error_of([&] { load_tile_file(big); });
  std::filesystem::remove(big);
  EXPECT_NE(e.find("a .tile file may have at most 1048576 bytes (1 MiB)"), std::string::npos) << e;
  e = error_of([] { load_tile_file("/no/such/file.tile"); });
  EXPECT_NE(e.find("cannot read '/no/such/file.tile'"), std::string::npos) << e;
}

TEST(HostileInput, BinaryDataIsOneErrorQuickly) {
  std::mt19937 rng(12345);
  std::string bytes(1 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  auto start = std::chrono::steady_clock::now();
  std::string e = error_of([&] { load_tile_text("random.bin", bytes); });
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_NE(e.find("this looks like binary data, not a .tile program"), std::string::npos) << e;
  EXPECT_LT(e.size(), 100000u); // at most 20 errors, each with a window of its line
  EXPECT_EQ(e.find('\0'), std::string::npos);
}

TEST(HostileInput, ANulByteIsNamedAndTheLineShownWithoutIt) {
  std::string text = "kernel k(x: f32[N]) grid (1) {\n  let a = 1;";
  text += '\0';
  text += " let b = 2;\n}\n";
  std::string e = error_of([&] { load_tile_text("nul.tile", text); });
  EXPECT_NE(e.find("nul.tile:2:13: error: a NUL byte"), std::string::npos) << e;
  EXPECT_EQ(e.find('\0'), std::string::npos);
  EXPECT_NE(e.find("  let a = 1;? let b = 2;\n              ^"), std::string::npos) << e;
}

TEST(HostileInput, ThousandsOfErrorsOnOneLongLineAreCappedAndQuick) {
  // 20,000 statements with an unknown name on one 200 KB line: every one an error.
  std::string line = " ";
  for (int i = 0; i < 20000; ++i) line += " let a" + std::to_string(i) + " = y;";
  const std::string text = "kernel k(x: f32[N]) grid (1) {\n" + line + "\n}\n";
  auto start = std::chrono::steady_clock::now();
  std::string e = error_of([&] { load_tile_text("many.tile", text); });
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_NE(e.find("unknown name 'y'"), std::string::npos) << e.substr(0, 500);
  EXPECT_NE(e.find("more diagnostic(s) not shown"), std::string::npos) << e.substr(e.size() - 300);
  // 50 diagnostics, each with a window of the line: well under a megabyte.
  EXPECT_LT(e.size(), 200000u);
}

TEST(HostileInput, ChoiceRangesAtTheEndOfInt64) {
  LoadedModule m = load_tile_text(
      "range.tile",
      "kernel k<G: 9223372036854775800..9223372036854775807>(x: f32[N]) grid (1) { }\n");
  ASSERT_EQ(m.kernel().generics.size(), 1u);
  EXPECT_EQ(m.kernel().generics[0].choice.ints.size(), 8u);
  EXPECT_EQ(m.kernel().generics[0].choice.ints.back(), INT64_MAX);
  std::string e = error_of([] {
    load_tile_text("span.tile", "kernel k<G: -9223372036854775807..9223372036854775807>(x: f32[N]) "
                                "grid (1) { }\n");
  });
  EXPECT_NE(e.find("has more than 4096 values"), std::string::npos) << e;
}

TEST(HostileInput, TooManyParametersForTheTarget) {
  std::string params;
  for (int i = 0; i < 5000; ++i)
    params += (i ? ", t" : "t") + std::to_string(i) + ": f32[N" + std::to_string(i) + "]";
  LoadedModule m = load_tile_text("params.tile", "kernel k(" + params + ") grid (1) { }\n");
  std::string e = error_of([&] { lower_to_ir(m.kernel(), complete_bindings(m.kernel(), {}), {}); });
  EXPECT_NE(e.find("kernel 'k' takes 5000 parameters in"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("may take at most 32764 bytes of parameters"), std::string::npos)
      << e.substr(0, 300);
}

} // namespace
} // namespace tilejit
