// NCCL, loaded at run time with dlopen (as libcuda and libnvrtc are), for what passes tensors
// between the GPUs of several processes: ring attention's key/value chunks. tilejit builds,
// loads and runs without it; only a ring says it is missing. The declarations follow nccl.h
// (NCCL 2.x's stable C ABI), so no NCCL header is needed to build.
#pragma once

#include "runtime/cuda_abi.h"

#include <array>
#include <cstddef>
#include <string>

namespace tilejit {

/// ncclUniqueId: what the ranks of one communicator share (rank 0 makes it, the others receive
/// it by whatever means they have: torch.distributed, a file, a pipe).
struct NcclId {
  std::array<char, 128> bytes{};
};

struct NcclCommSt;
using NcclCommHandle = NcclCommSt*;

/// Process-wide handle on libnccl. The library is looked for on the first get(): the path in
/// TILEJIT_NCCL_LIBRARY when set, else libnccl.so.2 as the loader finds it (a process that
/// imported PyTorch already has pip's nvidia-nccl loaded, and dlopen returns that one).
class Nccl {
public:
  /// The loaded library; throws tilejit::Error saying where it looked and how to point at it.
  static Nccl& get();
  /// Whether get() would succeed (never throws).
  static bool available();

  /// Throws tilejit::Error("NCCL error <name> (<n>) in <what>") unless `result` is ncclSuccess.
  void check(int result, const char* what) const;
  /// ncclGetVersion: 22703 for 2.27.3.
  int version() const { return version_; }
  const std::string& library_path() const { return path_; }

  // ---- entry points (signatures as in nccl.h; ncclResult_t and ncclDataType_t are ints) ----
  int (*ncclGetVersion)(int* version) = nullptr;
  int (*ncclGetUniqueId)(NcclId* id) = nullptr;
  int (*ncclCommInitRank)(NcclCommHandle* comm, int nranks, NcclId id, int rank) = nullptr;
  int (*ncclCommDestroy)(NcclCommHandle comm) = nullptr;
  int (*ncclGroupStart)() = nullptr;
  int (*ncclGroupEnd)() = nullptr;
  int (*ncclSend)(const void* buf, size_t count, int dtype, int peer, NcclCommHandle comm,
                  cu::CUstream stream) = nullptr;
  int (*ncclRecv)(void* buf, size_t count, int dtype, int peer, NcclCommHandle comm,
                  cu::CUstream stream) = nullptr;
  const char* (*ncclGetErrorString)(int result) = nullptr;

  /// ncclUint8: buffers travel as bytes.
  static constexpr int kBytes = 1;

private:
  Nccl() = default;
  friend struct NcclLoader;
  std::string path_;
  int version_ = 0;
};

} // namespace tilejit
