// Which GPU API a Runtime's launches go through, and the few calls besides launching that the
// tuner and the workloads make on either: CUDA's driver for sm_* targets, HIP's runtime for
// gfx* (AMD) ones. Launches themselves are Runtime::launch's, which chooses the same way.
#pragma once

#include <tilejit/tilejit.h>

#include <cstddef>

namespace tilejit {

enum class GpuApi { cuda, hip };

/// The API of `rt`'s compile target (RuntimeOptions::arch, else the NVIDIA GPU's): HIP for an
/// AMD target, CUDA otherwise. Needs no GPU.
GpuApi gpu_api(const Runtime& rt);
/// "CUDA" or "HIP", for messages.
const char* gpu_api_name(GpuApi api);

/// Waits for all work on `device` (cuCtxSynchronize, hipDeviceSynchronize). Throws NoGpuError
/// without a GPU of that API ("no AMD GPU: ..." for HIP).
void synchronize_device(GpuApi api, int device);

/// Waits for the work queued on `stream` (null: the default stream) of `api`.
void synchronize_stream(GpuApi api, void* stream);
/// Synchronous copies on `device` of `api`: device to device, and device to host.
void copy_on_device(GpuApi api, int device, void* dst, const void* src, size_t bytes);
void copy_to_host(GpuApi api, int device, void* host, const void* src, size_t bytes);

/// The shared memory one block may use on `rt`'s GPU, in bytes: the tuner's pruning limit
/// (CUDA: the opt-in maximum; HIP: the LDS per block). Throws NoGpuError without one.
int shared_memory_limit(Runtime& rt);

} // namespace tilejit
