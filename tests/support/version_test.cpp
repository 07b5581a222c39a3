// support/version.h: the project version, plus the commit of a git checkout; and the script
// that writes it (cmake/version_header_script.cmake), run on scratch git repositories.
#include "support/process.h"
#include "support/text.h"
#include "support/version.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tilejit {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int status = -1;
  std::string output; ///< stdout, trailing newline removed
};

// Runs a program with its arguments, no shell (stderr discarded); its exit status and stdout.
CommandResult run(const std::vector<std::string>& argv) {
  CommandResult result;
  ProcessResult p = run_process(argv, /*capture_stderr=*/false);
  result.status = p.exit_code;
  result.output = p.output;
  while (!result.output.empty() && result.output.back() == '\n') result.output.pop_back();
  return result;
}

const std::string kGit = TILEJIT_GIT_EXECUTABLE;

TEST(Version, StartsWithTheProjectVersion) {
  std::string version = tilejit_version();
  const std::string project = TILEJIT_PROJECT_VERSION;
  ASSERT_TRUE(starts_with(version, project)) << version;
  std::string rest = version.substr(project.size());
  EXPECT_TRUE(rest.empty() || starts_with(rest, "+g")) << version;
}

TEST(Version, TheCommitIsTheHashAfterThePlusG) {
  EXPECT_EQ(commit_of_version("0.1.0+g0123456789ab"), "0123456789ab");
  EXPECT_EQ(commit_of_version("0.1.0+g0123456789ab-dirty"), "0123456789ab-dirty");
  EXPECT_EQ(commit_of_version("0.1.0"), "");
  EXPECT_EQ(commit_of_version(""), "");
}

TEST(Version, NamesTheCommitOfAGitCheckout) {
  const std::string source = TILEJIT_SOURCE_DIR;
  if (!fs::exists(source + "/.git")) GTEST_SKIP() << source << " is not a git checkout";
  if (kGit.empty()) GTEST_SKIP() << "git was not found when configuring";
  CommandResult head = run({kGit, "-C", source, "rev-parse", "HEAD"});
  ASSERT_EQ(head.status, 0) << "git rev-parse HEAD failed in " << source;
  std::string expected = std::string(TILEJIT_PROJECT_VERSION) + "+g" + head.output.substr(0, 12);
  std::string version = tilejit_version();
  EXPECT_TRUE(version == expected || version == expected + "-dirty")
      << version << ": expected " << expected << "[-dirty] (built before the last commit? rebuild)";
}

/// Runs the version script for `source_dir` and returns the string its header defines.
class VersionScript : public ::testing::Test {
protected:
  void SetUp() override {
    if (kGit.empty()) GTEST_SKIP() << "git was not found when configuring";
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tilejit-version-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    repo_ = dir_ + "/repo";
    header_ = dir_ + "/version.h";
    fs::create_directories(repo_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string generate() {
    std::vector<std::string> command = {TILEJIT_CMAKE_COMMAND,
                                        "-DOUT=" + header_,
                                        "-DSOURCE_DIR=" + repo_,
                                        "-DVERSION=1.2.3",
                                        "-DGIT=" + kGit,
                                        "-P",
                                        std::string(TILEJIT_SOURCE_DIR) +
                                            "/cmake/version_header_script.cmake"};
    CommandResult result = run(command);
    EXPECT_EQ(result.status, 0) << describe_command(command);
    std::string text = read_file(header_);
    const std::string define = "#define TILEJIT_BUILD_VERSION \"";
    size_t at = text.find(define);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no TILEJIT_BUILD_VERSION in\n" << text;
      return "";
    }
    at += define.size();
    return text.substr(at, text.find('"', at) - at);
  }

  void git(const std::string& args) {
    std::vector<std::string> command = {kGit,
                                        "-C",
                                        repo_,
                                        "-c",
                                        "user.name=test",
                                        "-c",
                                        "user.email=test@example.com",
                                        "-c",
                                        "commit.gpgsign=false"};
    for (const std::string& arg : split(args, ' ')) command.push_back(arg);
    ASSERT_EQ(run(command).status, 0) << describe_command(command);
  }

  std::string head() { return run({kGit, "-C", repo_, "rev-parse", "HEAD"}).output; }

  std::string dir_, repo_, header_;
};

TEST_F(VersionScript, PlainVersionOutsideAGitCheckout) {
  EXPECT_EQ(generate(), "1.2.3");
}

TEST_F(VersionScript, CommitThenDirtyForTrackedChangesOnly) {
  git("init -q");
  write_file_atomic(repo_ + "/a.txt", "one\n");
  git("add a.txt");
  git("commit -q -m one");
  const std::string clean = "1.2.3+g" + head().substr(0, 12);
  ASSERT_EQ(clean.size(), std::string("1.2.3+g").size() + 12);
  EXPECT_EQ(generate(), clean);

  write_file_atomic(repo_ + "/untracked.txt", "new\n"); // untracked files do not count
  EXPECT_EQ(generate(), clean);

  write_file_atomic(repo_ + "/a.txt", "two\n");
  EXPECT_EQ(generate(), clean + "-dirty");

  git("commit -q -am two"); // a new commit, no re-configure needed
  EXPECT_EQ(generate(), "1.2.3+g" + head().substr(0, 12));
}

TEST_F(VersionScript, LeavesAnUnchangedHeaderAlone) {
  EXPECT_EQ(generate(), "1.2.3");
  // Backdate the header: a rewrite would move its time forward and rebuild its dependents.
  auto old_time = fs::last_write_time(header_) - std::chrono::hours(1);
  fs::last_write_time(header_, old_time);
  EXPECT_EQ(generate(), "1.2.3");
  EXPECT_EQ(fs::last_write_time(header_), old_time);
}

} // namespace
} // namespace tilejit
