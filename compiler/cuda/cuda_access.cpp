// Global memory: loads into register tiles, stores, copies into shared memory (asynchronous
// and 16 bytes wide when alignment is proven), atomics. Every element is bounds-checked
// against the tensor's runtime shape; masked and out-of-bounds elements read `other`.
#include "compiler/assign_layouts.h"
#include "compiler/cuda/cuda_emitter.h"

#include "compiler/ir_printer.h"
#include "compiler/plan_shared_memory.h"
#include "support/text.h"

#include <algorithm>
#include <functional>

namespace tilejit::cuda {

using ir::AccessIndex;
using ir::ExprKind;
using ir::LayoutKind;
using ir::Space;

namespace {

int low_bit(int64_t v) {
  if (v == 0) return 64;
  int d = 1;
  while (d < 64 && (v % (2 * d)) == 0) d *= 2;
  return d;
}

} // namespace

int Emitter::divisibility(const ir::Expr& e) const {
  switch (e.kind) {
  case ExprKind::Const:
    return dtype_is_int(e.type.dtype) ? low_bit(e.int_value) : 1;
  case ExprKind::VarRef: {
    if (auto it = loop_of_.find(e.var); it != loop_of_.end())
      return std::min(divisibility(*it->second->lo), low_bit(it->second->step->int_value));
    if (auto it = single_value_.find(e.var); it != single_value_.end())
      return divisibility(*it->second);
    return 1;
  }
  case ExprKind::Binary:
    switch (e.binary_op) {
    case dsl::BinaryOp::Add:
    case dsl::BinaryOp::Sub:
      return std::min(divisibility(*e.a), divisibility(*e.b));
    case dsl::BinaryOp::Mul:
      return std::min(64, divisibility(*e.a) * divisibility(*e.b));
    case dsl::BinaryOp::Div:
      // An exact division keeps the rest of the divisibility (k0 / 8 with k0 a multiple of
      // 128: a multiple of 16; the cap of 64 on the numerator makes this conservative).
      if (e.b->kind == ExprKind::Const && e.b->int_value > 0 &&
          divisibility(*e.a) % e.b->int_value == 0)
        return static_cast<int>(divisibility(*e.a) / e.b->int_value);
      return 1;
    case dsl::BinaryOp::Shl:
      if (e.b->kind == ExprKind::Const && e.b->int_value >= 0 && e.b->int_value < 7)
        return std::min<int64_t>(64, int64_t(divisibility(*e.a)) << e.b->int_value);
      return 1;
    default:
      return 1;
    }
  case ExprKind::Cast:
    return divisibility(*e.a);
  default:
    return 1;
  }
}

namespace {

/// How one access is addressed: hoisted scalar subscripts, then per-element indices.
struct AccessPlan {
  const ir::Param* param = nullptr;
  std::string tensor;               // C++ name of the Tensor argument
  std::string index_type;           // "int" when the launcher proved 32-bit offsets suffice
  std::vector<std::string> hoisted; // per dim: point value or range start (empty for gathers)
  std::vector<int> tile_axis;       // per dim: tile axis it follows (-1 for points)
  bool gathered = false;
  int last_range_dim = -1;
  std::vector<std::string> gather_rows; // per dim: register array of per-row gathered indices
  /// Per dim: a 64-bit point subscript before narrowing to the int index type, which the
  /// debug mode's checks report (empty for the others).
  std::vector<std::string> wide;
};

/// A subscript's value as the access's index type. With 32-bit indexing, a 64-bit value that
/// does not fit is out of bounds (tj::narrow_index), not truncated into bounds.
/// `convert`: spell the conversion out (inside expressions); else the value is assigned to a
/// variable of the index type as it is.
std::string index_value(const AccessPlan& p, DType t, const std::string& value,
                        bool convert = true) {
  if (p.index_type == "int" && dtype_is_int(t) && dtype_size(t) == 8)
    return str("tj::narrow_index(", value, ")");
  return convert ? str("static_cast<", p.index_type, ">(", value, ")") : value;
}

/// A TMA box's coordinates as the tensor map takes them: innermost first (the column, the
/// row), then the point subscripts outwards.
std::string tma_coordinates(const AccessPlan& p, size_t rank) {
  std::string coords = p.hoisted[rank - 1];
  for (size_t i = rank - 1; i-- > 0;) coords += str(", ", p.hoisted[i]);
  return coords;
}

} // namespace

// Builds the plan and emits the hoisted subscripts.
static AccessPlan plan_access(Emitter& em, const ir::Access& a) {
  AccessPlan p;
  p.param = &em.k_.params[a.param];
  p.tensor = em.param_name(a.param);
  p.index_type = em.k_.index32 ? "int" : "long long";
  p.tile_axis = a.tile_axes();
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const auto& ix = a.indices[d];
    switch (ix.kind) {
    case AccessIndex::Kind::Point:
    case AccessIndex::Kind::Range: {
      std::string name = em.fresh("tj_i");
      em.prepare(*ix.index);
      std::string value = em.scalar(*ix.index);
      p.wide.resize(a.indices.size());
      if (em.k_.debug_bounds && p.index_type == "int" && dtype_size(ix.index->type.dtype) == 8) {
        p.wide[d] = name + "_wide";
        em.line(str("const long long ", p.wide[d], " = ", value, ";"));
        value = p.wide[d];
      }
      em.line(str("const ", p.index_type, " ", name, " = ",
                  index_value(p, ix.index->type.dtype, value, false), ";"));
      p.hoisted.push_back(name);
      if (ix.kind == AccessIndex::Kind::Range) p.last_range_dim = static_cast<int>(d);
      break;
    }
    case AccessIndex::Kind::Gather:
      em.prepare(*ix.index);
      p.hoisted.push_back("");
      p.gathered = true;
      break;
    }
  }
  return p;
}

/// Per-dimension index expressions of element `idx` of a tile laid out as `loop`.
static std::vector<std::string> element_indices(Emitter& em, const ir::Access& a,
                                                const AccessPlan& p, const ir::Expr& node,
                                                const ir::Layout* loop, const std::string& idx) {
  std::vector<std::string> out;
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const auto& ix = a.indices[d];
    if (ix.kind == AccessIndex::Kind::Point) {
      out.push_back(p.hoisted[d]);
    } else if (ix.kind == AccessIndex::Kind::Range) {
      out.push_back(str("(", p.hoisted[d], " + ", em.coord(node, loop, idx, p.tile_axis[d]), ")"));
    } else if (loop->rank() == 2 && d < p.gather_rows.size() && !p.gather_rows[d].empty()) {
      out.push_back(
          str(p.gather_rows[d], "[", em.layout_name(loop), "::slice_index<1>(", idx, ")]"));
    } else if (loop->rank() == 2) {
      // The index tile runs along tile axis t: it is read in the layout's slice along the
      // other axis (rows for t = 0, columns for the second factor of an outer product).
      const int other = 1 - p.tile_axis[d];
      const ir::Layout* along = em.k_.layouts.slice(loop, other);
      out.push_back(
          index_value(p, ix.index->type.dtype,
                      em.elem(*ix.index, along,
                              str(em.layout_name(loop), "::slice_index<", other, ">(", idx, ")"))));
    } else {
      out.push_back(index_value(p, ix.index->type.dtype, em.elem(*ix.index, loop, idx)));
    }
  }
  return out;
}

/// Size of dimension d: a literal when specialisation made it a constant (the launcher checks
/// the argument against it), else the runtime shape.
static std::string extent(const AccessPlan& p, size_t d) {
  if (d < p.param->dim_values.size() && p.param->dim_values[d] >= 0)
    return std::to_string(p.param->dim_values[d]);
  return str("static_cast<", p.index_type, ">(", p.tensor, ".shape[", d, "])");
}

/// Reads the gathered indices of a rank-2 access once per row the thread owns, into registers,
/// before the per-element loop: each row then costs one index read however many vectors of
/// it the thread moves (NVCC does not merge the reads across the asynchronous copies).
static void preload_gather_rows(Emitter& em, const ir::Access& a, AccessPlan& p,
                                const ir::Layout* loop) {
  if (!loop || loop->rank() != 2 || !p.gathered) return;
  const ir::Layout* rows = em.k_.layouts.slice(loop, 1);
  std::string R = em.layout_name(rows);
  p.gather_rows.assign(a.indices.size(), "");
  for (size_t d = 0; d < a.indices.size(); ++d) {
    if (a.indices[d].kind != AccessIndex::Kind::Gather || p.tile_axis[d] != 0) continue;
    std::string name = em.fresh("tj_row");
    em.line(str(p.index_type, " ", name, "[", R, "::N];"));
    em.line(str(
        "TJ_UNROLL for (int tj_s = 0; tj_s < ", R, "::N; ++tj_s) ", name, "[tj_s] = ",
        index_value(p, a.indices[d].index->type.dtype, em.elem(*a.indices[d].index, rows, "tj_s")),
        ";"));
    p.gather_rows[d] = name;
  }
}

/// Whether the access's tile lies wholly inside the tensor: every point subscript and every
/// range (start and extent) within its dimension. One test every thread of the block evaluates
/// alike; "" when that cannot be said (gathers).
static std::string tile_inside(const AccessPlan& p, const ir::Access& a);

// The checks are joined with `&`, not `&&`: every operand is cheap and side-effect free, so
// evaluating all of them keeps the address code free of branches (short-circuit evaluation
// around shared-memory reads of gathered indices made NVRTC emit a branch per element).
// `ix` may cover only the leading dimensions (a row's).
static std::string in_bounds(const AccessPlan& p, const std::vector<std::string>& ix,
                             int vec_last = 1) {
  const std::string u = p.index_type == "int" ? "unsigned" : "unsigned long long";
  std::vector<std::string> parts;
  for (size_t d = 0; d < ix.size(); ++d) {
    if (vec_last > 1 && static_cast<int>(d) == p.last_range_dim)
      parts.push_back(
          str("(", ix[d], " >= 0) & (", ix[d], " + ", vec_last, " <= ", extent(p, d), ")"));
    else
      parts.push_back(
          str("(static_cast<", u, ">(", ix[d], ") < static_cast<", u, ">(", extent(p, d), "))"));
  }
  return parts.empty() ? "true" : join(parts, " & ");
}

/// A scratch tensor's stride along `d` when it is a constant: the runtime allocates scratch
/// contiguous, so the stride is the product of the later dimensions, known when they are.
static std::optional<int64_t> scratch_stride(const ir::Param& p, size_t d) {
  if (!p.is_scratch) return std::nullopt;
  int64_t s = 1;
  for (size_t j = d + 1; j < p.dim_values.size(); ++j) {
    if (p.dim_values[j] < 0) return std::nullopt;
    s *= p.dim_values[j];
  }
  return s;
}

static std::string offset(const AccessPlan& p, const std::vector<std::string>& ix) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < ix.size(); ++d) {
    // A vector-aligned tensor's last dimension has unit stride (or size 1, indexed by 0).
    if (static_cast<int>(d) + 1 == p.param->rank() && p.param->vector_aligned)
      parts.push_back(ix[d]);
    else if (auto s = scratch_stride(*p.param, d))
      parts.push_back(*s == 1 ? ix[d] : str(ix[d], " * ", *s));
    else if (p.index_type == "int")
      parts.push_back(str(ix[d], " * static_cast<int>(", p.tensor, ".stride[", d, "])"));
    else
      parts.push_back(str(ix[d], " * ", p.tensor, ".stride[", d, "]"));
  }
  return parts.empty() ? "0" : join(parts, " + ");
}

int Emitter::bounds_site(const ir::Access& a, int dim) {
  const ir::Param& p = k_.params[a.param];
  bounds_sites_.push_back(
      {a.loc, p.name, dim, p.dim_names[dim], a.indices[dim].kind == AccessIndex::Kind::Gather});
  return static_cast<int>(bounds_sites_.size());
}

/// Debug mode: the point and gather subscripts of every element the access does not mask off
/// must lie inside their dimensions; the first that does not is recorded for the launch to
/// report. The access itself is unchanged (it skips such elements, as without the debug mode).
/// Speculative loads (unroll-loops' reads for iterations that may not run) are not checked.
static void emit_bounds_checks(Emitter& em, const ir::Access& a, const AccessPlan& p,
                               const ir::Expr& node, const ir::Layout* l, const ir::Expr* mask) {
  if (!em.k_.debug_bounds || a.speculative) return;
  std::vector<size_t> dims;
  for (size_t d = 0; d < a.indices.size(); ++d)
    if (a.indices[d].kind != AccessIndex::Kind::Range) dims.push_back(d);
  if (dims.empty()) return;
  auto check = [&](const std::vector<std::string>& ix) {
    for (size_t d : dims) {
      const bool wide = d < p.wide.size() && !p.wide[d].empty();
      em.line(str("tj::check_index(tj_bounds, ", em.bounds_site(a, static_cast<int>(d)), ", ",
                  wide ? p.wide[d] : ix[d], ", ", extent(p, d), ");"));
    }
  };
  em.line("// debug mode: point and gather subscripts in bounds");
  if (!l) {
    std::vector<std::string> ix = element_indices(em, a, p, node, nullptr, "0");
    if (mask) em.open(str("if (", em.scalar(*mask), ")"));
    check(ix);
    if (mask) em.close();
    return;
  }
  std::string L = em.layout_name(l);
  em.open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  std::vector<std::string> ix = element_indices(em, a, p, node, l, "tj_e");
  std::string ok = str(L, "::valid(tj_e)");
  if (mask) ok += str(" && (", em.elem(*mask, mask->type.is_scalar() ? nullptr : l, "tj_e"), ")");
  em.open(str("if (", ok, ")"));
  check(ix);
  em.close();
  em.close();
}

/// 16-byte-friendly access: a Blocked layout whose vectors run along the tensor's last,
/// unit-stride dimension, starting at a multiple of the vector width. A tensor-core accumulator
/// (MmaAcc) holds its elements in pairs of adjacent columns: 2.
static int vector_width(Emitter& em, const ir::Access& a, const AccessPlan& p, const ir::Layout* l,
                        const ir::Expr& node) {
  if (!l) return 1;
  const int lvec = l->kind == LayoutKind::Blocked ? l->vec : l->kind == LayoutKind::MmaAcc ? 2 : 1;
  if (lvec <= 1) return 1;
  if (!p.param->vector_aligned) return 1;
  // A layout's run of vec elements may be wider than one access (an f16 store's 8 columns read
  // back as f32): its halves are contiguous too, so a run of 16 bytes at most is taken.
  int vec = lvec;
  while (vec > 1 && vec * dtype_size(p.param->dtype) > 16) vec /= 2;
  if (vec <= 1) return 1;
  int last = static_cast<int>(a.indices.size()) - 1;
  if (p.last_range_dim != last || a.indices[last].kind != AccessIndex::Kind::Range) return 1;
  // A scalar stored to a range (a broadcast) has the access's shape.
  const std::vector<int64_t> shape = node.type.is_scalar() ? a.shape() : node.type.shape;
  if (p.tile_axis[last] != static_cast<int>(shape.size()) - 1) return 1;
  if (shape.back() % vec != 0) return 1;
  if (em.divisibility(*a.indices[last].index) % vec != 0) return 1;
  if (vec * dtype_size(p.param->dtype) < 2) return 1;
  return vec;
}

void Emitter::emit_load(const ir::Expr& e, const std::string& dst) {
  const ir::Access& a = *e.access;
  line(str("// ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  std::string T = storage_type(p.param->dtype);
  std::string other =
      e.c ? str("tj::cvt<", T, ">(", scalar(*e.c), ")") : str("tj::cvt<", T, ">(0)");
  if (e.type.is_scalar()) {
    emit_bounds_checks(*this, a, p, e, nullptr, e.b.get());
    std::vector<std::string> ix = element_indices(*this, a, p, e, nullptr, "0");
    std::string ok = in_bounds(p, ix);
    if (e.b) ok = str("(", ok, ") && ", scalar(*e.b));
    line(str("const ", T, " ", dst, " = (", ok, ") ? ", p.tensor, ".ptr[", offset(p, ix),
             "] : ", other, ";"));
    return;
  }
  const ir::Layout* l = e.layout;
  std::string L = layout_name(l);
  preload_gather_rows(*this, a, p, l);
  emit_bounds_checks(*this, a, p, e, l, e.b.get());
  if (const StreamNames* sn = stream_of(&e)) return emit_stream_load(e, *sn, dst);
  int vec = vector_width(*this, a, p, l, e);
  if (vec > 1) {
    open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / ", vec, "; ++tj_q)"));
    line(str("const int tj_e = tj_q * ", vec, ";"));
    std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
    line(str("if (", L, "::valid(tj_e) && ", in_bounds(p, ix, vec), ")"));
    line(str("  tj::load_vec<", T, ", ", vec, ">(&", dst, "[tj_e], &", p.tensor, ".ptr[",
             offset(p, ix), "]);"));
    line("else");
    line(str("  TJ_UNROLL for (int tj_v = 0; tj_v < ", vec, "; ++tj_v) ", dst,
             "[tj_e + tj_v] = ", other, ";"));
    close();
    if (e.b) {
      std::string m = elem(*e.b, l, "tj_e");
      line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) if (!(", m, ")) ", dst,
               "[tj_e] = ", other, ";"));
    }
    return;
  }
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
  std::string ok = str(L, "::valid(tj_e) && (", in_bounds(p, ix), ")");
  if (e.b) ok += str(" & (", elem(*e.b, l, "tj_e"), ")");
  line(str(dst, "[tj_e] = (", ok, ") ? ", p.tensor, ".ptr[", offset(p, ix), "] : ", other, ";"));
  close();
}

void Emitter::emit_store(const ir::Stmt& s) {
  line_directive(s.loc);
  const ir::Access& a = *s.access;
  const ir::Expr& v = *s.value;
  prepare(v);
  if (s.mask) prepare(*s.mask);
  line(str("// store ", ir::print_access(k_, a)));
  AccessPlan p = plan_access(*this, a);
  std::string T = storage_type(p.param->dtype);
  if (v.type.is_scalar() && a.is_scalar()) {
    emit_bounds_checks(*this, a, p, v, nullptr, s.mask.get());
    std::vector<std::string> ix = element_indices(*this, a, p, v, nullptr, "0");
    std::string ok = in_bounds(p, ix);
    if (s.mask) ok = str("(", ok, ") && ", scalar(*s.mask));
    line(str("if (threadIdx.x == 0 && ", ok, ") ", p.tensor, ".ptr[", offset(p, ix), "] = tj::cvt<",
             T, ">(", scalar(v), ");"));
    return;
  }
  const ir::Layout* l = v.type.is_scalar()
                            ? free_store_layout(k_.layouts, a.shape(), *p.param, k_.threads)
                            : v.layout;
  TJ_ICHECK(l, "store value without a layout");
  std::string L = layout_name(l);
  emit_bounds_checks(*this, a, p, v, l, s.mask.get());
  if (const StreamNames* sn = stream_of(&s)) return emit_stream_write(v, s.mask.get(), l, *sn);
  int vec = s.mask ? 1 : vector_width(*this, a, p, l, v);
  if (vec > 1) {
    open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / ", vec, "; ++tj_q)"));
    line(str("const int tj_e0 = tj_q * ", vec, ";"));
    std::vector<std::string> ix = element_indices(*this, a, p, v, l, "tj_e0");
    open(str("if (", L, "::valid(tj_e0) && tj::Owner<", L, ">::is(tj_e0) && ",
             in_bounds(p, ix, vec), ")"));
    line(str(T, " tj_v[", vec, "];"));
    line(str("TJ_UNROLL for (int tj_w = 0; tj_w < ", vec,
             "; ++tj_w) { const int tj_e = tj_e0 + tj_w; tj_v[tj_w] = tj::cvt<", T, ">(",
             elem(v, l, "tj_e"), "); }"));
    line(str("tj::store_vec<", T, ", ", vec, ">(&", p.tensor, ".ptr[", offset(p, ix), "], tj_v);"));
    close();
    close();
    return;
  }
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  std::vector<std::string> ix = element_indices(*this, a, p, v, l, "tj_e");
  std::string ok = str(L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e) && ", in_bounds(p, ix));
  if (s.mask) ok += str(" && ", elem(*s.mask, s.mask->type.is_scalar() ? nullptr : l, "tj_e"));
  line(str("if (", ok, ") ", p.tensor, ".ptr[", offset(p, ix), "] = tj::cvt<", T, ">(",
           elem(v, l, "tj_e"), ");"));
  close();
}

/// A gathered copy of whole rows (gathers and points select a row, the last dimension is the
/// one range and runs along the tile's columns): a pointer and a check per row the thread
/// owns, then one cp.async per 16-byte vector at a constant offset from its row's pointer.
/// Returns false (emitting nothing) for any other shape of access.
static bool
emit_gathered_rows_copy(Emitter& em, const ir::Access& a, const AccessPlan& p, const ir::Expr& e,
                        const ir::Layout* l, const std::string& dst,
                        const std::function<std::string(const std::string&)>& smem_index) {
  const int last = static_cast<int>(a.indices.size()) - 1;
  if (!p.gathered || !l || l->rank() != 2 || p.gather_rows.empty()) return false;
  if (!p.param->vector_aligned || p.last_range_dim != last || p.tile_axis[last] != 1) return false;
  for (int d = 0; d < last; ++d)
    if (a.indices[d].kind == AccessIndex::Kind::Range) return false;
  const int vec = l->vec;
  std::string L = em.layout_name(l);
  std::string R = em.layout_name(em.k_.layouts.slice(l, 1));
  std::string T = storage_type(p.param->dtype);
  std::vector<std::string> row_ix;
  for (int d = 0; d < last; ++d)
    row_ix.push_back(p.gather_rows[d].empty() ? p.hoisted[d] : str(p.gather_rows[d], "[tj_s]"));
  std::string rows_ok = em.fresh("tj_rok");
  std::string rows_ptr = em.fresh("tj_rptr");
  em.line(str("bool ", rows_ok, "[", R, "::N];"));
  em.line(str("const ", T, "* ", rows_ptr, "[", R, "::N];"));
  em.open(str("TJ_UNROLL for (int tj_s = 0; tj_s < ", R, "::N; ++tj_s)"));
  em.line(str(rows_ok, "[tj_s] = ", in_bounds(p, row_ix), ";"));
  // A rejected row points at the tensor's base: its copies have source size 0 (zeros).
  em.line(str(rows_ptr, "[tj_s] = ", p.tensor, ".ptr + (", rows_ok, "[tj_s] ? ", offset(p, row_ix),
              " : 0);"));
  em.close();
  em.open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / ", vec, "; ++tj_q)"));
  em.line(str("const int tj_e = tj_q * ", vec, ";"));
  em.line(str("const int tj_s = ", L, "::slice_index<1>(tj_e);"));
  std::string col = str("(", p.hoisted[last], " + ", L, "::c(tj_e))");
  std::string ok =
      str(rows_ok, "[tj_s] & (", col, " >= 0) & (", col, " + ", vec, " <= ", extent(p, last), ")");
  if (e.b) ok += str(" & (", em.elem(*e.b, e.b->type.is_scalar() ? nullptr : l, "tj_e"), ")");
  em.open(str("if (", L, "::valid(tj_e))"));
  em.line(str("tj::cp_async16(", dst, " + ", smem_index("tj_e"), ", ", rows_ptr, "[tj_s] + ", col,
              ", ", ok, ");"));
  em.close();
  em.close();
  return true;
}

void Emitter::emit_tma_copy(const ir::Expr& e, const ir::Var* dst_var) {
  const ir::Access& a = *e.access;
  line(str("// ", dst_var->name, " <- ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  const size_t rank = p.hoisted.size();
  // A 2-D range into a swizzled tile (one box per 64 columns, each a column block of the
  // tile), or a run of one row into a plain rank-1 tile (one box, one element deep outside
  // its row). Out-of-range elements arrive as zeros and count all the same.
  const bool row = dst_var->type.rank() == 1;
  TJ_ICHECK(rank >= 2 && rank <= 5 && !p.gathered && dst_var->smem_swizzle == (row ? 0 : 128),
            "a TMA copy of a 2-D range (after point subscripts) into a swizzled tile, or of a "
            "run of one row into a plain one");
  const int64_t rows = row ? 1 : dst_var->type.shape[0];
  const int64_t cols = dst_var->type.shape[row ? 0 : 1];
  const int esize = dtype_size(dst_var->type.dtype);
  const std::string map = row ? tma_map(a.param, 1, static_cast<int>(cols), 0)
                              : tma_map(a.param, static_cast<int>(rows));
  const std::string dst = fresh("tj_dst");
  line(str(storage_type(dst_var->type.dtype), "* const ", dst, " = ", shared_ptr(dst_var), ";"));
  // A ring's slot, or the one buffer of a tile the producer warps fill before their loop.
  auto slot = stage_index_.find(dst_var);
  TJ_ICHECK(slot != stage_index_.end() || (in_producer_ && dst_var->by_mbarrier),
            "a TMA copy outside a pipeline's producer");
  const std::string slot_index = slot != stage_index_.end() ? slot->second : std::string("0");
  // One thread announces the tile's bytes on the slot's mbarrier and issues its boxes; the
  // bytes complete its phase. (The producer warps' branch is run by one thread already.)
  if (in_producer_) {
    line("{");
    ++indent_;
  } else {
    open("if (threadIdx.x == 0)");
  }
  const std::string bar = str(mbarriers(e.tma_barrier), " + ", slot_index);
  const std::string coords = tma_coordinates(p, rank);
  // reuse = 1 (ir.h: reuse_slot): the slots are filled in turn, so the one this copy fills
  // last held the oldest coordinates the copying thread keeps (tj_last_<tile>[0]); the same
  // block again only completes the slot's phase (an arrival without bytes).
  const bool reuse = e.reuse_slot && in_producer_ && slot != stage_index_.end();
  if (reuse) {
    const std::string last = reuse_coordinates(*dst_var);
    const int stages = dst_var->stages;
    line(str("const int tj_c[", rank, "] = {", coords, "};"));
    line("bool tj_same = true;");
    line(str("TJ_UNROLL for (int tj_i = 0; tj_i < ", rank, "; ++tj_i) tj_same &= ", last,
             "[0][tj_i] == tj_c[tj_i];"));
    open(str("TJ_UNROLL for (int tj_s = 0; tj_s + 1 < ", stages, "; ++tj_s)"));
    line(str("TJ_UNROLL for (int tj_i = 0; tj_i < ", rank, "; ++tj_i) ", last,
             "[tj_s][tj_i] = ", last, "[tj_s + 1][tj_i];"));
    close();
    line(str("TJ_UNROLL for (int tj_i = 0; tj_i < ", rank, "; ++tj_i) ", last, "[", stages - 1,
             "][tj_i] = tj_c[tj_i];"));
    open("if (tj_same)");
    line(str("tj::mbarrier_arrive(", bar, "); // the slot holds this block already"));
    --indent_;
    line("} else {");
    ++indent_;
  }
  line(str("tj::mbarrier_expect_tx(", bar, ", ", rows * cols * esize, ");"));
  if (row)
    line(str("tj::tma_load_box_", rank, "d(", dst, ", &", map, ", ", coords, ", ", bar, ");"));
  else
    line(str("tj::tma_load_", rank, "d_sw128<", cols * esize / 128, ", ", swizzled_rows(*dst_var),
             ">(", dst, ", &", map, ", ", coords, ", ", bar, ");"));
  if (reuse) close();
  close();
}

void Emitter::emit_copy(const ir::Expr& e, const ir::Var* dst_var, bool in_producer) {
  if (e.tma_barrier >= 0) {
    emit_tma_copy(e, dst_var);
    return;
  }
  const ir::Access& a = *e.access;
  if (e.b) prepare(*e.b);
  if (e.c) prepare(*e.c);
  line(str("// ", dst_var->name, " <- ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  std::string T = storage_type(p.param->dtype);
  const ir::Layout* l = e.layout;
  std::string L = layout_name(l);
  std::string dst = fresh("tj_dst");
  line(str(T, "* const ", dst, " = ", shared_ptr(dst_var), ";"));
  preload_gather_rows(*this, a, p, l);
  emit_bounds_checks(*this, a, p, e, l, e.b.get());
  auto smem_index = [&](const std::string& idx) {
    return this->smem_index(dst_var, str(L, "::r(", idx, ")"), str(L, "::c(", idx, ")"));
  };
  int vec = vector_width(*this, a, p, l, e);
  if (vec != l->vec) vec = 1; // the copy paths below move the layout's whole runs
  bool mask_per_row = !e.b || e.b->type.is_scalar() || e.b->type.shape.back() == 1 ||
                      e.b->type.rank() < e.type.rank();
  bool zero_other =
      !e.c || (e.c->kind == ExprKind::Const && e.c->float_value == 0 && e.c->int_value == 0);
  std::string other =
      e.c ? str("tj::cvt<", T, ">(", scalar(*e.c), ")") : str("tj::cvt<", T, ">(0)");
  // cp.async where the copy may run asynchronously (expand-pipelines decides) and the
  // elements come in 16-byte pieces; else plain loads and shared stores.
  const bool async16 = e.async_copy && vec > 1 && vec * dtype_size(p.param->dtype) == 16 &&
                       mask_per_row && zero_other;
  if (async16 && emit_gathered_rows_copy(*this, a, p, e, l, dst, smem_index)) {
    if (!in_producer) line("tj::cp_async_commit();");
    return;
  }
  if (async16) {
    open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / ", vec, "; ++tj_q)"));
    line(str("const int tj_e = tj_q * ", vec, ";"));
    std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
    std::string ok = in_bounds(p, ix, vec);
    if (e.b) ok += str(" & (", elem(*e.b, e.b->type.is_scalar() ? nullptr : l, "tj_e"), ")");
    open(str("if (", L, "::valid(tj_e))"));
    line(str("const bool tj_ok = ", ok, ";"));
    // A rejected element copies zeros from the tensor's base (cp.async with source size 0).
    line(str("tj::cp_async16(", dst, " + ", smem_index("tj_e"), ", ", p.tensor, ".ptr + (tj_ok ? ",
             offset(p, ix), " : 0), tj_ok);"));
    close();
    close();
    // Outside a pipeline the copy runs in the background: the barrier before its first read
    // waits for it (insert_barriers), so independent work overlaps its latency.
    if (!in_producer) line("tj::cp_async_commit();");
    return;
  }
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
  std::string ok = in_bounds(p, ix);
  if (e.b) ok += str(" & (", elem(*e.b, e.b->type.is_scalar() ? nullptr : l, "tj_e"), ")");
  const int esize = dtype_size(p.param->dtype);
  if (e.async_copy && zero_other && (esize == 4 || esize == 8)) {
    // One asynchronous copy per element (a gather of 4- or 8-byte values: a zero point per
    // column): a plain load here would stall the thread for the whole memory latency, which in
    // a pipeline's prefetch is once per iteration.
    line(str("if (", L, "::valid(tj_e)) { const bool tj_ok = ", ok, "; tj::cp_async_elem<", esize,
             ">(", dst, " + ", smem_index("tj_e"), ", ", p.tensor, ".ptr + (tj_ok ? ",
             offset(p, ix), " : 0), tj_ok); }"));
    close();
    if (!in_producer) line("tj::cp_async_commit();");
    return;
  }
  line(str("if (", L, "::valid(tj_e)) ", dst, "[", smem_index("tj_e"), "] = (", ok, ") ? ",
           p.tensor, ".ptr[", offset(p, ix), "] : ", other, ";"));
  close();
}

void Emitter::emit_shared_write(const ir::Var* v, const ir::Expr& value) {
  prepare(value);
  const ir::Layout* l =
      (!value.type.is_scalar() && value.layout)
          ? value.layout
          : k_.layouts.default_blocked(v->type.shape, dtype_size(v->type.dtype), k_.threads);
  std::string L = layout_name(l);
  std::string T = storage_type(v->type.dtype);
  std::string dst = shared_ptr(v);
  std::string index = smem_index(v, str(L, "::r(tj_e)"), str(L, "::c(tj_e)"));
  if (writes_pairs(*v, value, l)) {
    // Elements e and e + 1 (e even) of a tensor-core accumulator are columns c and c + 1 of a
    // row, next to each other in the tile (the swizzle moves 16-byte runs whole): one 32- or
    // 64-bit store per pair, half the stores and their address arithmetic (attention's ds^T:
    // 32 values per thread every iteration).
    line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; tj_e += 2) if (", L,
             "::valid(tj_e)) tj::store_pair(", dst, " + ", index, ", tj::cvt<", T, ">(",
             elem(value, l, "tj_e"), "), tj::cvt<", T, ">(", elem(value, l, "(tj_e + 1)"), "));"));
    return;
  }
  line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) if (", L, "::valid(tj_e)) ",
           dst, "[", index, "] = tj::cvt<", T, ">(",
           elem(value, value.type.is_scalar() ? nullptr : l, "tj_e"), ");"));
}

bool Emitter::writes_pairs(const ir::Var& v, const ir::Expr& value, const ir::Layout* l) const {
  if (value.type.is_scalar() || !l || l->kind != LayoutKind::MmaAcc || v.type.rank() != 2)
    return false;
  const int size = dtype_size(v.type.dtype);
  if (size != 2 && size != 4) return false;
  // A pair is both valid or neither (an even column count), and starts at an even offset
  // (swizzled runs of 8; plain rows of an even stride from an aligned tile).
  if (v.type.shape[1] % 2 != 0) return false;
  return v.smem_swizzle || v.smem_row_stride % 2 == 0;
}

void Emitter::emit_bulk_atomic(const ir::Expr& e) {
  const ir::Access& a = *e.access;
  prepare(*e.a); // a value from registers: written to its tile, fenced, a barrier
  line(str("// ", ir::print_expr(e)));
  std::string src;
  int64_t pitch = 0;
  const ir::Var* tile = e.a->var; // the tile, or the one a value is staged in
  if (tile && tile->smem_swizzle) {
    if (e.a->kind != ExprKind::VarRef) (void)materialized_.at(e.a.get()); // written, fenced
    AccessPlan p = plan_access(*this, a);
    emit_bounds_checks(*this, a, p, e, e.layout, nullptr);
    const size_t rank = a.indices.size();
    const int64_t rows = swizzled_rows(*tile), cols = e.type.shape[1];
    const std::string map = tma_map(a.param, static_cast<int>(rows), 32, 128);
    const std::string coords = tma_coordinates(p, rank);
    // One thread adds the tile, box by box (the TMA clips rows and columns past the tensor).
    open(in_reducer_ ? "if (tj::lane_id() == 0)" : "if (threadIdx.x == 0)");
    line(str("tj::tma_reduce_add_sw128<", rank, ", ", cols / 32, ", ", rows, ">(", shared_ptr(tile),
             ", &", map, ", ", coords, ");"));
    line("tj::bulk_commit();");
    close();
    if (in_reducer_) line("tj::bulk_wait_read(); // the additions have read the staged tile");
    return;
  }
  if (e.a->kind == ExprKind::VarRef) {
    TJ_ICHECK(!e.a->var->smem_swizzle, "a bulk atomic_add of a swizzled tile");
    src = shared_ptr(e.a->var);
    pitch = e.a->var->smem_row_stride;
  } else {
    const Value& staged = materialized_.at(e.a.get());
    src = staged.name;
    pitch = staged.row_stride;
  }
  AccessPlan p = plan_access(*this, a);
  emit_bounds_checks(*this, a, p, e, e.layout, nullptr);
  const size_t r = a.indices.size();
  const int64_t rows = e.type.shape[0], cols = e.type.shape[1];
  // One row per thread (rows past the block's threads: again; the reducing warp: per lane):
  // the row's run of the last dimension that exists, from its first column on or after 0.
  if (in_reducer_)
    open(str("for (int tj_r = tj::lane_id(); tj_r < ", rows, "; tj_r += 32)"));
  else
    open(str("for (int tj_r = threadIdx.x; tj_r < ", rows, "; tj_r += ", k_.threads, ")"));
  std::vector<std::string> ix(p.hoisted.begin(), p.hoisted.end());
  ix[r - 2] = str("(", p.hoisted[r - 2], " + tj_r)");
  ix.pop_back();
  line(str("if (!(", in_bounds(p, ix), ")) continue;"));
  line(str("const int tj_skip = ", p.hoisted[r - 1], " < 0 ? -", p.hoisted[r - 1], " : 0;"));
  line(str("const int tj_n = min(", cols, ", static_cast<int>(", extent(p, r - 1), " - ",
           p.hoisted[r - 1], ")) - tj_skip;"));
  ix.push_back(str("(", p.hoisted[r - 1], " + tj_skip)"));
  const std::string stride =
      p.param->vector_aligned ? std::string("1")
                              : str("static_cast<long long>(", p.tensor, ".stride[", r - 1, "])");
  line(str("tj::bulk_add_row(&", p.tensor, ".ptr[", offset(p, ix), "], ", stride, ", ", src,
           " + tj_r * ", pitch, " + tj_skip, tj_n);"));
  close();
  // Before the tile is written again its rows must have been read: the issuing threads wait
  // for that at the next barrier (sync_threads), which comes before any write of the tile
  // (insert-barriers puts one between this read and the next write). Not here: waiting at once
  // held the issuing warps for the engine's reads while the others ran on.
  line("tj::bulk_commit();");
  // The reducing warp hands the tile back (its next statement) once the rows are read.
  if (in_reducer_) line("tj::bulk_wait_read(); // the additions have read the staged rows");
}

void Emitter::emit_tile_atomic(const ir::Expr& e) {
  if (e.bulk) return emit_bulk_atomic(e);
  const ir::Access& a = *e.access;
  prepare(*e.a);
  if (e.b) prepare(*e.b);
  line(str("// ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  const ir::Layout* l = e.layout;
  std::string L = layout_name(l);
  std::string T = storage_type(p.param->dtype);
  emit_bounds_checks(*this, a, p, e, l, e.b.get());
  if (const StreamNames* sn = stream_of(&e)) return emit_stream_write(*e.a, e.b.get(), l, *sn);
  // f32 pairs of adjacent columns (a tensor-core accumulator's): one vector reduction each
  // (red.global.add.v2.f32 on sm_90), half the atomic instructions of dq's split-K sum.
  if (!e.b && T == "float" && !e.a->type.is_scalar() && vector_width(*this, a, p, l, e) == 2) {
    const std::string inside = tile_inside(p, a);
    if (!inside.empty()) {
      // The whole tile inside the tensor (one test, the same for every thread): no test per
      // pair. Per pair the checks and the straddling case's branches cost more instructions
      // than the reduction itself (attention's dq: 16 pairs per thread every iteration).
      open(str("if (", inside, ")"));
      open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / 2; ++tj_q)"));
      line("const int tj_e = tj_q * 2;");
      std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
      line(str("if (", L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e)) tj::atomic_add2(&",
               p.tensor, ".ptr[", offset(p, ix), "], static_cast<float>(", elem(*e.a, l, "tj_e"),
               "), static_cast<float>(", elem(*e.a, l, "(tj_e + 1)"), "));"));
      close();
      --indent_;
      line("} else {");
      ++indent_;
    }
    open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / 2; ++tj_q)"));
    line("const int tj_e = tj_q * 2;");
    std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
    line(str("if (", L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e) && ", in_bounds(p, ix, 2),
             ") tj::atomic_add2(&", p.tensor, ".ptr[", offset(p, ix), "], static_cast<float>(",
             elem(*e.a, l, "tj_e"), "), static_cast<float>(", elem(*e.a, l, "(tj_e + 1)"), "));"));
    line(str("else if (", L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e))"));
    // The pair straddles the tensor's edge: each element that exists on its own.
    open("TJ_UNROLL for (int tj_w = 0; tj_w < 2; ++tj_w)");
    line("const int tj_e1 = tj_e + tj_w;");
    std::vector<std::string> ix1 = element_indices(*this, a, p, e, l, "tj_e1");
    line(str("if (", in_bounds(p, ix1), ") atomicAdd(&", p.tensor, ".ptr[", offset(p, ix1),
             "], static_cast<float>(", elem(*e.a, l, "tj_e1"), "));"));
    close();
    close();
    if (!inside.empty()) close();
    return;
  }
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
  std::string ok = str(L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e) && ", in_bounds(p, ix));
  if (e.b) ok += str(" && ", elem(*e.b, e.b->type.is_scalar() ? nullptr : l, "tj_e"));
  line(str("if (", ok, ") atomicAdd(&", p.tensor, ".ptr[", offset(p, ix), "], static_cast<", T,
           ">(", elem(*e.a, e.a->type.is_scalar() ? nullptr : l, "tj_e"), "));"));
  close();
}

static std::string tile_inside(const AccessPlan& p, const ir::Access& a) {
  if (p.gathered) return "";
  const std::string u = p.index_type == "int" ? "unsigned" : "unsigned long long";
  std::vector<std::string> parts;
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const AccessIndex& ix = a.indices[d];
    if (ix.kind == AccessIndex::Kind::Point) {
      parts.push_back(str("(static_cast<", u, ">(", p.hoisted[d], ") < static_cast<", u, ">(",
                          extent(p, d), "))"));
    } else if (ix.kind == AccessIndex::Kind::Range && ix.extent > 0) {
      parts.push_back(str("(", p.hoisted[d], " >= 0) & (", p.hoisted[d], " + ", ix.extent,
                          " <= ", extent(p, d), ")"));
    } else {
      return "";
    }
  }
  return parts.empty() ? "true" : join(parts, " & ");
}

// Each element of a prefetch's layout is the first element of one 128-byte line (assign_layouts
// sized the vectors so): one L2 prefetch per line, skipped where out of bounds.
void Emitter::emit_prefetch(const ir::Expr& e) {
  const ir::Access& a = *e.access;
  line(str("// ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  if (e.type.is_scalar()) {
    std::vector<std::string> ix = element_indices(*this, a, p, e, nullptr, "0");
    line(str("if (threadIdx.x == 0 && (", in_bounds(p, ix), ")) tj::prefetch_l2(&", p.tensor,
             ".ptr[", offset(p, ix), "]);"));
    return;
  }
  const ir::Layout* l = e.layout;
  TJ_ICHECK(l && l->kind == LayoutKind::Blocked, "prefetch without a blocked layout");
  std::string L = layout_name(l);
  preload_gather_rows(*this, a, p, l);
  open(str("TJ_UNROLL for (int tj_q = 0; tj_q < ", L, "::N / ", l->vec, "; ++tj_q)"));
  line(str("const int tj_e = tj_q * ", l->vec, ";"));
  std::vector<std::string> ix = element_indices(*this, a, p, e, l, "tj_e");
  line(str("if (", L, "::valid(tj_e) && (", in_bounds(p, ix), ")) tj::prefetch_l2(&", p.tensor,
           ".ptr[", offset(p, ix), "]);"));
  close();
}

std::string Emitter::emit_scalar_atomic(const ir::Expr& e) {
  const ir::Access& a = *e.access;
  line(str("// ", ir::print_expr(e)));
  AccessPlan p = plan_access(*this, a);
  std::string T = storage_type(p.param->dtype);
  emit_bounds_checks(*this, a, p, e, nullptr, e.b.get());
  std::vector<std::string> ix = element_indices(*this, a, p, e, nullptr, "0");
  std::string ok = in_bounds(p, ix);
  if (e.b) ok = str("(", ok, ") && ", scalar(*e.b));
  std::string name = fresh("t");
  std::string scratch = next_scratch(T, e);
  line(str("const ", T, " ", name, " = tj::atomic_add_uniform<", T, ", false>(&", p.tensor, ".ptr[",
           offset(p, ix), "], static_cast<", T, ">(", scalar(*e.a), "), ", ok, ", ", scratch,
           ");"));
  return name;
}

} // namespace tilejit::cuda
