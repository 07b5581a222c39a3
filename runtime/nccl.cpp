// Loads libnccl with dlopen and binds the entry points ring attention uses (see nccl.h).
#include "runtime/nccl.h"

#include "support/error.h"
#include "support/shared_library.h"
#include "support/text.h"

#include <cstdlib>
#include <memory>
#include <vector>

namespace tilejit {

struct NcclLoader {
  struct Result {
    std::unique_ptr<Nccl> nccl;
    std::string reason;
  };

  static std::vector<std::string> candidates() {
    if (const char* env = std::getenv("TILEJIT_NCCL_LIBRARY"); env && *env) return {env};
    return {"libnccl.so.2", "libnccl.so"};
  }

  static Result load() {
    Result out;
    std::string path;
    const std::vector<std::string> tried = candidates();
    void* lib = open_first_library(tried, path);
    if (!lib) {
      out.reason = str("NCCL not found (tried ", join(tried, ", "),
                       "): set TILEJIT_NCCL_LIBRARY to libnccl.so.2 (pip's nvidia-nccl package "
                       "has it in site-packages/nvidia/nccl/lib), or import torch first");
      return out;
    }
    std::unique_ptr<Nccl> n(new Nccl());
    std::string missing;
    bind_symbol(lib, n->ncclGetVersion, "ncclGetVersion", missing);
    bind_symbol(lib, n->ncclGetUniqueId, "ncclGetUniqueId", missing);
    bind_symbol(lib, n->ncclCommInitRank, "ncclCommInitRank", missing);
    bind_symbol(lib, n->ncclCommDestroy, "ncclCommDestroy", missing);
    bind_symbol(lib, n->ncclGroupStart, "ncclGroupStart", missing);
    bind_symbol(lib, n->ncclGroupEnd, "ncclGroupEnd", missing);
    bind_symbol(lib, n->ncclSend, "ncclSend", missing);
    bind_symbol(lib, n->ncclRecv, "ncclRecv", missing);
    bind_symbol(lib, n->ncclGetErrorString, "ncclGetErrorString", missing);
    if (!missing.empty()) {
      out.reason = str(path, " has no ", missing, " (not NCCL 2.7 or newer)");
      return out;
    }
    n->path_ = path;
    if (n->ncclGetVersion(&n->version_) != 0) {
      out.reason = str("ncclGetVersion failed in ", path);
      return out;
    }
    out.nccl = std::move(n);
    return out;
  }

  static const Result& loaded() {
    static const Result result = load();
    return result;
  }
};

Nccl& Nccl::get() {
  const NcclLoader::Result& r = NcclLoader::loaded();
  if (!r.nccl) throw Error(r.reason);
  return *r.nccl;
}

bool Nccl::available() {
  return NcclLoader::loaded().nccl != nullptr;
}

void Nccl::check(int result, const char* what) const {
  if (result == 0) return;
  const char* text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  throw Error(str("NCCL error ", result, " in ", what, ": ", text ? text : "unknown"));
}

} // namespace tilejit
