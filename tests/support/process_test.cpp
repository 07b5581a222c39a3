// support/process.h and support/temp_files.h: tools run without a shell, and temporary files
// removed when the process is interrupted.
#include "support/error.h"
#include "support/process.h"
#include "support/temp_files.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

namespace tilejit {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/tilejit-proc-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// A path with quotes and shell syntax in it (what a hostile TMPDIR puts into the disassembler's
// argument) reaches the program as one argument, and nothing of it runs.
TEST(Process, ArgumentsNeverPassThroughAShell) {
  std::string dir = temp_dir();
  std::string marker = dir + "/pwned";
  std::string hostile = dir + "/x'; touch '" + marker + "'; echo '$(touch " + marker + ")`id`";
  ProcessResult r = run_process({"printf", "%s", hostile});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, hostile);
  EXPECT_FALSE(fs::exists(marker)) << "a shell ran part of the argument";
  fs::remove_all(dir);
}

TEST(Process, CapturesStderrAndTheExitStatus) {
  ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  r = run_process({"sh", "-c", "echo out; echo err >&2"}, /*capture_stderr=*/false);
  EXPECT_EQ(r.output, "out\n");
  r = run_process({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.signal, SIGTERM);
}

TEST(Process, AProgramThatCannotStartIsNamed) {
  try {
    run_process({"/nonexistent/tilejit-no-such-tool", "x"});
    ADD_FAILURE() << "ran a program that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run '/nonexistent/tilejit-no-such-tool'"),
              std::string::npos)
        << e.what();
  }
}

// SIGINT while a guarded temporary file exists removes it, and the process still dies of the
// signal (its parent sees SIGINT, as a shell expects).
TEST(TempFiles, InterruptRemovesRegisteredFilesAndReraises) {
  std::string dir = temp_dir();
  std::string tmp = dir + "/out.json.tmp.1.0", kept = dir + "/unguarded";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write_file_atomic(kept, "stays");
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    std::fputs("half a file", f);
    std::fclose(f);
    TempFileGuard guard(tmp);
    ::raise(SIGINT);
    ::_exit(0); // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "status " << status;
  EXPECT_FALSE(fs::exists(tmp)) << "the temporary file survived the interrupt";
  EXPECT_TRUE(fs::exists(kept));
  fs::remove_all(dir);
}

// A file whose guard is gone (renamed into place) is left alone by a later interrupt.
TEST(TempFiles, FinishedFilesAreForgotten) {
  std::string dir = temp_dir();
  std::string done = dir + "/done";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    { TempFileGuard guard(done); }
    write_file_atomic(done, "complete");
    ::raise(SIGTERM);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(read_file(done), "complete");
  fs::remove_all(dir);
}

} // namespace
} // namespace tilejit
