// Expected-error tests: every tests/dsl/diagnostics/*.tile file holds cases separated by a line
// `// -----`. A case is run through parse, check and lower_to_ir (every pass) and must produce
// exactly the errors it marks:
//
//   // expected-error @+1 {{substring of the message}}    error on the next line
//   // expected-error {{...}}                             error on this line
//   // expected-error @-2 {{...}}                         two lines up
//   // expected-error @+1:7 {{...}}                       ... and at column 7
//   // expected-error @* {{...}}                          an error without a location
//                                                         (a failed `where`, shared memory)
//   // expected-warning @+1 {{...}}                       a warning that must be there
//   // set: T=f16,D=64                                    generics/tunables for lowering
//
// Unmarked errors fail the case; unmarked warnings are ignored. Line numbers are those of the
// whole file (each case is padded), so a failure names the line to open. Every located
// diagnostic must also render as `file:L:C: error: message`, the source line, and a caret.
#include "compiler/pipeline.h"
#include "compiler/specialise.h"
#include "dsl/checker.h"
#include "dsl/diagnostics.h"
#include "dsl/parser.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace tilejit {
namespace {

namespace fs = std::filesystem;

const char* const kDiagnosticsDir = TILEJIT_SOURCE_DIR "/tests/dsl/diagnostics";

struct Expectation {
  dsl::Severity severity = dsl::Severity::Error;
  int line = 0; ///< 0: no location (@*)
  int col = 0;  ///< 0: any column
  std::string text;
  int written_at = 0; ///< the line of the comment itself
};

struct Case {
  std::string file;   ///< path shown in diagnostics (relative to the source tree)
  std::string name;   ///< test name: <stem>_line<N>
  int first_line = 1; ///< of the case in the file
  std::string text;   ///< padded with blank lines so line numbers match the file
  Bindings set;       ///< from `// set:`
  std::vector<Expectation> expected;
  std::vector<std::string> format_errors; ///< malformed directives
};

/// Shown by GoogleTest for a failing case instead of the object's bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.file << ":" << c.first_line;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

/// Reads the directives of one line of a case into `c`.
void parse_directives(const std::string& line, int line_no, Case& c) {
  static const std::regex expect_re(
      R"(//\s*expected-(error|warning)\s*(@(\*|[+-]\d+)(:(\d+))?)?\s*\{\{(.*)\}\}\s*$)");
  static const std::regex set_re(R"(//\s*set:\s*(.*)$)");
  std::smatch m;
  size_t at = line.find("expected-");
  if (at != std::string::npos && line.find("//") != std::string::npos && line.find("//") < at) {
    std::string directive = line.substr(line.find("//"));
    if (!std::regex_search(directive, m, expect_re)) {
      c.format_errors.push_back("line " + std::to_string(line_no) +
                                ": malformed directive: " + trim(directive));
      return;
    }
    Expectation e;
    e.severity = m[1] == "error" ? dsl::Severity::Error : dsl::Severity::Warning;
    e.written_at = line_no;
    e.line = line_no;
    if (m[3].matched) e.line = m[3] == "*" ? 0 : line_no + std::stoi(m[3]);
    if (m[5].matched) e.col = std::stoi(m[5]);
    e.text = m[6];
    c.expected.push_back(e);
    return;
  }
  if (std::regex_search(line, m, set_re)) {
    std::stringstream ss(m[1].str());
    std::string item;
    while (std::getline(ss, item, ',')) {
      item = trim(item);
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        c.format_errors.push_back("line " + std::to_string(line_no) + ": bad set item '" + item +
                                  "'");
        continue;
      }
      c.set[trim(item.substr(0, eq))] = trim(item.substr(eq + 1));
    }
  }
}

std::vector<Case> split_file(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string rel = "tests/dsl/diagnostics/" + path.filename().string();
  std::vector<Case> cases;
  size_t start = 0;
  auto finish = [&](size_t end) { // lines [start, end)
    Case c;
    c.file = rel;
    c.first_line = static_cast<int>(start) + 1;
    c.name = path.stem().string() + "_line" + std::to_string(c.first_line);
    for (size_t i = 0; i < start; ++i) c.text += "\n";
    bool has_code = false;
    for (size_t i = start; i < end; ++i) {
      c.text += lines[i] + "\n";
      parse_directives(lines[i], static_cast<int>(i) + 1, c);
      std::string t = trim(lines[i]);
      if (!t.empty() && t.rfind("//", 0) != 0) has_code = true;
    }
    if (has_code || !c.expected.empty()) cases.push_back(std::move(c));
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]) == "// -----") {
      finish(i);
      start = i + 1;
    }
  }
  finish(lines.size());
  return cases;
}

std::vector<Case> all_cases() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDiagnosticsDir))
    if (entry.path().extension() == ".tile") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const auto& f : files)
    for (auto& c : split_file(f)) out.push_back(std::move(c));
  return out;
}

/// One diagnostic as the driver sees it: located ones from CompileError, unlocated ones from
/// other user errors (ConstraintError, binding errors).
struct Seen {
  dsl::Severity severity;
  int line = 0, col = 0;
  std::string message;
  std::string rendered;
  dsl::SourceLoc loc;
};

std::vector<Seen> from_compile_error(const dsl::CompileError& e) {
  std::vector<Seen> out;
  for (const auto& d : e.diagnostics())
    out.push_back({d.severity, d.loc.line, d.loc.col, d.message, d.render(), d.loc});
  return out;
}

/// Parse, check and lower every kernel of the case; what each stage reported.
std::vector<Seen> run_case(const Case& c) {
  std::vector<Seen> seen;
  std::unique_ptr<dsl::Module> m;
  try {
    m = dsl::parse_module(dsl::make_source(c.file, c.text));
    for (const auto& w : dsl::check_module(*m)) // the checker's warnings, when it finds no error
      seen.push_back({w.severity, w.loc.line, w.loc.col, w.message, w.render(), w.loc});
  } catch (const dsl::CompileError& e) {
    return from_compile_error(e);
  }
  for (const auto& k : m->kernels) {
    try {
      // The case's `set:` values that name this kernel's generics and tunables; generics
      // left out take their default, else their first choice (as `inspect` does).
      Bindings given;
      for (const auto& g : k->generics) {
        auto it = c.set.find(g.name);
        if (it != c.set.end())
          given[g.name] = it->second;
        else
          given[g.name] = g.choice.has_default
                              ? (g.choice.is_dtype ? g.choice.default_name
                                                   : std::to_string(g.choice.default_int))
                          : g.choice.is_dtype ? g.choice.names.front()
                                              : std::to_string(g.choice.ints.front());
      }
      for (const auto& t : k->tunables)
        if (c.set.count(t.name)) given[t.name] = c.set.at(t.name);
      Bindings b = complete_bindings(*k, given);
      lower_to_ir(*k, b, CompileOptions{});
    } catch (const dsl::CompileError& e) {
      for (auto& s : from_compile_error(e)) seen.push_back(std::move(s));
    } catch (const InternalError& e) {
      ADD_FAILURE() << c.file << ":" << c.first_line << ": internal error: " << e.what();
    } catch (const Error& e) { // ConstraintError and other user errors without a location
      seen.push_back({dsl::Severity::Error, 0, 0, e.what(), e.what(), {}});
    }
  }
  return seen;
}

/// The rendering contract: `file:L:C: severity: message`, the source line, a caret under C.
void check_rendering(const Case& c, const Seen& s) {
  if (!s.loc.known()) return;
  const char* sev = s.severity == dsl::Severity::Error     ? "error"
                    : s.severity == dsl::Severity::Warning ? "warning"
                                                           : "note";
  std::string head = c.file + ":" + std::to_string(s.line) + ":" + std::to_string(s.col) + ": " +
                     sev + ": " + s.message;
  std::vector<std::string> parts;
  std::stringstream ss(s.rendered);
  for (std::string l; std::getline(ss, l);) parts.push_back(l);
  ASSERT_GE(parts.size(), 1u);
  EXPECT_EQ(parts[0], head);
  std::string source_line(s.loc.file->line_text(s.line));
  if (source_line.empty()) return; // nothing to show (an empty line)
  ASSERT_EQ(parts.size(), 3u) << s.rendered;
  EXPECT_EQ(parts[1], "  " + source_line);
  // The caret sits under column C (or just past the end of the line, for end of input).
  size_t caret = parts[2].find('^');
  ASSERT_NE(caret, std::string::npos) << s.rendered;
  EXPECT_EQ(parts[2].size(), caret + 1) << s.rendered;
  size_t expected_col = std::min<size_t>(s.col, source_line.size() + 1);
  EXPECT_EQ(caret - 2 + 1, expected_col) << s.rendered;
  EXPECT_LE(s.col, static_cast<int>(source_line.size()) + 1)
      << "column past the end of the line: " << s.rendered;
}

class DiagnosticsFile : public ::testing::TestWithParam<Case> {};

TEST_P(DiagnosticsFile, ReportsExactlyTheExpectedErrors) {
  const Case& c = GetParam();
  for (const auto& f : c.format_errors) ADD_FAILURE() << c.file << ": " << f;
  ASSERT_FALSE(c.expected.empty())
      << c.file << ":" << c.first_line << ": a case must expect at least one diagnostic";
  std::vector<Seen> seen = run_case(c);
  std::vector<bool> used(seen.size(), false);
  std::string all;
  for (const auto& s : seen) all += "  " + s.rendered + "\n";
  for (const auto& e : c.expected) {
    bool found = false;
    for (size_t i = 0; i < seen.size() && !found; ++i) {
      const Seen& s = seen[i];
      if (used[i] || s.severity != e.severity || s.line != e.line) continue;
      if (e.col && s.col != e.col) continue;
      if (s.message.find(e.text) == std::string::npos) continue;
      used[i] = found = true;
    }
    EXPECT_TRUE(found) << c.file << ":" << e.written_at << ": expected "
                       << (e.severity == dsl::Severity::Error ? "error" : "warning") << " at "
                       << (e.line ? "line " + std::to_string(e.line) : std::string("no location"))
                       << (e.col ? ":" + std::to_string(e.col) : "") << " containing '" << e.text
                       << "' was not reported; got:\n"
                       << all;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!used[i] && seen[i].severity == dsl::Severity::Error)
      ADD_FAILURE() << c.file << ":" << seen[i].line << ": unexpected error:\n  "
                    << seen[i].rendered;
    check_rendering(c, seen[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Dsl, DiagnosticsFile, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(DiagnosticsDriver, FindsTheCaseFiles) {
  auto cases = all_cases();
  EXPECT_GE(cases.size(), 40u);
  size_t expectations = 0;
  for (const auto& c : cases) expectations += c.expected.size();
  EXPECT_GE(expectations, cases.size());
}

TEST(DiagnosticsDriver, SplitsAndPadsCases) {
  fs::path tmp = fs::temp_directory_path() / "tilejit_diagnostics_driver_test.tile";
  {
    std::ofstream out(tmp);
    out << "kernel a() grid (1) {}\n"
           "// expected-error @+1:9 {{x}}\n"
           "// -----\n"
           "// set: T=f16, D = 64\n"
           "// expected-warning @-1 {{w}}\n"
           "// expected-error @* {{c}}\n"
           "// expected-eror {{typo}}\n";
  }
  auto cases = split_file(tmp);
  fs::remove(tmp);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].first_line, 1);
  ASSERT_EQ(cases[0].expected.size(), 1u);
  EXPECT_EQ(cases[0].expected[0].line, 3);
  EXPECT_EQ(cases[0].expected[0].col, 9);
  EXPECT_EQ(cases[0].expected[0].text, "x");
  EXPECT_EQ(cases[1].first_line, 4);
  EXPECT_EQ(cases[1].text.substr(0, 3), "\n\n\n"); // padded: the case starts on line 4
  EXPECT_EQ(cases[1].set, (Bindings{{"T", "f16"}, {"D", "64"}}));
  ASSERT_EQ(cases[1].expected.size(), 2u);
  EXPECT_EQ(cases[1].expected[0].severity, dsl::Severity::Warning);
  EXPECT_EQ(cases[1].expected[0].line, 4);
  EXPECT_EQ(cases[1].expected[1].line, 0);
  EXPECT_EQ(cases[1].format_errors.size(), 1u); // the typo is caught, not ignored
}

} // namespace
} // namespace tilejit
