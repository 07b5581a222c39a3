// Pass plan-shared-memory: places every shared tile (declared ones, ring buffers of pipelined
// copies, operands staged for the tensor cores) and the scratch area that reductions, layout
// conversions and scans share. A tile's cluster_sum where no tile is live exchanges its values
// through the bytes from the start of shared memory, over the dead tiles (a split-K sum after
// its K loop: an accumulator-sized exchange beside the ring would not fit). Tiles whose lifetimes
// do not overlap share storage (ring buffers excepted: the pipeline synchronises them itself). Rows
// of 2-D tiles are padded by 16 bytes so that ldmatrix and column accesses avoid bank conflicts;
// tiles have at least 16 rows so that padded MMA fragments read inside the tile.
#pragma once

#include "compiler/ir.h"

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace tilejit {

/// Throws ConstraintError (compiler/specialise.h) when the kernel needs more shared memory
/// than the target allows: the tuner prunes such configurations.
void plan_shared_memory(ir::Kernel& k);

/// When each shared tile is live, in a pre-order numbering of the statements: from its first
/// to its last reference, widened to a whole loop where the tile is live across the loop's
/// back edge (used inside and outside the loop, read before it is written in the body, or a
/// pipeline's ring buffer, which the loop's prologue fills before the loop). The plan places
/// tiles by it; the IR verifier checks the plan against it.
class SharedLiveness {
public:
  explicit SharedLiveness(ir::Kernel& k);
  /// Whether two tiles may be live at once (so they need distinct storage).
  bool overlap(const ir::Var* a, const ir::Var* b) const;
  bool used(const ir::Var* v) const { return live_.count(v) > 0; }
  /// Whether the plan may give two tiles the same bytes: single buffers (a ring keeps storage
  /// of its own, as does a tile the producer warps may fill before their loop), both used,
  /// never live at once.
  bool may_share(const ir::Var* a, const ir::Var* b) const;
  /// Whether no tile (ring buffers included) is live at statement `s`: its bytes may then hold
  /// something else for the statement's duration (a cluster_sum's exchange).
  bool none_live_at(const ir::Stmt& s) const;

private:
  struct Interval {
    int64_t first = INT64_MAX, last = -1;
  };
  struct Use {
    int64_t at;
    bool write;
  };
  struct Loop {
    int64_t start, end;
  };
  void use(const ir::Var* v, bool write);
  void number(ir::Block& b);

  int64_t next_ = 0;
  std::map<const ir::Var*, std::vector<Use>> uses_;
  std::map<const ir::Var*, Interval> live_;
  std::vector<Loop> loops_;
  /// Tiles producer warps may fill before their loop (producer_outer_tiles): written when the
  /// copying thread gets there, which this program-order liveness cannot bound.
  std::set<const ir::Var*> apart_;
  std::map<const ir::Stmt*, int64_t> at_; ///< each statement's number
};

/// Bytes one buffer of a shared tile occupies (rows x padded row stride).
int64_t shared_tile_bytes(const ir::Var& v);
/// A swizzled tile's rows as its layout counts them (tj::swizzle128's ROWS): whole 16s, the
/// rows shared_tile_bytes reserves, so each block of 64 columns is ROWS rows of 128 bytes.
int64_t swizzled_rows(const ir::Var& v);

} // namespace tilejit
