// A workload's problem on the GPU: its kernels loaded in a Runtime, its buffers uploaded, its
// steps launched in order, its outputs poisoned, downloaded and compared. What `tilejit run`,
// `tune` and `bench` share, whatever the workload.
#pragma once

#include "runtime/device_buffer.h"
#include "workloads/workload.h"

#include <tilejit/tilejit.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// A workload's kernels loaded into one Runtime (load once, launch for every problem: a
/// kernel's compiled variants belong to its handle).
class WorkloadKernels {
public:
  WorkloadKernels(Runtime& rt, const Workload& w);
  KernelRef get(const std::string& kernel_name) const;
  Runtime& runtime() const { return *rt_; }
  const std::string& workload_name() const { return workload_; }

private:
  Runtime* rt_;
  std::map<std::string, KernelRef> refs_;
  std::string workload_;
};

/// The configuration a step's kernel is given: the step's generics, then the user's values
/// (--set) for the names that kernel declares (a name no kernel of the step declares is left
/// out, so one --set can address several kernels). `STEP:NAME` (a step's label or kernel name,
/// e.g. linear:WARPS=3) addresses only that step and wins over a plain NAME.
Config step_config(const dsl::Kernel& k, const Step& step, const Config& user);

/// Throws an Error naming `flag` and the steps when a `STEP:NAME` of `user` names none of
/// `steps` (by label or kernel), or, given what each kernel declares (kernel name -> its
/// generics and tunables; empty: not checked), when no addressed step's kernel declares NAME
/// (a mistyped --set would otherwise be ignored).
void check_step_names(const std::vector<Step>& steps, const Config& user, const char* flag,
                      const std::map<std::string, std::set<std::string>>& declared = {});

/// Device tensors shaped like a problem's buffers with no memory behind them: enough to key the
/// tuning database (and to compile) without drawing data.
std::vector<Arg> shape_only_args(const Problem& p, const Step& step);

class ProblemOnGpu {
public:
  /// Uploads every buffer of `data` (outputs and intermediates too, so they are poisoned or
  /// overwritten before they are read).
  ProblemOnGpu(const WorkloadKernels& kernels, const Problem& problem, ProblemData& data);
  /// The same, running `plan`'s steps (one of problem.plans()) instead of the default ones.
  ProblemOnGpu(const WorkloadKernels& kernels, const Problem& problem, ProblemData& data,
               const Plan& plan);

  const std::vector<Step>& steps() const { return steps_; }
  KernelRef kernel(size_t step) const;
  /// The step's arguments as device tensors and scalars.
  const std::vector<Arg>& args(size_t step) const { return args_[step]; }
  /// step_config of step `i` for the user's values.
  Config config(size_t step, const Config& user) const;
  /// A launch's options for step `i`: config(i, user) forced, and the step's fallback where it
  /// applies to this GPU (Step::fallback).
  LaunchOptions options(size_t step, const Config& user) const;
  /// What launching step `i` with the user's values resolves to (Runtime::prepare): its
  /// tunables as text ("CHUNK=256,BN=32") and where they came from. Throws ConstraintError
  /// when the values are ones the kernel's constraints rule out.
  struct ResolvedStep {
    std::string tunables, why;
  };
  ResolvedStep resolve(size_t step, const Config& user) const;
  void launch(size_t step, const Config& user, void* stream = nullptr);
  /// Every step in order; one-time steps too when `one_time`.
  void run(const Config& user, bool one_time, void* stream = nullptr);
  /// Fills every buffer a step from `first` on writes with NaN bytes.
  void poison_from(size_t first);
  /// Waits for the GPU, copies the outputs into the host data and compares them.
  Comparison check();
  DeviceBuffer& device_buffer(const std::string& name);
  /// Bytes of the distinct buffers the per-call steps (one-time steps excluded) read or write:
  /// the device memory one call keeps live, inputs and outputs included (a kernel's scratch
  /// tensors, which the Runtime owns, are scratch_bytes). Reported beside the peers' peak memory.
  size_t per_call_bytes() const;
  /// Bytes of the scratch tensors the per-call steps' kernels get from the Runtime with the
  /// user's values (PreparedLaunch::scratch_bytes; each kernel counted once): with
  /// per_call_bytes, what a call holds on the device.
  size_t scratch_bytes(const Config& user) const;

private:
  const WorkloadKernels& kernels_;
  const Problem& problem_;
  ProblemData& data_;
  std::vector<Step> steps_;
  std::vector<BufferSpec> specs_;
  std::map<std::string, std::unique_ptr<DeviceBuffer>> buffers_;
  std::vector<std::vector<Arg>> args_;
};

} // namespace tilejit::workloads
