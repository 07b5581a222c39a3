#include "compiler/cuda/cuda_emitter.h"

#include "compiler/ir_printer.h"
#include "compiler/plan_shared_memory.h"
#include "support/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

namespace tilejit::cuda {

using ir::ExprKind;
using ir::Space;
using ir::StmtKind;

std::string storage_type(DType t) {
  switch (t) {
  case DType::Bool:
    return "bool";
  case DType::I8:
    return "signed char";
  case DType::U8:
    return "unsigned char";
  case DType::I16:
    return "short";
  case DType::I32:
    return "int";
  case DType::U32:
    return "unsigned";
  case DType::I64:
    return "long long";
  case DType::F16:
    return "tj::f16";
  case DType::BF16:
    return "tj::bf16";
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  }
  return "?";
}

std::string compute_type(DType t) {
  if (t == DType::F16 || t == DType::BF16) return "float";
  return storage_type(t);
}

namespace {

bool is_cpp_reserved(const std::string& n) {
  static const std::set<std::string> words = {
      "auto",      "break",    "case",     "char",    "class",    "const",  "continue",  "default",
      "delete",    "do",       "double",   "else",    "enum",     "extern", "float",     "for",
      "goto",      "if",       "inline",   "int",     "long",     "new",    "operator",  "private",
      "protected", "public",   "register", "return",  "short",    "signed", "sizeof",    "static",
      "struct",    "switch",   "template", "this",    "throw",    "try",    "typedef",   "union",
      "unsigned",  "using",    "virtual",  "void",    "volatile", "while",  "namespace", "tj",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min",    "max",       "abs",
      "exp",       "log",      "sqrt",     "floor",   "ceil",     "pow",    "tanh",      "bool",
      "true",      "false",    "half",     "float2"};
  return words.count(n) > 0;
}

/// A DSL name that could be mistaken for a generated one (temporaries t<N>, layouts L<N>,
/// helpers tj_*, shared tiles' <name>_s) or is a C++ word. Names ending in '_' are in the set
/// too, so that appending one keeps every name distinct.
bool needs_suffix(const std::string& n) {
  if (is_cpp_reserved(n) || n.rfind("tj_", 0) == 0) return true;
  if (!n.empty() && n.back() == '_') return true;
  if (n.size() >= 2 && n.compare(n.size() - 2, 2, "_s") == 0) return true;
  const bool generated_form = n.size() >= 2 && (n[0] == 't' || n[0] == 'L') &&
                              n.find_first_not_of("0123456789", 1) == std::string::npos;
  return generated_form;
}

std::string sanitize(const std::string& n) {
  return needs_suffix(n) ? n + "_" : n;
}

} // namespace

void Emitter::line(const std::string& text) {
  out_.append(indent_ * 2, ' ');
  out_ += text;
  out_ += '\n';
}
void Emitter::open(const std::string& text) {
  line(text + " {");
  ++indent_;
}
void Emitter::close(const std::string& text) {
  --indent_;
  line(text);
}

void Emitter::line_directive(const dsl::SourceLoc& loc) {
  if (!loc.known()) return;
  fmt::format_to(std::back_inserter(out_), "#line {} \"{}\"\n", loc.line, loc.path());
}

std::string Emitter::fresh(const std::string& base) {
  return str(base, counter_++);
}

std::string Emitter::layout_name(const ir::Layout* l) {
  TJ_ICHECK(l, "no layout");
  auto it = layout_names_.find(l);
  if (it != layout_names_.end()) return it->second;
  std::string name = str("L", layout_names_.size());
  layout_names_[l] = name;
  layout_order_.push_back(l);
  return name;
}

std::string Emitter::var_name(const ir::Var* v) const {
  if (v->type.space == Space::Shared) return sanitize(v->name) + "_s";
  return sanitize(v->name);
}

std::string Emitter::param_name(int p) const {
  return sanitize(k_.params[p].name);
}

std::string Emitter::smem_index(const ir::Var* v, const std::string& r,
                                const std::string& c) const {
  if (v->type.rank() == 1) return c;
  if (v->smem_swizzle)
    return str(dtype_size(v->type.dtype) == 4 ? "tj::swizzle128_b32<" : "tj::swizzle128<",
               swizzled_rows(*v), ">(", r, ", ", c, ")");
  return str(r, " * ", v->smem_row_stride, " + ", c);
}

std::string Emitter::mbarriers(int64_t offset) {
  return str("reinterpret_cast<unsigned long long*>(tj_smem + ", offset, ")");
}

std::string Emitter::tma_map(int param, int box_rows, int box_cols, int swizzle) {
  TmaMapSpec spec;
  spec.param = param;
  spec.box_rows = box_rows;
  spec.elem_bytes = dtype_size(k_.params[param].dtype);
  spec.box_cols = box_cols > 0 ? box_cols : 128 / spec.elem_bytes;
  spec.swizzle = swizzle;
  auto it = std::find(tma_maps_.begin(), tma_maps_.end(), spec);
  if (it == tma_maps_.end()) it = tma_maps_.insert(tma_maps_.end(), spec);
  return str("tj_tma", it - tma_maps_.begin());
}

std::string Emitter::shared_ptr(const ir::Var* v) const {
  std::string t = storage_type(v->type.dtype);
  std::string off = std::to_string(v->smem_offset);
  if (v->stages > 1) {
    // A producer names the slot it fills; everything else reads this iteration's slot.
    auto it = stage_index_.find(v);
    TJ_ICHECK(it != stage_index_.end() || v->read_slot, "ring buffer '", v->name,
              "' used outside its pipelined loop");
    std::string slot = it != stage_index_.end() ? it->second : var_name(v->read_slot);
    int64_t bytes = (v->type.rank() >= 2 ? (v->type.shape[0] + 15) / 16 * 16 : 1) *
                    v->smem_row_stride * dtype_size(v->type.dtype);
    off = str(off, " + ", slot, " * ", bytes);
  }
  return str("reinterpret_cast<", t, "*>(tj_smem + ", off, ")");
}

GeneratedKernel Emitter::run() {
  ir::PrintContext names(k_);
  // Scalars assigned exactly once: their defining value feeds the divisibility analysis.
  std::map<const ir::Var*, int> assignments;
  ir::for_each_stmt(const_cast<ir::Block&>(k_.body), [&](ir::Stmt& s) {
    if (s.kind == StmtKind::Decl || s.kind == StmtKind::Assign) {
      ++assignments[s.var];
      if (s.kind == StmtKind::Decl) single_value_[s.var] = s.value.get();
    }
    if (s.kind == StmtKind::For) loop_of_[s.var] = &s;
  });
  for (auto& [v, n] : assignments)
    if (n != 1) single_value_.erase(v);

  indent_ = 1;
  for (const auto& v : k_.vars)
    if (v->type.space == Space::Shared && v->smem_swizzle) async_proxy_reads_ = true;
  // Bulk additions issued by the threads (not the reducing warp's, which waits for its own):
  // their barriers and exits wait for them.
  std::function<void(const ir::Block&)> find_bulk = [&](const ir::Block& b) {
    for (const ir::StmtPtr& sp : b) {
      if (sp->warp_role == ir::WarpRole::ReduceWarp) {
        async_proxy_reads_ = true;
        continue;
      }
      ir::for_each_expr_root(*sp, [&](ir::ExprPtr& root) {
        ir::for_each_node(*root, [&](ir::Expr& n) {
          if (n.kind == ExprKind::AtomicAdd && n.bulk) bulk_atomics_ = async_proxy_reads_ = true;
        });
      });
      find_bulk(sp->body);
      find_bulk(sp->else_body);
    }
  };
  find_bulk(k_.body);
  line(str("extern __shared__ __align__(", async_proxy_reads_ ? 1024 : 128,
           ") unsigned char tj_smem[];"));
  line("unsigned char* const tj_scratch = tj_smem; // reductions, conversions, scans");
  // Column streams live in static shared memory (at most 48 KB), beside the planned dynamic
  // area; loops one after another reuse it.
  const int64_t room = std::min<int64_t>(48 * 1024, k_.smem_limit - k_.smem_bytes - 1024);
  staged_ = plan_column_streams(k_, room);
  for (const auto& [loop, sl] : staged_) staged_bytes_ = std::max(staged_bytes_, sl.bytes);
  if (staged_bytes_ > 0)
    line(str("__shared__ __align__(16) unsigned char tj_cs_smem[", staged_bytes_,
             "]; // column streams' windows"));
  emit_block(k_.body);
  // Bulk additions still running when the block exits would be complete only eventually.
  if (bulk_atomics_) line("tj::bulk_wait_all(); // the bulk atomic_adds' sums have landed");
  std::string src;
  auto to = std::back_inserter(src);
  fmt::format_to(to, "// Generated by tilejit from {}: kernel {}\n", k_.source_path, k_.name);
  std::vector<std::string> binds;
  for (const auto& [n, v] : k_.bindings) binds.push_back(n + "=" + v);
  fmt::format_to(to, "// {}; {} threads{}, {} bytes of shared memory{}\n",
                 binds.empty() ? "no generics or tunables" : join(binds, " "), k_.threads,
                 k_.producer_threads ? str(" (+ ", k_.producer_threads, " producer warps' threads)")
                                     : std::string(),
                 k_.smem_bytes,
                 staged_bytes_ ? fmt::format(" (+ {} for column streams)", staged_bytes_) : "");
  // The same C++ for both languages; HIP's prelude is the portable part with AMD spellings,
  // and its layouts take the target's wavefront (TJ_WARP).
  const bool hip = k_.target->language() == "hip";
  if (hip)
    fmt::format_to(to, "#define TJ_WARP {}\n#include \"tilejit_prelude_hip.cuh\"\n",
                   k_.target->warp_size());
  else if (k_.producer_threads)
    fmt::format_to(to, "#define TJ_CONSUMER_THREADS {}\n#include \"tilejit_prelude.cuh\"\n",
                   k_.threads);
  else
    src += "#include \"tilejit_prelude.cuh\"\n";
  if (k_.debug_bounds) src += "#include \"tj/debug.cuh\"\n";
  src += "\n";
  src += "namespace {\n";
  // In the order the names were given (not the map's pointer order): the same kernel must
  // print the same text in every process, or its module-cache key would change.
  for (const ir::Layout* l : layout_order_)
    fmt::format_to(to, "using {} = {};\n", layout_names_.at(l), l->cpp_type());
  src += "} // namespace\n\n";
  // Clusters: compile-time dimensions, so that a plain cuLaunchKernel forms them.
  const std::string cluster = k_.cluster_size() > 1
                                  ? fmt::format("__cluster_dims__({}, {}, {}) ", k_.cluster[0],
                                                k_.cluster[1], k_.cluster[2])
                                  : "";
  // blocks_per_sm: registers capped so that that many blocks fit on a multiprocessor.
  // (HIP's second argument means waves per execution unit, not blocks: the threads alone.)
  // Producer warps: launched past the kernel's threads, one block per multiprocessor unless
  // asked otherwise (the registers setmaxnreg moves are the block's: register_split).
  const int launched = k_.threads + k_.producer_threads;
  const std::string bounds = (k_.blocks_per_sm || k_.producer_threads) && !hip
                                 ? fmt::format("{}, {}", launched, std::max(1, k_.blocks_per_sm))
                                 : std::to_string(launched);
  fmt::format_to(to, "extern \"C\" __global__ void __launch_bounds__({}) {}{}(", bounds, cluster,
                 k_.name);
  for (size_t i = 0; i < k_.params.size(); ++i) {
    const ir::Param& p = k_.params[i];
    if (i) src += ",\n    ";
    if (p.is_tensor)
      fmt::format_to(to, "{}<{}, {}> {}", k_.index32 ? "tj::Tensor32" : "tj::Tensor",
                     storage_type(p.dtype), p.rank(), sanitize(p.name));
    else
      fmt::format_to(to, "const {} {}", storage_type(p.dtype), sanitize(p.name));
  }
  // Tensor maps: kernel parameters (the TMA reads them through their generic address).
  for (size_t i = 0; i < tma_maps_.size(); ++i)
    fmt::format_to(to, "{}const __grid_constant__ tj::TmaMap tj_tma{}",
                   k_.params.empty() && i == 0 ? "" : ",\n    ", i);
  if (k_.debug_bounds) // where the first out-of-range subscript is recorded
    fmt::format_to(to, "{}tj::BoundsRecord* tj_bounds", k_.params.empty() ? "" : ",\n    ");
  fmt::format_to(to, ") {{\n{}}}\n", out_);
  GeneratedKernel g;
  g.source = std::move(src);
  g.entry = k_.name;
  g.language = k_.target->language();
  g.threads = k_.threads + k_.producer_threads;
  g.smem_bytes = k_.smem_bytes;
  g.debug_bounds = k_.debug_bounds;
  g.bounds_sites = std::move(bounds_sites_);
  g.tma_maps = tma_maps_;
  return g;
}

namespace {

/// `s` is `v = v + 1` for a scalar int v.
bool increments(const ir::Stmt& s, const ir::Var* v) {
  if (s.kind != StmtKind::Assign || s.var != v || !s.value) return false;
  const ir::Expr& e = *s.value;
  return e.kind == ExprKind::Binary && e.binary_op == dsl::BinaryOp::Add && e.a &&
         e.a->kind == ExprKind::VarRef && e.a->var == v && e.b && e.b->kind == ExprKind::Const &&
         e.b->int_value == 1;
}

using ir::mentions;

/// For `v = value`: the dot that can accumulate into v itself and the value v is to hold
/// first (nullptr: v as it is), when value is v + dot(a, b) or v * s + dot(a, b) (either
/// order), the dot has no accumulator of its own, lays its result out as v is, and reads
/// nothing of v; else {nullptr, nullptr}. (The sum's rounding differs from the temporary's
/// by the order of the f32 additions only.)
std::pair<const ir::Expr*, const ir::Expr*> accumulating_dot(const ir::Expr& value,
                                                             const ir::Var* v) {
  if (value.kind != ExprKind::Binary || value.binary_op != dsl::BinaryOp::Add)
    return {nullptr, nullptr};
  auto is_v = [&](const ir::Expr& x) { return x.kind == ExprKind::VarRef && x.var == v; };
  for (int side = 0; side < 2; ++side) {
    const ir::Expr& d = side == 0 ? *value.a : *value.b;
    const ir::Expr& o = side == 0 ? *value.b : *value.a;
    if (d.kind != ExprKind::Dot || d.c || d.layout != v->layout || !(d.type == v->type) ||
        mentions(*d.a, v) || mentions(*d.b, v))
      continue;
    if (is_v(o)) return {&d, nullptr};
    if (o.kind == ExprKind::Binary && o.binary_op == dsl::BinaryOp::Mul && o.type == v->type &&
        o.layout == v->layout &&
        ((is_v(*o.a) && !mentions(*o.b, v)) || (is_v(*o.b) && !mentions(*o.a, v))))
      return {&d, &o};
  }
  return {nullptr, nullptr};
}

/// Whether b[i] declares an iteration counter of the loop b[i + 1] (expand-pipelines' ring
/// slots count iterations this way): `int c = 0;`, the body ending in `c = c + 1`, c unused
/// after the loop. Printed as a second variable of the for header, which is what NVVM and ptxas
/// were given before pipelines became IR (the same induction variables, the same registers).
const ir::Var* loop_counter(const ir::Block& b, size_t i) {
  if (i + 1 >= b.size()) return nullptr;
  const ir::Stmt& d = *b[i];
  const ir::Stmt& loop = *b[i + 1];
  if (d.kind != StmtKind::Decl || d.var->type.space != Space::Scalar || !d.value ||
      d.value->kind != ExprKind::Const || d.value->int_value != 0 ||
      !dtype_is_int(d.var->type.dtype) || loop.kind != StmtKind::For || loop.body.empty() ||
      !increments(*loop.body.back(), d.var))
    return nullptr;
  if (mentions(*loop.lo, d.var) || mentions(*loop.hi, d.var)) return nullptr;
  for (size_t j = i + 2; j < b.size(); ++j)
    if (mentions(*b[j], d.var)) return nullptr;
  return d.var;
}

} // namespace

void Emitter::emit_block(const ir::Block& b) {
  // Dots issued in an enclosing block are done before a nested one (control flow waits).
  if (!wgmma_in_flight_.empty()) finish_all_in_flight();
  for (size_t i = 0; i < b.size(); ++i) {
    if (!wgmma_in_flight_.empty()) finish_in_flight(in_flight_needed(*b[i]));
    if (const ir::Var* counter = loop_counter(b, i)) {
      emit_for(*b[i + 1], counter);
      ++i;
      continue;
    }
    emit_stmt(*b[i]);
  }
  // Nothing stays in flight past its block: a loop's next iteration, or what follows an if,
  // may overwrite the operands.
  if (!wgmma_in_flight_.empty()) finish_all_in_flight();
}

int Emitter::in_flight_needed(const ir::Stmt& s) const {
  // Loops and returns wait for all. Barriers and the copies' waits do not: a barrier orders the
  // threads' shared writes, and every write to a tile an issued dot reads is a statement checked
  // below in every thread's program order. Releasing a ring slot lets the TMA overwrite what an
  // issued dot may still be reading. An if waits for the dots its condition or branches touch
  // (their accumulators, or a tile they read written); the others run on through it (emit's
  // If: its branches start with none in flight, and whatever they issue they finish).
  const int all = static_cast<int>(wgmma_in_flight_.size()) - 1;
  if (s.kind == StmtKind::For || s.kind == StmtKind::Return || s.kind == StmtKind::MbarrierArrive)
    return all;
  int needed = -1;
  for (int i = 0; i <= all; ++i) {
    const InFlightDot& d = wgmma_in_flight_[i];
    bool needs = mentions(s, d.var);
    auto writes_read_tile = [&](ir::Stmt& st) {
      for (const ir::Var* t : d.shared_reads) {
        if (needs) return;
        if (st.var == t) needs = true;
        ir::for_each_expr_root(st, [&](ir::ExprPtr& root) {
          ir::for_each_node(*root, [&](ir::Expr& n) {
            needs = needs || (n.var == t && n.kind != ExprKind::VarRef);
          });
        });
      }
    };
    writes_read_tile(const_cast<ir::Stmt&>(s));
    for (const ir::Block* branch : {&s.body, &s.else_body})
      ir::for_each_stmt(const_cast<ir::Block&>(*branch), writes_read_tile);
    if (needs) needed = i;
  }
  return needed;
}

void Emitter::finish_in_flight(int through) {
  // Each issued dot is one commit group, done in issue order: waiting until at most the
  // groups after `through` run ends it and every one before it.
  if (through < 0) return;
  const int n = static_cast<int>(wgmma_in_flight_.size());
  TJ_ICHECK(through < n, "finishing a dot that is not in flight");
  const int left = n - 1 - through;
  line(left == 0 ? std::string("tj::wgmma_wait<0>(); // the dots issued above (issue=1) are done")
                 : str("tj::wgmma_wait<", left, ">(); // the dots issued above are done but the ",
                       left, " last (issue=1)"));
  for (int i = 0; i <= through; ++i) {
    const InFlightDot& d = wgmma_in_flight_[i];
    line(str("tj::wgmma_fence_operand(", d.acc, ");"));
    if (!d.a_regs.empty()) line(str("tj::wgmma_release(", d.a_regs, ");")); // none: A by descriptor
  }
  wgmma_in_flight_.erase(wgmma_in_flight_.begin(), wgmma_in_flight_.begin() + through + 1);
}

void Emitter::emit_stmt(const ir::Stmt& s) {
  // Temporaries live for one statement: the same IR can be emitted twice (pipelining).
  materialized_.clear();
  scalar_temps_.clear();
  switch (s.kind) {
  case StmtKind::Decl:
    emit_assign(s, true);
    return;
  case StmtKind::Assign:
    emit_assign(s, false);
    return;
  case StmtKind::Store:
    emit_store(s);
    return;
  case StmtKind::Eval: {
    line_directive(s.loc);
    const ir::Expr& e = *s.value;
    if (e.kind == ExprKind::Fence) {
      // A fence orders the bulk additions too: they must have landed first.
      if (bulk_atomics_) line("tj::bulk_wait_all();");
      line("tj::fence();");
    } else if (e.kind == ExprKind::Prefetch) {
      emit_prefetch(e);
    } else if (e.kind == ExprKind::AtomicAdd && !e.type.is_scalar()) {
      emit_tile_atomic(e);
    } else {
      prepare(e);
    }
    return;
  }
  case StmtKind::For:
    TJ_ICHECK(s.loop_kind != ir::LoopKind::Pipelined,
              "the emitter prints pipelined loops as expand-pipelines wrote them out");
    emit_for(s);
    return;
  case StmtKind::If: {
    if (s.warp_role != ir::WarpRole::None) {
      emit_warp_roles(s);
      return;
    }
    line_directive(s.loc);
    prepare(*s.value);
    // Dots the if does not touch run on through it (in_flight_needed): a branch must not wait
    // for them (the other path would not), so it starts with none in flight and ends with its
    // own done; a dot or wait inside it that waits for every group only waits longer.
    std::vector<InFlightDot> running;
    running.swap(wgmma_in_flight_);
    open(str("if (", scalar(*s.value), ")"));
    scratch_unknown();
    emit_block(s.body);
    if (!s.else_body.empty()) {
      --indent_;
      line("} else {");
      ++indent_;
      scratch_unknown();
      emit_block(s.else_body);
    }
    close();
    scratch_unknown();
    TJ_ICHECK(wgmma_in_flight_.empty(), "a dot left in flight by a branch");
    wgmma_in_flight_.swap(running);
    return;
  }
  case StmtKind::Return:
    line_directive(s.loc);
    if (bulk_atomics_) line("tj::bulk_wait_all();");
    line("return;");
    return;
  case StmtKind::Barrier:
    // A barrier before the read of a tile an asynchronous copy fills waits for this thread's
    // copies first (insert-barriers says where); the others leave copies in flight.
    if (s.wait_async) line("tj::cp_async_wait<0>();");
    // Shared writes (cp.async's too) are the generic proxy's; wgmma reads through the async one.
    if (async_proxy_reads_) line("tj::fence_proxy_async();");
    sync_threads(s.note);
    scratch_free();
    return;
  case StmtKind::AsyncCommit:
    line("tj::cp_async_commit();");
    return;
  case StmtKind::MbarrierInit:
    // One thread sets up the ring's mbarriers; the barrier after this publishes them.
    if (!s.note.empty()) line("// " + s.note);
    open("if (threadIdx.x == 0)");
    line(str("tj::mbarrier_init_all<", s.barrier_slots, ">(", mbarriers(s.barrier_offset), ", ",
             s.barrier_arrivals, ");"));
    close();
    return;
  case StmtKind::MbarrierWait:
    prepare(*s.value);
    prepare(*s.mask);
    if (s.producer_only && in_producer_) {
      line(str("tj::mbarrier_wait(", mbarriers(s.barrier_offset), " + ", scalar(*s.value), ", ",
               scalar(*s.mask), "); // every thread is done reading the slot"));
      return;
    }
    if (s.producer_only) {
      // The warp of the thread that issues the TMA copies (tma_load_*: thread 0) waits for
      // the slot it refills to be released; the others go on to their own work. A whole warp,
      // on a warp-uniform index: ptxas serialized the wgmmas of a loop with a dot left running
      // (issue=1) past a polling loop under `threadIdx.x == 0`.
      open("if (tj::warp_index() == 0)");
      line(str("tj::mbarrier_wait(", mbarriers(s.barrier_offset), " + ", scalar(*s.value), ", ",
               scalar(*s.mask), "); // every thread is done reading the slot"));
      close();
      return;
    }
    line(str(in_consumers_ ? "tj::mbarrier_wait_no_exit(" : "tj::mbarrier_wait(",
             mbarriers(s.barrier_offset), " + ", scalar(*s.value), ", ", scalar(*s.mask), "); // ",
             s.note.empty() ? "this iteration's TMA copies landed" : s.note));
    return;
  case StmtKind::MbarrierArrive:
    // Dots still reading the slot finish first (in_flight_needed).
    prepare(*s.value);
    // A tile staged for the bulk copy engine: written through the generic proxy, read by the
    // async one.
    if (s.fence_async) line("tj::fence_proxy_async();");
    line(str("tj::mbarrier_arrive(", mbarriers(s.barrier_offset), " + ", scalar(*s.value), "); // ",
             s.note.empty() ? "this thread's reads of the slot are done" : s.note));
    return;
  case StmtKind::WgmmaWait:
    // The loop's dots left their last wgmmas running into the accumulator (expand-pipelines).
    line(str("tj::wgmma_wait_acc(", var_name(s.var), ");"));
    return;
  case StmtKind::AsyncWait:
    line(s.note.empty() ? str("tj::cp_async_wait<", s.pending, ">();")
                        : str("tj::cp_async_wait<", s.pending, ">(); // ", s.note));
    return;
  }
}

void Emitter::emit_assign(const ir::Stmt& s, bool declare) {
  line_directive(s.loc);
  const ir::Var* v = s.var;
  const ir::Expr& value = *s.value;
  std::string name = var_name(v);
  switch (v->type.space) {
  case Space::Scalar:
    prepare(value);
    // A scalar assigned once is const: what the code means, and what ptxas was given before
    // the pipelines' bounds and slots became IR variables.
    line(str(declare ? str(single_value_.count(v) && !v->is_loop_var ? "const " : "",
                           compute_type(v->type.dtype), " ")
                     : std::string(),
             name, " = ", scalar(value), ";"));
    return;
  case Space::Frag: {
    if (declare)
      line(str(storage_type(v->type.dtype), " ", name, "[", layout_name(v->layout), "::N];"));
    bool in_place = value.kind == ExprKind::Dot && value.c && value.c->kind == ExprKind::VarRef &&
                    value.c->var == v && value.layout == v->layout;
    // dot(..., issue=1) on wgmma (16-bit operands) as the statement's whole value: issued into
    // v itself and left running; the block waits where it reads v (emit_block).
    auto issued = [&](const ir::Expr& d) {
      return d.issue_early && d.wgmma == 1 && !is_q4_dot(d) && d.layout == v->layout;
    };
    if (in_place) {
      prepare_dot_operands(value);
      emit_dot(value, name, /*accumulate_in_place=*/true, issued(value) ? v : nullptr);
      return;
    }
    if (value.kind == ExprKind::Dot && !value.c && issued(value) && value.type == v->type) {
      prepare_dot_operands(value);
      emit_dot(value, name, /*accumulate_in_place=*/false, v);
      return;
    }
    // x = x + dot(a, b), x = x * s + dot(a, b) (either order): x, scaled in place first, is the
    // dot's accumulator. Summed into a temporary instead, the temporary and x, each as large
    // as the tile, live at once during the dot (attention's forward spilled at BM 128, BN 64).
    const auto [acc_dot, acc_first] = accumulating_dot(value, v);
    if (acc_dot) {
      if (acc_first) {
        prepare(*acc_first);
        emit_fill(name, v->type.dtype, *acc_first, v->layout);
      }
      prepare_dot_operands(*acc_dot);
      emit_dot(*acc_dot, name, /*accumulate_in_place=*/true, issued(*acc_dot) ? v : nullptr);
      return;
    }
    prepare(value);
    emit_fill(name, v->type.dtype, value, v->layout);
    return;
  }
  case Space::Shared:
    if (value.kind == ExprKind::Copy) {
      // A pipeline's producer fills the slot its statement names; its copies are committed
      // by the pipeline's own async_commit.
      const bool producer = s.pipeline_role == ir::Stmt::PipelineRole::Producer;
      if (s.slot) {
        prepare(*s.slot);
        stage_index_[v] = scalar(*s.slot);
      }
      emit_copy(value, v, producer);
      if (s.slot) stage_index_.erase(v);
    } else {
      emit_shared_write(v, value);
    }
    return;
  }
}

std::string Emitter::reuse_coordinates(const ir::Var& tile) const {
  return str("tj_last_", var_name(&tile));
}

void Emitter::declare_reuse_coordinates(const ir::Block& body) {
  // The copying thread's record of each reuse = 1 ring's slots (cuda_access.cpp): the
  // coordinates (up to 5) of the copies that filled them, oldest first; none at the start.
  ir::for_each_stmt(const_cast<ir::Block&>(body), [&](ir::Stmt& st) {
    if (!st.slot || !st.var || !st.value || st.value->kind != ExprKind::Copy ||
        !st.value->reuse_slot || st.value->tma_barrier < 0)
      return;
    const std::string last = reuse_coordinates(*st.var);
    line(str("int ", last, "[", st.var->stages, "][5];"));
    line(str("TJ_UNROLL for (int tj_s = 0; tj_s < ", st.var->stages,
             "; ++tj_s) TJ_UNROLL for (int tj_i = 0; tj_i < 5; ++tj_i) ", last,
             "[tj_s][tj_i] = 0x80000000;"));
  });
}

void Emitter::emit_warp_roles(const ir::Stmt& s) {
  line_directive(s.loc);
  if (s.warp_role == ir::WarpRole::CopyThread) {
    open(str("if (threadIdx.x == ", k_.threads, ")"));
    line("// One thread issues the pipeline's copies.");
    declare_reuse_coordinates(s.body);
    in_producer_ = true;
    emit_block(s.body);
    in_producer_ = false;
    close();
    return;
  }
  if (s.warp_role == ir::WarpRole::ReduceWarp) {
    open(str("if (tj::warp_index() == ", k_.threads / 32 + 1, ")"));
    line("// A warp issues the loop's bulk atomic_adds from the tiles the other threads stage.");
    in_reducer_ = true;
    emit_block(s.body);
    in_reducer_ = false;
    line("tj::bulk_wait_all(); // the additions landed before the block ends");
    close();
    return;
  }
  // The producer warps (a warpgroup past the kernel's threads) give their registers to the
  // others and run their roles; the others run the kernel, with barriers of their own
  // (tj::block_sync: bar.sync 1 over TJ_CONSUMER_THREADS).
  open(str("if (threadIdx.x >= ", k_.threads, ")"));
  line("// The producer warps.");
  if (k_.producer_regs) line(str("tj::setmaxnreg_dec<", k_.producer_regs, ">();"));
  emit_block(s.body);
  line("return;");
  close();
  if (k_.consumer_regs) line(str("tj::setmaxnreg_inc<", k_.consumer_regs, ">();"));
  in_consumers_ = true;
  scratch_unknown();
  emit_block(s.else_body);
  in_consumers_ = false;
}

void Emitter::emit_for(const ir::Stmt& s, const ir::Var* counter) {
  // A loop never starts with dots in flight.
  if (!wgmma_in_flight_.empty()) finish_all_in_flight();
  if (!s.note.empty()) line("// " + s.note);
  materialized_.clear();
  scalar_temps_.clear();
  line_directive(s.loc);
  prepare(*s.lo);
  prepare(*s.hi);
  std::string v = var_name(s.var);
  int64_t step = s.step->int_value;
  std::string cmp = step > 0 ? " < " : " > ";
  std::string hi = fresh("tj_hi");
  line(str("const int ", hi, " = ", scalar(*s.hi), ";"));
  auto staged = staged_.find(&s);
  const StagedLoop* sl = staged == staged_.end() ? nullptr : &staged->second;
  const std::string it = sl ? str(", ++", open_staged_loop(*sl)) : std::string();
  if (s.unroll) line(str("#pragma unroll ", s.unroll));
  if (counter) {
    const std::string c = var_name(counter);
    open(str("for (int ", v, " = ", scalar(*s.lo), ", ", c, " = 0; ", v, cmp, hi, "; ", v,
             " += ", step, ", ++", c, it, ")"));
  } else {
    open(str("for (int ", v, " = ", scalar(*s.lo), "; ", v, cmp, hi, "; ", v, " += ", step, it,
             ")"));
  }
  scratch_unknown(); // the back edge: the last iteration's regions are not known
  for (size_t i = 0; i + (counter ? 1 : 0) < s.body.size(); ++i) {
    if (sl && i == sl->first) {
      emit_window_turn(*sl);
      // Right after the turn, not at the end of the step: measured on the H100 (2026-11-25),
      // hbv's forward took 0.59 ms this way and 0.77 ms with the chunks after the step's work.
      emit_window_chunks(*sl);
    }
    if (!wgmma_in_flight_.empty()) finish_in_flight(in_flight_needed(*s.body[i]));
    if (const ir::Var* inner = loop_counter(s.body, i)) {
      emit_for(*s.body[i + 1], inner);
      ++i;
      continue;
    }
    emit_stmt(*s.body[i]);
  }
  // As at a block's end: nothing in flight into the next iteration.
  if (!wgmma_in_flight_.empty()) finish_all_in_flight();
  close();
  if (sl) close_staged_loop(*sl);
  scratch_unknown();
}

std::string Emitter::next_scratch(const std::string& type, const ir::Expr& user) {
  const int region = user.scratch_region;
  TJ_ICHECK(region == 0 || region == 1, "place-scratch gave ", ir::print_expr(user),
            " no half of the scratch area");
  // In straight-line code the emitter sees the previous user itself; across control flow it
  // trusts place-scratch's merge of the paths.
  TJ_ICHECK(!scratch_known_ || region != scratch_last_, "place-scratch gave ", ir::print_expr(user),
            " half ", region, " right after a user of the same half");
  scratch_last_ = region;
  scratch_known_ = true;
  std::string base = region == 0 ? "tj_scratch" : str("(tj_scratch + ", k_.scratch_bytes / 2, ")");
  return str("reinterpret_cast<", type, "*>(", base, ")");
}

GeneratedKernel generate_cuda(const ir::Kernel& k) {
  return Emitter(k).run();
}

void Emitter::sync_threads(const std::string& note) {
  if (bulk_atomics_)
    line("tj::bulk_wait_read(); // this thread's bulk atomic_adds have read their rows");
  const char* sync = in_consumers_ ? "tj::block_sync();" : "__syncthreads();";
  line(note.empty() ? sync : str(sync, " // ", note));
}

} // namespace tilejit::cuda
