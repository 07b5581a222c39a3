#include "gpu_runner.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace tilejit::test {
namespace {

// The GPU tests run on a remote machine without a debugger: a crash prints the test that was
// running and the raw call stack (binary+offset, for addr2line against the unstripped build)
// before the process dies, instead of a bare "Segmentation fault".
void print_stack_and_die(int sig) {
  const char* what = sig == SIGSEGV ? "\n*** SIGSEGV; stack:\n" : "\n*** fatal signal; stack:\n";
  (void)!write(2, what, strlen(what));
  void* frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

[[maybe_unused]] const bool stack_on_crash = [] {
  signal(SIGSEGV, print_stack_and_die);
  signal(SIGBUS, print_stack_and_die);
  signal(SIGFPE, print_stack_and_die);
  return true;
}();

} // namespace

GpuRunner::GpuRunner(RuntimeOptions options)
    : runtime_(std::make_unique<Runtime>(std::move(options))) {}
GpuRunner::~GpuRunner() = default;

bool gpu_available(std::string* why) {
  if (CudaDriver::available()) return true;
  if (why) *why = CudaDriver::unavailable_reason();
  return false;
}

void GpuRunner::forget_inputs() {
  constant_inputs_.clear();
}

KernelRunner GpuRunner::runner() {
  return
      [this](const std::string& source, const Bindings& config, const std::vector<TestArg>& args) {
        auto it = kernels_.find(source);
        if (it == kernels_.end()) {
          auto [path, name] = split_source(source);
          it = kernels_.emplace(source, runtime_->load(path, name)).first;
        }
        std::vector<std::unique_ptr<DeviceBuffer>> owned;
        std::vector<std::pair<const TestArg*, DeviceBuffer*>> copies_back;
        std::vector<Arg> launch_args;
        for (const TestArg& a : args) {
          if (!a.buffer) {
            launch_args.push_back(dtype_is_float(a.scalar_dtype)
                                      ? Arg::f32(static_cast<float>(a.scalar))
                                      : Arg::i32(static_cast<int32_t>(a.scalar)));
            continue;
          }
          size_t bytes = static_cast<size_t>(a.buffer->numel()) * dtype_size(a.buffer->dtype());
          DeviceBuffer* dev = nullptr;
          if (a.constant_input) {
            auto& slot = constant_inputs_[a.buffer->data()];
            if (!slot || slot->size() != std::max<size_t>(bytes, 16)) {
              slot = std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 16));
              slot->upload(a.buffer->data(), bytes);
            }
            dev = slot.get();
          } else {
            owned.push_back(std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 16)));
            dev = owned.back().get();
            dev->upload(a.buffer->data(), bytes);
            copies_back.emplace_back(&a, dev);
          }
          launch_args.push_back(
              Arg::of(Tensor::contiguous(dev->data(), a.buffer->dtype(), a.buffer->shape())));
        }
        LaunchOptions options;
        options.config = config;
        options.synchronize = true;
        runtime_->launch(it->second, launch_args, options);
        for (auto& [a, dev] : copies_back)
          dev->download(a->buffer->data(),
                        static_cast<size_t>(a->buffer->numel()) * dtype_size(a->buffer->dtype()));
      };
}

} // namespace tilejit::test
