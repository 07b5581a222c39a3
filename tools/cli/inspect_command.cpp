// `tilejit inspect`: every stage of a kernel for research: the AST, the IR after any pass, the
// generated CUDA, PTX, SASS (through cuobjdump or nvdisasm), and the compiled resources; for
// AMD targets (--arch gfx90a|gfx1030) the generated HIP, the AMDGCN disassembly (llvm-objdump)
// and the code object's resources.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "compiler/ir_printer.h"
#include "compiler/ir_reader.h"
#include "compiler/pipeline.h"
#include "compiler/target.h"
#include "compiler/verify_ir.h"
#include "dsl/ast_printer.h"
#include "runtime/amdgpu_code_object.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_info.h"
#include "runtime/jit_compiler.h"
#include "runtime/toolchain.h"
#include "support/deadline.h"
#include "support/process.h"
#include "support/temp_files.h"
#include "support/text.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace tilejit::cli {
namespace {

struct InspectOptions {
  std::string source, workload, kernel, stage = "ir", after, arch, from_ir;
  bool list_passes = false;
  std::vector<std::string> set;
  bool unaligned = false;
  bool index64 = false;
  bool debug = false;
  double compile_timeout_s = 300; ///< --compile-timeout (0: wait as long as it takes)
};

/// cuobjdump or nvdisasm: on PATH, under $CUDA_HOME/bin, or /usr/local/cuda/bin.
std::string find_disassembler(std::string* which) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"))
    for (const auto& d : split(path, ':')) dirs.push_back(d);
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const char* tool : {"cuobjdump", "nvdisasm"})
    for (const auto& d : dirs) {
      std::string p = d + "/" + tool;
      if (::access(p.c_str(), X_OK) == 0) {
        *which = tool;
        return p;
      }
    }
  return "";
}

/// llvm-objdump (AMDGCN): on PATH (plain or versioned), under $ROCM_PATH/llvm/bin, or LLVM's
/// Debian home.
std::string find_llvm_objdump() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"))
    for (const auto& d : split(path, ':')) dirs.push_back(d);
  if (const char* home = std::getenv("ROCM_PATH")) dirs.push_back(std::string(home) + "/llvm/bin");
  dirs.push_back("/opt/rocm/llvm/bin");
  for (int v = 18; v >= 14; --v) dirs.push_back(str("/usr/lib/llvm-", v, "/bin"));
  std::vector<std::string> names = {"llvm-objdump"};
  for (int v = 18; v >= 14; --v) names.push_back(str("llvm-objdump-", v));
  for (const auto& name : names)
    for (const auto& d : dirs) {
      std::string p = d + "/" + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  return "";
}

/// Runs `tool_argv` + the path of `binary` written to a private temporary file; its output.
/// The path goes to the tool as one argument, never through a shell, so no character of
/// $TMPDIR can be read as a command.
std::string disassemble(const std::string& binary, std::vector<std::string> tool_argv,
                        const std::string& file_name) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tilejit-disasm-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error(str("cannot create a temporary directory '", pattern, "': ", std::strerror(errno)));
  const std::string dir = pattern;
  const std::string file = dir + "/" + file_name;
  TempFileGuard guard_file(file);
  TempFileGuard guard_dir(dir);
  auto clean_up = [&] {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  };
  tool_argv.push_back(file);
  ProcessResult result;
  try {
    write_file_atomic(file, binary);
    result = run_process(tool_argv);
  } catch (...) {
    clean_up();
    throw;
  }
  clean_up();
  if (!result.ok())
    throw Error(str("`", describe_command(tool_argv), "` failed (",
                    result.signal ? str("signal ", result.signal) : str("exit ", result.exit_code),
                    "):\n", result.output));
  return result.output;
}

/// The AMD resource report: the code object's own counts.
void print_amd_resources(const CompiledVariant& v) {
  const std::optional<AmdgpuKernelInfo> info = read_amdgpu_kernel(v.binary, v.entry);
  if (!info) throw Error(str("the code object for ", v.arch, " has no metadata for ", v.entry));
  auto n = [](int x) { return x < 0 ? std::string("?") : std::to_string(x); };
  std::cout << "kernel " << v.entry << " for " << v.arch << " (" << info->target << ")\n"
            << "  threads per block      " << v.threads << " (wavefronts of "
            << n(info->wavefront_size) << ")\n"
            << "  VGPRs per lane         " << n(info->usage.registers) << "\n"
            << "  AGPRs per lane         " << n(info->agprs) << "\n"
            << "  SGPRs per wavefront    " << n(info->sgprs) << "\n"
            << "  LDS, dynamic           " << v.smem_bytes << " bytes\n"
            << "  LDS, static            " << n(info->usage.shared_bytes) << " bytes\n"
            << "  scratch per lane       " << n(info->usage.stack_bytes) << " bytes\n"
            << "  spilled VGPRs / SGPRs  " << n(info->vgpr_spills) << " / " << n(info->sgpr_spills)
            << "\n"
            << "  compile time           " << static_cast<int>(v.compile_ms) << " ms (HIPRTC)\n";
}

/// --list-passes: the pass table, in order, with why each pass runs where it does.
void list_passes() {
  for (const Pass& p : passes()) std::cout << p.name << "\n    " << p.why << "\n";
}

/// --from-ir: printed IR read back, then the passes after the one that made it, up to --after.
void inspect_from_ir(const InspectOptions& o) {
  if (!o.source.empty() || !o.workload.empty() || !o.kernel.empty() || !o.arch.empty())
    throw Error("--from-ir takes the kernel and target from the IR; give no source, --workload, "
                "--kernel or --arch");
  auto ir = ir::read_kernel(o.from_ir, read_file(o.from_ir));
  if (ir->after_pass.empty())
    throw Error(str(o.from_ir, ": the IR does not say which pass made it (a first line "
                               "'// after PASS', as `inspect --stage ir` prints)"));
  const size_t done = pass_index(ir->after_pass);
  const std::string last = o.after.empty() ? pass_names().back() : o.after;
  if (pass_index(last) < done)
    throw Error(
        str("--after ", last, ": the IR in ", o.from_ir, " is already after ", ir->after_pass));
  std::vector<dsl::Diagnostic> warnings;
  // The IR as read is checked first, against the pass its header names, so that a broken
  // input is reported as that pass's output and not as the next pass's.
  if (verify_ir_enabled()) verify_ir(*ir, ir->after_pass);
  if (pass_index(last) > done)
    ir = run_passes(std::move(ir), pass_names()[done + 1], last, nullptr, &warnings);
  for (const auto& w : warnings) std::cerr << w.render() << "\n";
  if (o.stage == "ir") {
    std::cout << ir::print_kernel(*ir);
  } else if (o.stage == "cuda") {
    if (ir->after_pass != pass_names().back())
      throw Error("--stage cuda needs every pass run (leave out --after)");
    std::cout << ir->target->emit(*ir).source;
  } else {
    throw Error("--from-ir gives --stage ir or cuda");
  }
}

/// NVRTC cannot be cancelled: a compile past the deadline is left on its thread, and main()
/// ends with std::_Exit so that no static destructor runs under it.
/// `module` holds r.kernel: the thread shares it, so a late compile never reads freed memory.
CompiledVariant compile_with_deadline(const JitRequest& r,
                                      std::shared_ptr<const dsl::Module> module, double seconds) {
  auto v = run_with_deadline<CompiledVariant>(
      [r, module] {
        (void)module; // held for its lifetime
        return jit_compile(r);
      },
      seconds);
  if (!v)
    throw Error(str("compiling kernel '", r.kernel->name, "' took over ", seconds,
                    " s (--compile-timeout SECONDS; 0 waits as long as it takes)"));
  return std::move(*v);
}

void inspect(const InspectOptions& o) {
  if (o.list_passes) return list_passes();
  if (!o.from_ir.empty()) return inspect_from_ir(o);
  std::string kernel_name = o.kernel;
  LoadedModule m = load_kernel_source(o.source, o.workload, kernel_name);
  if (o.stage == "ast") {
    std::cout << dsl::print_ast(*m.module);
    return;
  }
  if (o.stage == "tile") { // the source as loaded: for grad:<source>, the derived kernel's text
    std::cout << m.module->file->text;
    return;
  }
  const dsl::Kernel& k = m.kernel(kernel_name);
  CompileOptions options;
  options.arch = o.arch;
  if (options.arch.empty())
    options.arch = CudaDriver::available() ? query_device().arch() : default_arch();
  if (CudaDriver::available()) options.smem_limit = query_device().smem_per_block_optin;
  // The target's limits decide which declared defaults stand: 64 KiB of LDS and wavefronts of
  // 64 on gfx90a (a default that breaks them gets the nearest configuration that holds, noted).
  const Target& target = target_for(options.arch);
  options.smem_limit = static_cast<int>(shared_memory_within(target, options.smem_limit));
  Bindings bindings = complete_for_inspection(k, parse_assignments(o.set, "--set"),
                                              options.smem_limit, target.warp_size());
  options.index32 = !o.index64;
  options.debug_bounds = o.debug;
  // As a launch with well-formed tensors would (aligned rows the TMA can describe), unless
  // --unaligned shows the other variant.
  if (!o.unaligned)
    for (const auto& p : k.params) {
      options.vector_aligned.insert(p.name);
      options.tma_params.insert(p.name);
    }
  std::vector<dsl::Diagnostic> warnings;
  auto show_warnings = [&] {
    for (const auto& w : warnings) std::cerr << w.render() << "\n";
  };
  if (o.stage == "ir") {
    auto ir = lower_to_ir(k, bindings, options, o.after, nullptr, &warnings);
    show_warnings();
    std::cout << ir::print_kernel(*ir);
    return;
  }
  if (!o.after.empty()) throw Error("--after applies to --stage ir");
  const bool amd = target_for(options.arch).language() == "hip";
  if ((o.stage == "hip" || o.stage == "amdgcn") && !amd)
    throw Error(str("--stage ", o.stage, " is for AMD targets (--arch gfx90a or gfx1030); ",
                    options.arch, " shows --stage cuda, ptx and sass"));
  if ((o.stage == "cuda" || o.stage == "ptx" || o.stage == "sass") && amd)
    throw Error(str("--stage ", o.stage, " is for NVIDIA targets; ", options.arch,
                    " shows --stage hip, amdgcn and resources"));
  if (o.stage == "cuda" || o.stage == "hip") {
    auto ir = lower_to_ir(k, bindings, options, "", nullptr, &warnings);
    show_warnings();
    std::cout << ir->target->emit(*ir).source;
    return;
  }
  if (o.stage != "ptx" && o.stage != "sass" && o.stage != "resources" && o.stage != "amdgcn")
    throw Error(str("unknown stage '", o.stage,
                    "'; stages: tile, ast, ir, cuda, ptx, sass, resources (NVIDIA), hip, amdgcn, "
                    "resources (AMD)"));
  JitRequest r;
  r.kernel = &k;
  r.source_hash = m.source_hash;
  r.bindings = bindings;
  r.options = options;
  r.want_assembly = o.stage == "ptx";
  std::shared_ptr<const dsl::Module> module = std::move(m.module);
  CompiledVariant v = compile_with_deadline(r, module, o.compile_timeout_s);
  for (const auto& w : v.warnings) std::cerr << w.render() << "\n";
  if (o.stage == "ptx") {
    std::cout << v.assembly;
    return;
  }
  if (o.stage == "resources" && amd) return print_amd_resources(v);
  if (o.stage == "amdgcn") {
    const std::string tool = find_llvm_objdump();
    if (tool.empty())
      throw Error("--stage amdgcn needs llvm-objdump (LLVM or ROCm), found none on PATH, in "
                  "$ROCM_PATH/llvm/bin, /opt/rocm/llvm/bin or /usr/lib/llvm-*/bin; --stage hip "
                  "and --stage resources work without it");
    std::cout << disassemble(v.binary, {tool, "-d", "--mcpu=" + v.arch}, "kernel.co");
    return;
  }
  if (o.stage == "resources") {
    const ResourceUsage& u = v.resources;
    auto n = [](int x) { return x < 0 ? std::string("?") : std::to_string(x); };
    std::cout << "kernel " << v.entry << " for " << v.arch << "\n"
              << "  threads per block      " << v.threads << "\n"
              << "  registers per thread   " << n(u.registers) << "\n"
              << "  shared memory, dynamic " << v.smem_bytes << " bytes\n"
              << "  shared memory, static  " << n(u.shared_bytes) << " bytes\n"
              << "  stack frame            " << n(u.stack_bytes) << " bytes\n"
              << "  spill stores / loads   " << n(u.spill_store_bytes) << " / "
              << n(u.spill_load_bytes) << " bytes\n"
              << "  compile time           " << static_cast<int>(v.compile_ms) << " ms ("
              << toolchain_for(v.language).name() << ")\n";
    for (const std::string& note : u.performance_notes)
      std::cout << "  ptxas: performance loss: " << note << "\n";
    return;
  }
  std::string tool;
  std::string path = find_disassembler(&tool);
  if (path.empty())
    throw Error("--stage sass needs cuobjdump or nvdisasm (CUDA toolkit), found neither on PATH, "
                "in $CUDA_HOME/bin "
                "or /usr/local/cuda/bin; --stage ptx and --stage resources work without them");
  std::cout << disassemble(v.binary,
                           tool == "cuobjdump" ? std::vector<std::string>{path, "-sass"}
                                               : std::vector<std::string>{path, "-c"},
                           "kernel.cubin");
}

} // namespace

void register_inspect_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand(
      "inspect",
      "Show a kernel at any stage: ast, ir (after any pass), cuda, ptx, sass, resources; "
      "for AMD (--arch gfx90a|gfx1030) hip, amdgcn, resources");
  cmd->add_option("source", o->source, "A .tile file, or embedded:<path> (see `tilejit list`)");
  cmd->add_option("--workload", o->workload, "Inspect a workload's kernel (e.g. paged_sparse)");
  cmd->add_option("--kernel", o->kernel, "Kernel name when the file holds several");
  cmd->add_option(
      "--stage", o->stage,
      "tile (the source; for grad:<source>, the derived kernel) | ast | ir | cuda | ptx | sass | "
      "resources (default ir); AMD targets: hip | amdgcn | resources");
  cmd->add_option("--after", o->after,
                  "With --stage ir: stop after this pass (" + join(pass_names(), ", ") + ")");
  cmd->add_option("--from-ir", o->from_ir,
                  "Start from printed IR (what --stage ir prints) and run the passes after the one "
                  "that made it, up to --after (a pass-level test's input)");
  cmd->add_flag("--list-passes", o->list_passes,
                "List the passes in order, with why each runs where it does");
  cmd->add_option("--set", o->set,
                  "NAME=VALUE for a generic or tunable (repeat, or comma-separate)");
  cmd->add_option(
      "--arch", o->arch,
      "Target, e.g. sm_80, sm_90a, gfx90a, gfx1030 (default: the GPU's own, else sm_90a)");
  cmd->add_flag("--unaligned", o->unaligned,
                "Assume tensors are not 16-byte aligned (element-wise accesses)");
  cmd->add_flag("--index64", o->index64,
                "Assume tensors too large for 32-bit element offsets (64-bit index math)");
  cmd->add_option("--compile-timeout", o->compile_timeout_s,
                  "Seconds the ptx, sass and resources stages wait for NVRTC (default 300; 0: "
                  "no limit)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_flag("--debug", o->debug,
                "Compile the debug mode's bounds checks of point and gather subscripts (what "
                "TILEJIT_DEBUG=1 launches)");
  cmd->callback([o] { inspect(*o); });
  (void)global;
}

} // namespace tilejit::cli
