// The Tile IR: a specialised kernel (every generic and tunable is a constant) as structured
// statements over typed expression trees. Every node keeps the SourceLoc of the DSL text it
// came from, so generated code and diagnostics map back to .tile lines.
//
// Values are scalars (block-uniform), register tiles ("frag": distributed over the block's
// threads by a Layout chosen by compiler/assign_layouts) or shared-memory tiles.
#pragma once

#include "compiler/layout.h"
#include "dsl/ast.h"
#include "dsl/source.h"
#include "support/error.h"

#include <tilejit/dtype.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilejit {
class Target;
}

namespace tilejit::ir {

using dsl::SourceLoc;

enum class Space { Scalar, Frag, Shared };
const char* space_name(Space s);

/// dtype + static shape + where the value lives. A scalar has an empty shape.
struct Type {
  DType dtype = DType::I32;
  std::vector<int64_t> shape;
  Space space = Space::Scalar;

  bool is_scalar() const { return shape.empty(); }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  bool operator==(const Type& o) const {
    return dtype == o.dtype && shape == o.shape && space == o.space;
  }
  /// "f32[64, 64]" (no space) and "frag f32[64, 64]".
  std::string str() const;
  std::string str_with_space() const;
};

/// A local variable (scalar, frag or shared tile) or a loop variable.
struct Var {
  int id = 0;
  std::string name; ///< DSL name (unique within the kernel after lowering)
  Type type;
  SourceLoc loc;
  bool is_loop_var = false;
  bool assigned_in_loop = false;  ///< set by lowering: reassigned inside a loop body
  bool declared_type = false;     ///< the declaration spelled out dtype and shape
  const Layout* layout = nullptr; ///< frag vars: from assign_layouts
  int64_t smem_offset = -1;       ///< shared vars: from plan_shared_memory (bytes)
  int64_t smem_row_stride = 0;    ///< shared vars: elements between rows (padding included)
  /// Shared vars read by wgmma: 128 = stored K-major with the 128-byte swizzle
  /// (tj::swizzle128), 0 = plain rows of smem_row_stride (select-wgmma decides).
  int smem_swizzle = 0;
  int stages = 1; ///< shared vars written by a pipelined copy: ring depth
  /// Ring buffers (stages > 1), after expand-pipelines: the scalar holding the slot this
  /// iteration reads (producers write the slot their statement names).
  Var* read_slot = nullptr;
  /// Shared vars the producer warps fill before their loop (expand-pipelines): ordered by
  /// mbarriers like a ring's slots, not by barriers.
  bool by_mbarrier = false;
};

/// A kernel parameter: a global tensor (caller's or scratch) or a scalar.
struct Param {
  std::string name;
  DType dtype = DType::F32;
  bool is_tensor = false;
  bool is_scratch = false;
  bool zero_init = false;
  /// Per dim: the DSL text of the dim ("M", "128", "cdiv(MAXK, CHUNK)"), and, when it is a
  /// compile-time constant after specialisation, its value (else -1: known only at launch).
  std::vector<std::string> dim_names;
  std::vector<int64_t> dim_values;
  /// Per dim: "X" for a dimension declared 1|X (an argument of size 1 broadcasts to X; its
  /// dim_value is X's when X is a constant), else empty.
  std::vector<std::string> broadcast_to;
  /// The launcher proved the base is 16-byte aligned, the last stride is 1 and every other
  /// stride is a multiple of 16 bytes: codegen may use 16-byte vector accesses on rows.
  bool vector_aligned = false;
  /// The launcher can describe it to the tensor memory accelerator (a rank-2 or more tensor,
  /// vector_aligned, rows no shorter than their stride allows; runtime/kernel_args.h): a
  /// pipelined copy may fetch its tiles with TMA (expand-pipelines; printed " tma").
  bool tma = false;
  SourceLoc loc;
  int rank() const { return static_cast<int>(dim_names.size()); }
};

enum class ExprKind {
  Const,       ///< int_value / float_value / bool (dtype says which)
  VarRef,      ///< var
  ParamRef,    ///< scalar parameter (param index)
  DimRef,      ///< runtime size: dim `axis` of tensor parameter `param`
  ProgramId,   ///< axis
  NumPrograms, ///< axis
  Unary,       ///< unary_op, a
  Binary,      ///< binary_op, a, b
  Select,      ///< where(a, b, c)
  Math,        ///< math function `math`, args a (b)
  Cast,        ///< a converted to type.dtype
  Iota,        ///< 0..n-1 along a rank-1 tile
  Expand,      ///< a with new unit axes at `axes` (x[:, None])
  Trans,       ///< a transposed (2-D)
  Load,        ///< global tensor access -> frag (or scalar when every index is a point)
  Copy,        ///< global tensor access -> shared tile (asynchronous where possible)
  SharedSlice, ///< a shared tile's dynamic window: a[start : start + extent] along axis 0;
               ///< with axes == {0}, the single row a[start, :] (axis 0 dropped)
  Dot,         ///< a @ b (+ c): tensor cores, f32 accumulate
  Reduce,      ///< reduce `reduce_op` over `axis` (-1 = all axes -> scalar); until infer_types,
               ///< axis kSumToLike: sum_to(a, b), a summed to b's shape (b only typed)
  Scan,        ///< inclusive cumulative `reduce_op` (sum or prod) along `axis`
  SolveTril,   ///< (I + A)^-1 where A is the strictly lower part of the square tile a (its
               ///< diagonal and upper part are not read): unit lower triangular, f32
  AtomicAdd,   ///< atomic add of a to the access; scalar access returns the old value
  Fence,       ///< memory fence across the device (before a flag/counter update)
  Prefetch,    ///< hint: bring the accessed elements into L2 (no value, no effect on results)
  Convert,     ///< a moved to another layout or space (inserted by assign_layouts)
  ClusterSum,  ///< cluster_sum(a): a added element by element over the programs of a cluster
  Unpack,      ///< unpack4<T>(a[, b]): the 4-bit fields of each 32-bit word of a, along the last
               ///< axis (field i = bits 4i..4i+3 is element 8c + i), as type.dtype values 0..15,
               ///< minus b's low 4 bits (a zero point: a scalar or one per row, [R, 1])
};

enum class MathFn {
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Abs,
  Floor,
  Ceil,
  Tanh,
  Sigmoid,
  Pow,
  Min,
  Max
};
const char* math_fn_name(MathFn f);
enum class ReduceOp { Sum, Max, Min, Prod };
const char* reduce_op_name(ReduceOp op);
/// Expr::axis of a Reduce that stands for sum_to(a, b) until infer_types resolves it into
/// reductions over the axes b broadcasts along (only b's shape matters: it is never computed).
constexpr int kSumToLike = -2;

/// Expr::scratch_region of a cluster_sum that exchanges through the dead tiles' bytes.
constexpr int kExchangeRegion = 2;
/// Expr::scratch_region of an operation that takes the whole scratch area (both halves; it
/// waits for every thread before and after itself): solve_tril, whose A and X are larger than
/// any other user's need. Printed ", scratch=whole".
constexpr int kWholeScratch = 3;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// One subscript of a global tensor access.
struct AccessIndex {
  enum class Kind { Point, Range, Gather } kind = Kind::Point;
  ExprPtr index;      ///< Point: scalar; Range: start; Gather: rank-1 integer tile
  int64_t extent = 1; ///< Range: static length
  /// Written inside zip(...): the subscripts of one zip (same value: the position of the zip
  /// among the written subscripts) are paired element by element and share one tile axis.
  int zip = -1;
  AccessIndex clone() const;
};

/// tensor[indices...]: the shape is [gather lengths] ++ [range extents], in order. Each gather
/// subscript (or zip(...) of them) adds its own axis: two of them make an outer product.
struct Access {
  int param = -1;
  std::vector<AccessIndex> indices;
  SourceLoc loc;
  /// A load that unroll-loops moved ahead of the iteration that uses it, which may not run:
  /// an out-of-range point or gather subscript is reported only where its value is used.
  bool speculative = false;
  Access clone() const;
  bool is_scalar() const; ///< every index is a point
  /// Per subscript, the tile axis it runs along (-1 for a point): gather axes first, one per
  /// gather subscript or zip group, in order; then one per range, in order.
  std::vector<int> tile_axes() const;
  /// Number of gather axes (outer-product factors).
  int gather_axes() const;
  /// The tile shape (gather subscripts must be typed: their length is their tile's).
  std::vector<int64_t> shape() const;
};

struct Expr {
  ExprKind kind;
  Type type; ///< set by infer_types
  SourceLoc loc;
  const Layout* layout = nullptr; ///< frag results: set by assign_layouts
  // payload (which fields are used depends on kind)
  int64_t int_value = 0; ///< Const; Dot: 1 = exact f32 (3xTF32), 0 = f32 operands as TF32
  double float_value = 0;
  Var* var = nullptr;
  int param = -1;
  int axis = 0;
  dsl::UnaryOp unary_op{};
  dsl::BinaryOp binary_op{};
  MathFn math{};
  ReduceOp reduce_op{};
  std::vector<int> axes;          ///< Expand: positions of the new axes in the result
  int64_t extent = 0;             ///< Iota length, SharedSlice extent
  ExprPtr a, b, c;                ///< operands; Load/Copy/AtomicAdd: b = mask, c = other
  std::unique_ptr<Access> access; ///< Load, Copy, AtomicAdd
  /// Copy: may run asynchronously (cp.async), waited for by the barrier before its first
  /// read. Set by expand-pipelines: true outside pipelined loops and for a pipeline's
  /// producers; false for a copy a pipelined loop's body does for itself, whose wait would
  /// also wait for the prefetched stages.
  bool async_copy = false;
  /// Reduce, Scan, Convert to registers, uniform AtomicAdd, ClusterSum: the half of the scratch
  /// area the operation exchanges values through (place-scratch), -1 before or when it needs
  /// none; kExchangeRegion: a tile's cluster_sum where no shared tile is live, through the
  /// bytes from the start of shared memory over the dead tiles (plan-shared-memory; printed
  /// ", scratch=exchange"); kWholeScratch: both halves (solve_tril).
  int scratch_region = -1;
  bool literal = false; ///< Const written as a literal: adopts its partner's dtype
  /// Dot: 1 runs on Hopper's warpgroup tensor cores (wgmma; select-wgmma chose it, its B tile
  /// swizzled in shared memory; printed ", wgmma=1"), 2 the same, left running when the dot
  /// returns (expand-pipelines chose it: the loop's next iteration overlaps it, a `wgmma_wait`
  /// after the loop ends it; printed ", wgmma=2"), -1 must not (the DSL's `wgmma = 0`,
  /// printed ", wgmma=0"), 0 runs on mma.sync (or is not decided yet).
  int wgmma = 0;
  /// Dot: the DSL's `issue = 1`: where it runs on wgmma as a statement of its own (`frag x =
  /// dot(...)`, `x = x + dot(...)`, `x = dot(a, b, x)`), its wgmmas are issued and not waited
  /// for until a later statement of the block reads x (or the block ends, or control flow,
  /// a barrier or a wait comes first): the statements in between run while the tensor cores
  /// work. Printed ", issue=1".
  bool issue_early = false;
  /// Dot: the DSL's `shared_a = 0`: a wgmma dot's shared A tile is loaded into registers
  /// (ldmatrix) even where select-wgmma could let the tensor cores read it through a
  /// descriptor (which saves the registers but reads A's bytes from shared memory at every
  /// wgmma). Printed ", shared_a=0".
  bool registers_a = false;
  /// AtomicAdd of a tile: the DSL's `bulk = 1`. After assign-layouts it says whether the
  /// bulk copy engine adds it (the target has it and the form fits: an f32 tile whose rows
  /// are runs of the tensor's last dimension; the value then a shared tile, staged there from
  /// registers if need be; printed "atomic_add.bulk(...)"): each row one cp.reduce.async.bulk
  /// where aligned, element atomics where not. The additions complete asynchronously: a later
  /// fence(), a return and the kernel's end wait for them.
  bool bulk = false;
  /// Copy: the DSL's `reuse = 1`. In a pipelined loop whose copies producer warps issue on
  /// the TMA, the copying thread skips the copy when the ring slot it fills already holds the
  /// same block (the coordinates of the copy that last filled that slot, `stages` iterations
  /// before, are the same: a block-sparse loop's query tile, the same for all the items of a
  /// tile), and only arrives on the slot's mbarrier. The tensor is one the kernel never writes
  /// (specialise checks), so the slot's bytes are what the copy would bring again. No effect
  /// elsewhere. Printed ", reuse=1".
  bool reuse_slot = false;
  /// Copy: fetched by the tensor memory accelerator (one thread issues it, the tile's bytes
  /// signal the mbarrier at this shared-memory offset, slot by slot; expand-pipelines chose it;
  /// printed "copy.tma(..., mbarrier=OFFSET)"), -1: by the threads (cp.async or plain).
  int64_t tma_barrier = -1;

  explicit Expr(ExprKind k, SourceLoc l = {}) : kind(k), loc(std::move(l)) {}
  ExprPtr clone() const;
};

ExprPtr make_int(int64_t v, DType t = DType::I32, SourceLoc loc = {});
ExprPtr make_float(double v, DType t = DType::F32, SourceLoc loc = {});
ExprPtr make_bool(bool v, SourceLoc loc = {});
ExprPtr make_var_ref(Var* v, SourceLoc loc = {});
ExprPtr make_binary(dsl::BinaryOp op, ExprPtr a, ExprPtr b, SourceLoc loc = {});

enum class StmtKind {
  Decl,        ///< var = value (first value)
  Assign,      ///< var = value
  Store,       ///< access <- value where mask
  Eval,        ///< value evaluated for its effect (atomics, fence)
  For,         ///< for var in [lo, hi) step `step` (serial or pipelined)
  If,          ///< if cond then body else else_body
  Return,      ///< the whole block leaves the kernel
  Barrier,     ///< __syncthreads (inserted by passes)
  AsyncCommit, ///< close the group of asynchronous copies issued since the last commit
  AsyncWait,   ///< wait until at most `pending` committed groups of copies are in flight
  WgmmaWait,   ///< wait for the wgmmas still running into `var` (an accumulator tile)
  /// one thread initialises `barrier_slots` mbarriers at `barrier_offset` in shared memory,
  /// each completing a phase after `barrier_arrivals` arrivals and their bytes
  MbarrierInit,
  /// wait until mbarrier `value` (a slot) at `barrier_offset` completes phase parity `mask`;
  /// `producer_only`: only the thread that issues the TMA copies waits
  MbarrierWait,
  /// every thread arrives on mbarrier `value` (a slot) at `barrier_offset`: its reads of the
  /// ring slot are done, so the slot may be refilled (a pipeline's per-slot release)
  MbarrierArrive,
};

enum class LoopKind { Serial, Pipelined };

/// The roles an If gives the block's warps once a pipelined loop has producer warps
/// (expand-pipelines): Split divides the block into the producer warps (body: a warpgroup past
/// the kernel's threads, whose role ifs follow) and the kernel's own threads (else_body);
/// inside it CopyThread is the one thread issuing the pipeline's TMA copies and ReduceWarp the
/// warp issuing the loop's bulk atomic_adds from the tiles the other threads stage.
enum class WarpRole { None, Split, CopyThread, ReduceWarp };

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind;
  SourceLoc loc;
  Var* var = nullptr;
  ExprPtr value;                  ///< Decl/Assign value, Store value, Eval expr, If cond
  ExprPtr mask;                   ///< Store
  std::unique_ptr<Access> access; ///< Store
  ExprPtr lo, hi, step;           ///< For (step is a constant: its sign gives the direction)
  LoopKind loop_kind = LoopKind::Serial;
  int stages = 1; ///< For pipelined
  int unroll = 0; ///< For: `unroll = N` (0: the backend decides)
  /// For pipelined: `producer = 1`, its copies issued by a warpgroup of their own (the
  /// kernel's producer warps) where expand-pipelines can (printed "producer=1").
  bool producer = false;
  /// If: a role of the block's warps (`value` unused), printed "if producer_warps",
  /// "if copy_thread", "if reduce_warp"; None for an ordinary if.
  WarpRole warp_role = WarpRole::None;
  Block body;
  Block else_body;
  std::string note;            ///< Barrier, AsyncWait: why it is there (printed)
  int pending = 0;             ///< AsyncWait: groups that may still be in flight
  int64_t barrier_offset = -1; ///< MbarrierInit, MbarrierWait: the mbarriers' shared offset
  int barrier_slots = 0;       ///< MbarrierInit: how many (one per ring slot)
  int barrier_arrivals = 0;    ///< MbarrierInit: arrivals per phase (TMA copies per slot)
  /// MbarrierWait: only the thread issuing the pipeline's TMA copies waits (for the slot it
  /// refills to be released), the others go on.
  bool producer_only = false;
  /// MbarrierArrive: the thread's shared writes are fenced for the async proxy first (a tile
  /// staged for the bulk copy engine, which the arrival hands over); printed "fence_async".
  bool fence_async = false;
  /// Decl/Assign of a ring buffer (a pipelined copy's target) after expand-pipelines: the
  /// slot it fills.
  ExprPtr slot;
  /// Barrier: also wait for this thread's asynchronous copies first (a tile filled by
  /// cp.async is read after it); set by insert_barriers only where such a copy is pending, so
  /// that a barrier for an ordinary shared write does not drain a pipeline's prefetches.
  bool wait_async = false;
  /// Inside a pipelined loop's body (set by pipeline_loops): Producer statements fill a
  /// shared tile with a copy issued STAGES-1 iterations ahead; ProducerInput statements
  /// compute what those copies read (they run ahead too, and again for the consumer).
  enum class PipelineRole { None, ProducerInput, Producer } pipeline_role = PipelineRole::None;

  explicit Stmt(StmtKind k, SourceLoc l = {}) : kind(k), loc(std::move(l)) {}
};

/// One specialised kernel: what every pass reads and rewrites.
struct Kernel {
  std::string name;
  std::string source_path;
  std::string source_hash;
  /// Generic and tunable values this variant was specialised with, by name.
  std::map<std::string, std::string> bindings;
  std::vector<Param> params;
  int threads = 128;
  /// Threads launched past `threads` for a pipeline's producer warps (expand-pipelines; 0:
  /// none). `threads` stays the count every layout and block barrier is for.
  int producer_threads = 0;
  /// With producer warps: the registers per thread setmaxnreg gives the producer warps and the
  /// others (0: left as compiled).
  int producer_regs = 0;
  int consumer_regs = 0;
  /// Blocks per multiprocessor the registers must allow (the DSL's `blocks_per_sm`; 0: none
  /// asked, the backend's choice). CUDA: __launch_bounds__(threads, blocks_per_sm).
  int blocks_per_sm = 0;
  int grid_rank = 1;
  /// Programs per thread block cluster along each grid axis (1, 1, 1: no clusters).
  std::array<int, 3> cluster{1, 1, 1};
  int cluster_size() const { return cluster[0] * cluster[1] * cluster[2]; }
  std::vector<std::unique_ptr<Var>> vars;
  Block body;
  int64_t smem_bytes = 0;    ///< dynamic shared memory per block (plan_shared_memory)
  int64_t scratch_bytes = 0; ///< at offset 0: reductions, conversions, scans (plan_shared_memory)
  /// Every layout used by this kernel (assign_layouts). Mutable: looking up a layout interns it.
  mutable LayoutTable layouts;
  /// What the kernel is compiled for (warp size, matrix instructions, the emitter).
  const Target* target = nullptr;
  int smem_limit = 48 * 1024;
  /// Element offsets of every tensor fit in 31 bits: the backend indexes in 32-bit integers.
  bool index32 = false;
  /// Debug mode (CompileOptions::debug_bounds): point and gather subscripts are checked against
  /// the tensor's size and the first one out of range is reported after the launch.
  bool debug_bounds = false;
  /// The last pass run on this IR (set by the pipeline; printed first, read back by the reader).
  std::string after_pass;
  /// Whether infer-types has run: fields only it reads (Var::declared_type, Expr::literal)
  /// are printed until then.
  bool typed() const;
  /// Whether assign-layouts has run (the printer leaves default layouts unsaid from then on).
  bool laid_out() const;

  Var* new_var(std::string name, Type type, SourceLoc loc);
  /// Index of the parameter called `name`, or -1.
  int find_param(const std::string& name) const;
};

/// Visits every statement (pre-order), descending into loop and branch bodies.
/// "[64, 32]": a shape as diagnostics and the printer show it.
std::string shape_str(const std::vector<int64_t>& s);
/// NumPy broadcasting of two shapes (aligned at the last axis), as infer-types applies it;
/// nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b);

void for_each_stmt(Block& block, const std::function<void(Stmt&)>& fn);
/// Visits every expression tree root in a statement (values, masks, indices, bounds).
void for_each_expr_root(Stmt& s, const std::function<void(ExprPtr&)>& fn);
/// Visits every node of an expression tree (post-order: operands first).
void for_each_node(Expr& e, const std::function<void(Expr&)>& fn);
/// Adds to `out` every variable an expression tree reads (gather indices inside accesses and
/// the source of a layout conversion included).
void vars_read(Expr& e, std::set<Var*>& out);

/// Whether `e` refers to `v` anywhere.
bool mentions(const Expr& e, const Var* v);
/// Whether `s` (or a statement nested in it) reads `v` or assigns it.
bool mentions(const Stmt& s, const Var* v);

} // namespace tilejit::ir
