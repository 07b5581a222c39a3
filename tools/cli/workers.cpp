#include "tools/cli/workers.h"

#include "support/error.h"
#include "support/text.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <regex>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tilejit::cli {
namespace {

struct Running {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::string err_partial; ///< standard error since its last '\n' or '\r'
  std::string progress;    ///< its latest progress line (ended by '\r')
};

/// Starts `w` with its standard output and error on pipes.
Running start(const Worker& w) {
  int out[2], err[2];
  if (pipe(out) != 0)
    throw Error(str("cannot start worker ", w.label, ": pipe: ", strerror(errno)));
  if (pipe(err) != 0) {
    close(out[0]), close(out[1]);
    throw Error(str("cannot start worker ", w.label, ": pipe: ", strerror(errno)));
  }
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : w.env) replaced = replaced || n == name;
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& [n, v] : w.env) env_text.push_back(n + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = w.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    throw Error(str("cannot start worker ", w.label, ": fork: ", strerror(errno)));
  }
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    execve(argv[0], argv.data(), envp.data());
    const char msg[] = "cannot execute the worker program\n";
    [[maybe_unused]] ssize_t n = write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Running r;
  r.pid = pid;
  r.out_fd = out[0];
  r.err_fd = err[0];
  return r;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

} // namespace

std::string combined_progress(const std::vector<std::pair<std::string, std::string>>& latest) {
  static const std::regex done(R"(\[(\d+)/(\d+)\])"), left(R"(~(\d+)s left)");
  std::vector<std::string> parts;
  for (const auto& [label, line] : latest) {
    if (line.empty()) continue;
    std::smatch m;
    std::string part = label;
    if (std::regex_search(line, m, done)) {
      part += " " + m[1].str() + "/" + m[2].str();
      if (std::regex_search(line, m, left)) part += " ~" + m[1].str() + "s";
    } else {
      const std::string text(trim(line));
      part += " " + (text.size() > 30 ? text.substr(0, 30) + "..." : text);
    }
    parts.push_back(part);
  }
  return parts.empty() ? std::string() : "[" + join(parts, " | ") + "]";
}

std::vector<WorkerResult> run_workers(const std::vector<Worker>& workers, std::ostream& err) {
  std::vector<Running> running;
  try {
    for (const Worker& w : workers) running.push_back(start(w));
  } catch (...) {
    for (const Running& r : running) {
      kill(r.pid, SIGTERM);
      waitpid(r.pid, nullptr, 0);
      close(r.out_fd), close(r.err_fd);
    }
    throw;
  }
  std::vector<WorkerResult> results(workers.size());
  size_t shown = 0; // the length of the combined progress line on screen
  auto clear_progress = [&] {
    if (shown) err << "\r" << std::string(shown, ' ') << "\r";
    shown = 0;
  };
  auto show_progress = [&] {
    std::vector<std::pair<std::string, std::string>> latest;
    for (size_t i = 0; i < workers.size(); ++i)
      latest.push_back({workers[i].label, running[i].progress});
    const std::string line = combined_progress(latest);
    clear_progress();
    if (!line.empty()) err << line << std::flush;
    shown = line.size();
  };
  // Standard error: a '\n' ends a line (printed with the label), a '\r' a progress update.
  auto take_err = [&](size_t i, const char* data, size_t n) {
    Running& r = running[i];
    bool progressed = false;
    for (size_t k = 0; k < n; ++k) {
      const char c = data[k];
      if (c == '\n') {
        clear_progress();
        if (!trim(r.err_partial).empty()) {
          err << "[" << workers[i].label << "] " << r.err_partial << "\n";
          results[i].last_line = r.err_partial;
        }
        r.err_partial.clear();
        r.progress.clear();
        progressed = true;
      } else if (c == '\r') {
        // Shown as it comes: a finished line right after it in the same read must not hide it.
        if (!trim(r.err_partial).empty()) {
          r.progress = r.err_partial;
          show_progress();
        }
        r.err_partial.clear();
      } else {
        r.err_partial += c;
      }
    }
    if (progressed) show_progress();
  };
  size_t open_fds = 2 * running.size();
  std::vector<char> buf(65536);
  while (open_fds > 0) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owner; // (worker, is stderr)
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].out_fd >= 0)
        fds.push_back({running[i].out_fd, POLLIN, 0}), owner.push_back({i, false});
      if (running[i].err_fd >= 0)
        fds.push_back({running[i].err_fd, POLLIN, 0}), owner.push_back({i, true});
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const auto [i, is_err] = owner[f];
      const ssize_t n = read(fds[f].fd, buf.data(), buf.size());
      if (n > 0) {
        if (is_err)
          take_err(i, buf.data(), static_cast<size_t>(n));
        else
          results[i].stdout_text.append(buf.data(), static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      close(fds[f].fd);
      (is_err ? running[i].err_fd : running[i].out_fd) = -1;
      --open_fds;
      if (is_err && !trim(running[i].err_partial).empty()) {
        const std::string tail = running[i].err_partial;
        take_err(i, "\n", 1);
        results[i].last_line = tail;
      }
    }
  }
  clear_progress();
  for (size_t i = 0; i < running.size(); ++i) {
    int status = 0;
    while (waitpid(running[i].pid, &status, 0) < 0 && errno == EINTR) {
    }
    results[i].exit_code = exit_code_of(status);
  }
  err << std::flush;
  return results;
}

} // namespace tilejit::cli
