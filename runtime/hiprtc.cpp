// Loads HIPRTC with dlopen and runs compilations (see hiprtc.h).
#include "runtime/hiprtc.h"

#include "support/error.h"
#include "support/shared_library.h"
#include "support/text.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace tilejit {

namespace {

// The slice of hiprtc.h tilejit uses (ABI, so no header is needed to build).
using hiprtcResult = int;
struct HiprtcProgramSt;
using hiprtcProgram = HiprtcProgramSt*;
constexpr hiprtcResult HIPRTC_SUCCESS = 0;
constexpr hiprtcResult HIPRTC_ERROR_COMPILATION = 6;

} // namespace

struct Hiprtc::Api {
  const char* (*hiprtcGetErrorString)(hiprtcResult) = nullptr;
  hiprtcResult (*hiprtcVersion)(int*, int*) = nullptr;
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram*, const char*, const char*, int, const char**,
                                      const char**) = nullptr;
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram*) = nullptr;
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram, int, const char**) = nullptr;
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram, char*) = nullptr;

  /// Every compile runs on this one thread, which lives as long as the process: HIPRTC's
  /// compiler (comgr, LLVM) leaves per-thread state, an alternate signal stack among it, that
  /// AddressSanitizer fails to tear down when the thread exits (the CLI and the tuner compile
  /// on threads that end). One thread also serialises the compiles, which ROCm 5.2 does not
  /// document as safe to run at once.
  std::mutex queue_mutex;
  std::condition_variable queue_ready;
  std::deque<std::function<void()>> queue;
  bool worker_started = false;

  void run_on_worker(std::function<void()> task) {
    std::packaged_task<void()> job(std::move(task));
    std::future<void> done = job.get_future();
    {
      std::lock_guard<std::mutex> lock(queue_mutex);
      queue.emplace_back([&job] { job(); });
      if (!worker_started) {
        worker_started = true;
        std::thread([this] { work(); }).detach();
      }
    }
    queue_ready.notify_one();
    done.get(); // rethrows what the task threw
  }
  void work() {
    for (;;) {
      std::function<void()> next;
      {
        std::unique_lock<std::mutex> lock(queue_mutex);
        queue_ready.wait(lock, [this] { return !queue.empty(); });
        next = std::move(queue.front());
        queue.pop_front();
      }
      next();
    }
  }

  std::string name(hiprtcResult r) const {
    const char* s = hiprtcGetErrorString ? hiprtcGetErrorString(r) : nullptr;
    return s ? s : str("HIPRTC error ", r);
  }
};

/// Friend of Hiprtc that performs the one-time load.
struct HiprtcLoader {
  struct Result {
    std::unique_ptr<Hiprtc> hiprtc;
    std::string reason;
  };

  /// Library names in search order: TILEJIT_HIPRTC_LIBRARY when set (alone), else the loader's
  /// path (ROCm 5.3+ ships libhiprtc apart; 5.2, Debian 12's, inside libamdhip64), then
  /// $ROCM_PATH/lib and /opt/rocm/lib.
  static std::vector<std::string> candidates() {
    if (const char* forced = std::getenv("TILEJIT_HIPRTC_LIBRARY"); forced && *forced)
      return {forced};
    const std::vector<std::string> names = {"libhiprtc.so.6",   "libhiprtc.so.5",
                                            "libhiprtc.so",     "libamdhip64.so.6",
                                            "libamdhip64.so.5", "libamdhip64.so"};
    std::vector<std::string> out = names;
    std::vector<std::string> dirs;
    if (const char* home = std::getenv("ROCM_PATH"); home && *home) dirs.push_back(home);
    dirs.push_back("/opt/rocm");
    for (const std::string& dir : dirs)
      for (const std::string& name : names) out.push_back(dir + "/lib/" + name);
    return out;
  }

  static Result load() {
    Result out;
    std::string path;
    const std::vector<std::string> tried = candidates();
    void* lib = open_first_library(tried, path);
    if (!lib) {
      out.reason = str("HIPRTC not found (tried ", join(tried, ", "),
                       "): install ROCm's HIPRTC (Debian: libamdhip64-dev) or set ROCM_PATH");
      return out;
    }
    auto api = std::make_unique<Hiprtc::Api>();
    std::string missing;
    bind_symbol(lib, api->hiprtcGetErrorString, "hiprtcGetErrorString", missing);
    bind_symbol(lib, api->hiprtcVersion, "hiprtcVersion", missing);
    bind_symbol(lib, api->hiprtcCreateProgram, "hiprtcCreateProgram", missing);
    bind_symbol(lib, api->hiprtcDestroyProgram, "hiprtcDestroyProgram", missing);
    bind_symbol(lib, api->hiprtcCompileProgram, "hiprtcCompileProgram", missing);
    bind_symbol(lib, api->hiprtcGetCodeSize, "hiprtcGetCodeSize", missing);
    bind_symbol(lib, api->hiprtcGetCode, "hiprtcGetCode", missing);
    bind_symbol(lib, api->hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize", missing);
    bind_symbol(lib, api->hiprtcGetProgramLog, "hiprtcGetProgramLog", missing);
    if (!missing.empty()) {
      out.reason = str(path, " has no ", missing, " (not a HIPRTC library tilejit can use)");
      return out;
    }
    std::unique_ptr<Hiprtc> h(new Hiprtc());
    if (hiprtcResult r = api->hiprtcVersion(&h->major_, &h->minor_); r != HIPRTC_SUCCESS) {
      out.reason = str("hiprtcVersion failed in ", path, ": ", api->name(r));
      return out;
    }
    h->api_ = std::move(api);
    h->library_path_ = path;
    out.hiprtc = std::move(h);
    return out;
  }

  static const Result& loaded() {
    // Thread-safe one-time initialisation, never destroyed: the compile thread waits on the
    // Api's condition variable for the life of the process, and destroying it at exit would
    // wait for that thread forever (the library is never unloaded either).
    static const Result* result = new Result(load());
    return *result;
  }
};

Hiprtc::~Hiprtc() = default;

bool Hiprtc::available() {
  return HiprtcLoader::loaded().hiprtc != nullptr;
}

const std::string& Hiprtc::unavailable_reason() {
  return HiprtcLoader::loaded().reason;
}

const Hiprtc& Hiprtc::get() {
  const HiprtcLoader::Result& r = HiprtcLoader::loaded();
  if (!r.hiprtc) throw Error(str("HIPRTC unavailable: ", r.reason));
  return *r.hiprtc;
}

std::string Hiprtc::version() const {
  return str(major_, ".", minor_);
}

namespace {

/// Destroys a HIPRTC program on every exit path.
struct HipProgramGuard {
  hiprtcResult (*destroy)(hiprtcProgram*);
  hiprtcProgram program = nullptr;
  ~HipProgramGuard() {
    if (program) destroy(&program);
  }
};

} // namespace

HiprtcOutput Hiprtc::compile(const HiprtcRequest& req) const {
  HiprtcOutput out;
  api_->run_on_worker([&] { out = compile_here(req); });
  return out;
}

HiprtcOutput Hiprtc::compile_here(const HiprtcRequest& req) const {
  Api& a = *api_;
  HiprtcOutput out;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : req.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  HipProgramGuard guard{a.hiprtcDestroyProgram};
  // ROCm 5.2's HIPRTC names the source "CompileSource" in a temporary directory whatever the
  // program is called: a #line directive makes its diagnostics name the program (generated
  // kernels' own #line directives then map them to the .tile file).
  const std::string source = str("#line 1 \"", req.program_name, "\"\n", req.source);
  hiprtcResult r = a.hiprtcCreateProgram(&guard.program, source.c_str(), req.program_name.c_str(),
                                         static_cast<int>(header_texts.size()), header_texts.data(),
                                         header_names.data());
  if (r != HIPRTC_SUCCESS) {
    guard.program = nullptr;
    out.log = str("hiprtcCreateProgram failed: ", a.name(r), "\n");
    return out;
  }
  std::vector<std::string> options = req.options;
  options.push_back("--offload-arch=" + req.arch);
  options.push_back("-O3");
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const hiprtcResult compiled =
      a.hiprtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (a.hiprtcGetProgramLogSize(guard.program, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (a.hiprtcGetProgramLog(guard.program, log.data()) == HIPRTC_SUCCESS) {
      if (!log.empty() && log.back() == '\0') log.pop_back(); // the size may count the NUL
      out.log += log;
    }
  }
  if (compiled != HIPRTC_SUCCESS) {
    if (compiled != HIPRTC_ERROR_COMPILATION || out.log.empty()) {
      if (!out.log.empty() && out.log.back() != '\n') out.log += '\n';
      out.log += str("hiprtcCompileProgram failed: ", a.name(compiled),
                     " (options: ", join(options, " "), ")\n");
    }
    return out;
  }
  size_t size = 0;
  r = a.hiprtcGetCodeSize(guard.program, &size);
  if (r != HIPRTC_SUCCESS) throw Error(str("hiprtcGetCodeSize failed: ", a.name(r)));
  out.code_object.assign(size, '\0');
  if (size > 0) {
    r = a.hiprtcGetCode(guard.program, out.code_object.data());
    if (r != HIPRTC_SUCCESS) throw Error(str("hiprtcGetCode failed: ", a.name(r)));
  }
  out.ok = true;
  return out;
}

} // namespace tilejit
