// The CUDA C++ backend: turns a fully lowered kernel (every pass run) into readable CUDA
// source for NVRTC. Register tiles become per-thread arrays indexed through their layout's
// prelude type; elementwise expressions fuse into one loop over a tile's elements; every
// statement is preceded by a #line directive naming its .tile line.
//
// The emitter is split by concern: cuda_emitter.cpp (kernel, statements, loops),
// cuda_elementwise.cpp (fused element expressions and materialised temporaries),
// cuda_access.cpp (global loads, stores, copies, atomics), cuda_tile_ops.cpp (dot,
// reductions, scans, layout conversions).
#pragma once

#include "compiler/cuda/cuda_column_streams.h"
#include "compiler/ir.h"
#include "compiler/target.h"

#include <map>
#include <string>
#include <vector>

namespace tilejit::cuda {

// What the emitter returns (compiler/target.h: the same for every backend).
using tilejit::BoundsSite;
using tilejit::GeneratedKernel;

/// Emits CUDA C++ for `k` (after insert_barriers).
GeneratedKernel generate_cuda(const ir::Kernel& k);

/// C++ storage type of a dtype in generated code ("tj::f16", "float", "int", ...).
std::string storage_type(DType t);
/// C++ type generated expressions compute in: f16/bf16 compute in float.
std::string compute_type(DType t);

/// How a materialised value is read.
struct Value {
  enum class Kind { Array, Shared } kind = Kind::Array;
  std::string name; ///< array name, or a shared pointer expression
  const ir::Layout* layout = nullptr;
  DType dtype = DType::F32;
  int64_t row_stride = 0; ///< Shared
  int rank = 2;           ///< Shared
};

class Emitter {
public:
  explicit Emitter(const ir::Kernel& k) : k_(k) {}
  GeneratedKernel run();

  // ---- output ----
  void line(const std::string& text);
  void open(const std::string& text); ///< "text {" and indent
  void close(const std::string& text = "}");
  void line_directive(const dsl::SourceLoc& loc);
  std::string fresh(const std::string& base);
  std::string layout_name(const ir::Layout* l);

  // ---- statements (cuda_emitter.cpp) ----
  void emit_block(const ir::Block& b);
  void emit_stmt(const ir::Stmt& s);
  /// `counter`: a variable counted with the loop (declared 0 just before it, incremented by
  /// the body's last statement, unused after it), printed in the for header instead.
  void emit_for(const ir::Stmt& s, const ir::Var* counter = nullptr);
  /// expand-pipelines' split into producer warps and the kernel's own threads.
  void emit_warp_roles(const ir::Stmt& s);
  void emit_assign(const ir::Stmt& s, bool declare);
  std::string var_name(const ir::Var* v) const;
  std::string param_name(int p) const;
  std::string shared_ptr(const ir::Var* v) const;

  // ---- expressions (cuda_elementwise.cpp) ----
  /// Emits code computing the non-elementwise parts of `e` (post-order).
  void prepare(const ir::Expr& e);
  /// A C++ expression (in compute type) for element `idx` of `e` within a loop over layout
  /// `loop`. Scalars ignore idx.
  std::string elem(const ir::Expr& e, const ir::Layout* loop, const std::string& idx);
  std::string scalar(const ir::Expr& e);
  /// `dst[e] = value` over every element of layout `l` (dst has storage dtype `t`).
  void emit_fill(const std::string& dst, DType t, const ir::Expr& value, const ir::Layout* l);
  /// Materialises `e` into a fresh array in layout `l`; returns the array name.
  std::string materialize(const ir::Expr& e, const ir::Layout* l);
  /// dot(unpack4<T>(shared words, zero), shared b) that assign_layouts gave the register path
  /// (its A operand has an MmaAcc layout): lowered to tj::dot_q4.
  static bool is_q4_dot(const ir::Expr& dot);
  /// prepare() for what a dot reads as values (a 4-bit dot: its zero points and scales).
  void prepare_dot_operands(const ir::Expr& dot);
  /// The register array that holds `value` with dtype `t` in layout `l` as it is (a
  /// materialised result or a frag variable), or "" when it must be computed element by element.
  std::string raw_array(const ir::Expr& value, DType t, const ir::Layout* l);
  std::string coord(const ir::Expr& node, const ir::Layout* loop, const std::string& idx, int axis);
  std::string literal(const ir::Expr& e);

  // ---- memory (cuda_access.cpp) ----
  void emit_load(const ir::Expr& e, const std::string& dst);
  void emit_store(const ir::Stmt& s);
  void emit_copy(const ir::Expr& e, const ir::Var* dst_var, bool in_producer);
  /// A producer's copy on the tensor memory accelerator (expand-pipelines chose it).
  void emit_tma_copy(const ir::Expr& e, const ir::Var* dst_var);
  /// The kernel parameter holding the tensor map of `param` with boxes of `box_rows` rows of
  /// `box_cols` elements (0: one 128-byte swizzle span) and that swizzle (128 or 0: none).
  std::string tma_map(int param, int box_rows, int box_cols = 0, int swizzle = 128);
  static std::string mbarriers(int64_t offset); ///< the mbarriers at a shared offset
  void emit_tile_atomic(const ir::Expr& e);
  /// atomic_add.bulk: each row of the shared tile added by the bulk copy engine (ir.h: bulk).
  void emit_bulk_atomic(const ir::Expr& e);
  /// `__syncthreads();` (with `note`): every barrier the kernel prints goes through here, so
  /// that the threads that issued bulk atomic_adds first wait until the engine has read their
  /// rows (a tile is written again only after a barrier).
  void sync_threads(const std::string& note = "");
  void emit_prefetch(const ir::Expr& e);
  std::string emit_scalar_atomic(const ir::Expr& e);
  void emit_shared_write(const ir::Var* v, const ir::Expr& value);
  /// A register tile in layout l written to shared tile v two adjacent columns at a time.
  bool writes_pairs(const ir::Var& v, const ir::Expr& value, const ir::Layout* l) const;
  int divisibility(const ir::Expr& e) const;
  /// Debug mode: the number of a new check site (1-based).
  int bounds_site(const ir::Access& a, int dim);

  // ---- column streams (cuda_column_stream_emit.cpp; cuda_column_streams.h says what) ----
  /// A staged access while its loop is being emitted: the names of its buffer and window.
  struct StreamNames {
    const StagedLoop* loop = nullptr;
    const ColumnStream* cs = nullptr;
    std::string buf;   ///< T* to the stream's first window buffer
    std::string row;   ///< first row (hoisted before the loop)
    std::string col;   ///< the current window's first column
    std::string bits;  ///< stores and atomics: the window's columns written so far
    std::string pcol;  ///< stores and atomics: the previous window's first column
    std::string pbits; ///< stores and atomics: the previous window's columns written
    std::string it;    ///< the loop's iteration count
    std::string j;     ///< the step's place in its window (set where the windows turn)
    std::string wp;    ///< the window buffer this window uses (0 or 1; the other: the next
                       ///< window's copies, or the previous window's writes going out)
  };
  /// Before a staged loop: names, hoisted rows; returns the iteration counter's name.
  std::string open_staged_loop(const StagedLoop& sl);
  /// At the statement where the windows turn (StagedLoop::first).
  void emit_window_turn(const StagedLoop& sl);
  /// Each step, after the turn: its chunk of the next window's copies and the last one's writes.
  void emit_window_chunks(const StagedLoop& sl);
  /// After the loop: the last window's writes go out; the names are dropped.
  void close_staged_loop(const StagedLoop& sl);
  const StreamNames* stream_of(const void* access_owner) const;
  /// The staged loop's streams, in the plan's order.
  std::vector<const StreamNames*> streams_of(const StagedLoop& sl) const;
  void emit_stream_load(const ir::Expr& e, const StreamNames& sn, const std::string& dst);
  void emit_stream_write(const ir::Expr& value, const ir::Expr* mask, const ir::Layout* l,
                         const StreamNames& sn);
  std::map<const ir::Stmt*, StagedLoop> staged_;
  std::map<const void*, StreamNames> active_streams_; ///< keyed by the Load/AtomicAdd or Store
  int64_t staged_bytes_ = 0;
  /// Some shared tile is read by wgmma (the async proxy): shared writes are fenced for it
  /// before every barrier, and the tiles start 1024-byte aligned.
  bool async_proxy_reads_ = false;
  /// Some atomic_add is bulk (the async proxy reads its rows): their reads of the shared rows
  /// are waited for at the next barrier, their additions at a fence(), a return and the
  /// kernel's end.
  bool bulk_atomics_ = false;
  /// Inside the producer warps' branch (one thread runs it: no thread guards) / the other
  /// threads' branch (their barriers are named ones of theirs alone).
  bool in_producer_ = false;
  /// copy(..., reuse = 1) in the producer warps' loop: the name of the copying thread's array
  /// of the coordinates that filled the tile's ring slots, and its declaration.
  std::string reuse_coordinates(const ir::Var& tile) const;
  void declare_reuse_coordinates(const ir::Block& body);
  bool in_reducer_ = false; ///< emitting the reducing warp's program (ReduceWarp)
  bool in_consumers_ = false;
  /// The element offset of (r, c) in shared tile v: rows of smem_row_stride, or wgmma's swizzle.
  std::string smem_index(const ir::Var* v, const std::string& r, const std::string& c) const;

  // ---- tile operations (cuda_tile_ops.cpp) ----
  /// `issue_into`: dst's variable, when a 16-bit wgmma dot's wgmmas are issued and left
  /// running (dot(..., issue=1)); its wait comes where the block reads it (wgmma_in_flight_).
  void emit_dot(const ir::Expr& e, const std::string& dst, bool accumulate_in_place,
                const ir::Var* issue_into = nullptr);
  /// dot(..., issue=1) results still being written by the tensor cores: the accumulator's
  /// variable, its name, its A fragments' registers and the shared tiles the dot reads.
  struct InFlightDot {
    const ir::Var* var = nullptr;
    std::string acc, a_regs;
    std::vector<const ir::Var*> shared_reads;
  };
  std::vector<InFlightDot> wgmma_in_flight_;
  /// The newest in-flight dot statement s must see done first (its index; -1: none): one whose
  /// accumulator it reads or writes, or a tile of which it writes (an if: in its condition or
  /// branches); every one before a loop, a return and a ring slot's release.
  int in_flight_needed(const ir::Stmt& s) const;
  /// Waits for the in-flight dots up to `through` (one wgmma wait: the groups complete in
  /// issue order; the later ones keep running) and hands their registers back.
  void finish_in_flight(int through);
  void finish_all_in_flight() { finish_in_flight(static_cast<int>(wgmma_in_flight_.size()) - 1); }
  void emit_reduce(const ir::Expr& e, const std::string& dst);
  std::string emit_full_reduce(const ir::Expr& e);
  void emit_scan(const ir::Expr& e, const std::string& dst);
  void emit_solve_tril(const ir::Expr& e, const std::string& dst);
  void emit_cluster_sum(const ir::Expr& e, const std::string& dst);
  void emit_convert(const ir::Expr& e, const std::string& dst);
  void emit_stage(const ir::Expr& e);

  const ir::Kernel& k_;
  std::string out_; ///< the kernel body emitted so far
  int indent_ = 1;
  int counter_ = 0;
  std::map<const ir::Expr*, Value> materialized_;
  std::map<const ir::Expr*, std::string> scalar_temps_;
  std::map<const ir::Layout*, std::string> layout_names_;
  std::vector<const ir::Layout*> layout_order_;            ///< in naming order (L0, L1, ...)
  std::map<const ir::Var*, std::string> stage_index_;      ///< ring buffers: a producer's slot
  std::map<const ir::Var*, const ir::Expr*> single_value_; ///< scalars assigned once: their value
  std::map<const ir::Var*, const ir::Stmt*> loop_of_;      ///< loop variables: their loop
  std::vector<BoundsSite> bounds_sites_;                   ///< debug mode
  std::vector<TmaMapSpec> tma_maps_;                       ///< parameters after the tensors

  // ---- scratch regions: place-scratch chose each user's half and placed the barriers; the
  // emitter prints them and checks, as it prints, that no two users in a row share a half.
  /// The scratch pointer (as T*) for `user`.
  std::string next_scratch(const std::string& type, const ir::Expr& user);
  /// Control flow hides the previous user from the check; a barrier frees both halves.
  void scratch_unknown() { scratch_known_ = false; }
  void scratch_free() { scratch_known_ = true, scratch_last_ = -1; }
  bool scratch_known_ = true;
  int scratch_last_ = -1;
};

} // namespace tilejit::cuda
