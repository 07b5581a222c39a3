// Evicting the L2 cache before a timed call, so that the call reads its inputs from memory as
// it would in an application (METHOD.md): 256 MB written on the timing stream, either by the
// driver's memset or by a fill kernel of our own.
//
// Why a kernel: our Triton peer flushes with torch's zero_(), a kernel, so a timed call starts
// right after another kernel on the same engine. A driver memset may run differently (its own
// kernel or a copy engine, the driver's choice), and what the switch costs between it and the
// timed call lands inside the call's events. Compared on an H100 (`tilejit bench --flush`, six
// paged_sparse shapes in one call) the two gave the same times within 0.6 us, so the memset
// stays the default.
#pragma once

#include "runtime/cuda_abi.h"
#include "runtime/cuda_module.h"

#include <memory>

namespace tilejit {

class DeviceBuffer;

enum class FlushKind { memset, kernel };

class L2Flush {
public:
  /// Allocates the buffer (and, for FlushKind::kernel, compiles the fill kernel with NVRTC for
  /// the current device). Throws tilejit::Error when either fails.
  L2Flush(FlushKind kind, size_t bytes = size_t(256) << 20);
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  /// Enqueues one flush on `stream`, writing `value` everywhere (a new value each time, so no
  /// write can be skipped as unchanged).
  void enqueue(cu::CUstream stream, unsigned value);

private:
  FlushKind kind_;
  std::unique_ptr<DeviceBuffer> buffer_;
  CudaModule module_;
  cu::CUfunction fill_ = nullptr;
  int blocks_ = 0;
};

} // namespace tilejit
