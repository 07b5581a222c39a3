// Ring attention over NCCL (<tilejit/ring_attention.h>): each rank's key/value chunks travel
// the ring on a stream of their own while the attention kernels work on the ones it holds.
//
// Streams: the caller's (compute) and the group's transfer stream, ordered by events only, so
// the host never waits. A transfer waits for the compute queued before it (its send buffer is
// written, its receive buffer no longer read); compute waits for a transfer only where it
// first reads what arrived. Every rank issues the same transfers in the same order (NCCL pairs
// them by order), so a rank's sends always meet the next rank's receives.
//
// Forward, step s of world: wait for step s's chunks, start passing them on (receiving step
// s + 1's), then per block of the schedule attn_fwd into a partial (o_p, lse_p) and attn_merge
// into this rank's running result. Backward: the same with attn_bwd per block (dq by atomics
// into this rank's f32 accumulator); each key chunk's dk and dv sums (f32) travel with it one
// transfer behind (they are complete only after the step's blocks), and after the last step
// they go home to the chunk's owner.
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/nccl.h"
#include "support/error.h"
#include "workloads/attention_op_common.h"
#include "workloads/op_buffers.h"
#include "workloads/ring_attention.h"

#include <tilejit/ring_attention.h>

#include <cstring>
#include <map>
#include <string>

namespace tilejit::ops {

using namespace attention_detail;

struct RingGroup::Impl {
  Runtime* rt = nullptr;
  int world = 1, rank = 0, device = 0;
  NcclCommHandle comm = nullptr;
  cu::CUstream transfers = nullptr;
  cu::CUevent ready = nullptr;     // compute queued so far, for a transfer to wait on
  cu::CUevent kv_came = nullptr;   // the last key/value transfer
  cu::CUevent sums_came = nullptr; // the last dk/dv sums' transfer
  /// Work buffers by role, kept between calls (a call at N = 131072 needs gigabytes; cuMemAlloc
  /// and cuMemFree per call would cost more than the transfers).
  std::map<std::string, DeviceBuffer> buffers;

  /// A dense tensor of `shape` in the role's buffer, grown when too small.
  Tensor buffer(const std::string& role, DType dtype, std::vector<int64_t> shape) {
    Tensor t = Tensor::contiguous(nullptr, dtype, std::move(shape));
    t.device_index = device;
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(dtype);
    DeviceBuffer& b = buffers[role];
    if (b.size() < bytes) b = DeviceBuffer(bytes, device);
    t.data = b.data();
    return t;
  }
};

namespace {

const OpChecks forward_checks("ring_attention_forward");
const OpChecks backward_checks("ring_attention_backward");

CudaDriver& driver_on(int device) {
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  return d;
}

cu::CUstream stream_of(void* s) {
  return static_cast<cu::CUstream>(s);
}

/// Local chunk `local` (0 or 1) of a [B, H, 2C, ...] tensor: a view C long.
Tensor chunk_of(const Tensor& t, int local) {
  Tensor v = t;
  const int64_t c = t.shape[2] / 2;
  v.shape[2] = c;
  v.data = static_cast<char*>(t.data) + local * c * t.strides[2] * dtype_size(t.dtype);
  return v;
}

size_t bytes_of(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * dtype_size(t.dtype);
}

/// Passes `send` to the next rank and receives the previous rank's into `recv` (same sizes),
/// on the group's transfer stream after the compute queued so far; `came` is recorded after.
void pass_on(RingGroup::Impl& g, CudaDriver& d, cu::CUstream compute,
             const std::vector<Tensor>& send, const std::vector<Tensor>& recv, cu::CUevent came) {
  d.check(d.cuEventRecord(g.ready, compute), "cuEventRecord (ring: compute so far)");
  d.check(d.cuStreamWaitEvent(g.transfers, g.ready, 0), "cuStreamWaitEvent (ring: transfers)");
  Nccl& n = Nccl::get();
  const int next = (g.rank + 1) % g.world, prev = (g.rank + g.world - 1) % g.world;
  n.check(n.ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < send.size(); ++i) {
    n.check(n.ncclSend(send[i].data, bytes_of(send[i]), Nccl::kBytes, next, g.comm, g.transfers),
            "ncclSend (ring attention)");
    n.check(n.ncclRecv(recv[i].data, bytes_of(recv[i]), Nccl::kBytes, prev, g.comm, g.transfers),
            "ncclRecv (ring attention)");
  }
  n.check(n.ncclGroupEnd(), "ncclGroupEnd");
  d.check(d.cuEventRecord(came, g.transfers), "cuEventRecord (ring: transfer done)");
}

void wait_for(CudaDriver& d, cu::CUstream compute, cu::CUevent came) {
  d.check(d.cuStreamWaitEvent(compute, came, 0), "cuStreamWaitEvent (ring: compute)");
}

/// Fills a dense f32 tensor with `bits` (0: zeros, 0xff800000: -inf) on `stream`.
void fill_f32(CudaDriver& d, const Tensor& t, unsigned bits, cu::CUstream stream) {
  if (t.numel() == 0) return;
  d.check(d.cuMemsetD32Async(reinterpret_cast<cu::CUdeviceptr>(t.data), bits,
                             static_cast<size_t>(t.numel()), stream),
          "cuMemsetD32Async (ring attention)");
}

/// The shapes every rank shares: an even local length (two chunks), k and v dense.
void check_ring_shapes(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_qkv(c, q, k, v);
  if (q.shape[2] % 2 != 0)
    throw Error(str(c.named("q", q), " holds ", q.shape[2],
                    " positions, not two equal zigzag chunks (the ring splits a sequence of N = "
                    "2 * world * C positions; pad it to a multiple of 2 * world)"));
  c.contiguous("k", k);
  c.contiguous("v", v);
}

/// What the kernels of one block take (generics and the Hopper tiles' fallback).
LaunchOptions block_options(Runtime& rt, const Tensor& q, bool causal, bool backward,
                            void* stream) {
  LaunchOptions lo;
  lo.stream = stream;
  lo.config = kernel_config({}, q, causal, false);
  const workloads::AttentionTileCase tiles = tile_case(q, causal, q.shape[2] / 2, 0);
  if (hopper_tiles(rt, tiles))
    lo.fallback = backward ? workloads::backward_tile(tiles, /*atomic_dq=*/true)
                           : workloads::forward_tile(tiles);
  if (backward) lo.config["ATOMIC_DQ"] = "1";
  return lo;
}

LaunchOptions elementwise_options(const Tensor& q, void* stream) {
  LaunchOptions lo;
  lo.stream = stream;
  lo.config = {{"D", tile_width(q.shape[3])}};
  return lo;
}

} // namespace

RingGroup::Id RingGroup::new_id() {
  Nccl& n = Nccl::get();
  NcclId id;
  n.check(n.ncclGetUniqueId(&id), "ncclGetUniqueId");
  Id out;
  std::memcpy(out.data(), id.bytes.data(), out.size());
  return out;
}

RingGroup::RingGroup(Runtime& rt, const Id& id, int world, int rank)
    : impl_(std::make_unique<Impl>()) {
  if (world < 1 || world > 65536)
    throw Error(str("ring attention: world = ", world, " ranks is not in 1..65536"));
  if (rank < 0 || rank >= world)
    throw Error(str("ring attention: rank ", rank, " is not one of the world's 0..", world - 1));
  Nccl& n = Nccl::get();
  rt.require_gpu();
  Impl& g = *impl_;
  g.rt = &rt;
  g.world = world;
  g.rank = rank;
  g.device = rt.device_ordinal();
  CudaDriver& d = driver_on(g.device);
  NcclId nid;
  std::memcpy(nid.bytes.data(), id.data(), id.size());
  // NCCL takes the device from the CUDA runtime's current one, which follows the context
  // driver_on made current on this thread.
  n.check(n.ncclCommInitRank(&g.comm, world, nid, rank), "ncclCommInitRank");
  d.check(d.cuStreamCreate(&g.transfers, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  for (cu::CUevent* e : {&g.ready, &g.kv_came, &g.sums_came})
    d.check(d.cuEventCreate(e, 2 /* CU_EVENT_DISABLE_TIMING */), "cuEventCreate");
}

RingGroup::~RingGroup() {
  Impl& g = *impl_;
  if (g.comm) Nccl::get().ncclCommDestroy(g.comm); // loaded: the constructor got this far
  if (!CudaDriver::available()) return;
  CudaDriver& d = CudaDriver::get();
  if (g.transfers) d.cuStreamSynchronize(g.transfers);
  for (cu::CUevent e : {g.ready, g.kv_came, g.sums_came})
    if (e) d.cuEventDestroy(e);
  if (g.transfers) d.cuStreamDestroy(g.transfers);
}

int RingGroup::world() const {
  return impl_->world;
}
int RingGroup::rank() const {
  return impl_->rank;
}
int RingGroup::device() const {
  return impl_->device;
}

std::array<std::array<int64_t, 2>, 2> ring_local_positions(int world, int rank, int64_t chunk) {
  std::array<std::array<int64_t, 2>, 2> out{};
  for (int local = 0; local < 2; ++local) {
    const int64_t c = workloads::ring_chunk(world, rank, local);
    out[local] = {c * chunk, (c + 1) * chunk};
  }
  return out;
}

void check_ring_attention_forward(const RingAttentionForwardArgs& a) {
  const OpChecks& c = forward_checks;
  check_ring_shapes(c, a.q, a.k, a.v);
  if (a.o) check_like(c, "o", *a.o, a.q, "q's shape and dtype");
  if (a.lse) check_lse(c, *a.lse, a.q);
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"o", a.o ? &*a.o : nullptr},
                {"lse", a.lse ? &*a.lse : nullptr}});
}

AttentionForwardResult ring_attention_forward(Runtime& rt, RingGroup& ring,
                                              const RingAttentionForwardArgs& a) {
  check_ring_attention_forward(a);
  RingGroup::Impl& g = ring.impl();
  const Tensor& q = a.q;
  if (q.device_index != g.device)
    throw Error(str(forward_checks.named("q", q), " is not on the ring's GPU cuda:", g.device));
  AttentionForwardResult out;
  auto owned = std::make_shared<OwnedBuffers>();
  out.o = a.o ? *a.o : owned->allocate(q.dtype, q.shape, g.device);
  out.lse =
      a.lse ? *a.lse : owned->allocate(DType::F32, {q.shape[0], q.shape[1], q.shape[2]}, g.device);
  if (!owned->buffers.empty()) out.storage = owned;
  // Every rank has the same shapes, so every rank returns here alike (no transfer unpaired).
  if (q.numel() == 0 || a.k.numel() == 0) return out;
  CudaDriver& d = driver_on(g.device);
  const cu::CUstream compute = stream_of(a.stream);
  const int64_t c = q.shape[2] / 2;
  const std::vector<int64_t> qs = q.shape, ks = a.k.shape;
  Tensor acc = g.buffer("fwd.acc", DType::F32, qs);
  Tensor o_p = g.buffer("fwd.o_p", q.dtype, {qs[0], qs[1], c, qs[3]});
  Tensor lse_p = g.buffer("fwd.lse_p", DType::F32, {qs[0], qs[1], c});
  Tensor kv[2][2] = {{g.buffer("kv0.k", q.dtype, ks), g.buffer("kv0.v", q.dtype, ks)},
                     {g.buffer("kv1.k", q.dtype, ks), g.buffer("kv1.v", q.dtype, ks)}};
  fill_f32(d, acc, 0, compute);
  fill_f32(d, out.lse, 0xff800000u, compute); // -inf: no key seen yet
  const Arg scale = Arg::f32(static_cast<float>(scale_of(forward_checks, a.scale, q)));
  static const std::string source = kSource;
  const KernelRef fwd = rt.load(source, "attn_fwd"), merge = rt.load(source, "attn_merge");
  const LaunchOptions merge_lo = elementwise_options(q, a.stream);
  const std::vector<workloads::RingStep> steps =
      workloads::ring_schedule(g.world, g.rank, a.causal);
  for (int s = 0; s < g.world; ++s) {
    const Tensor& k = s == 0 ? a.k : kv[s % 2][0];
    const Tensor& v = s == 0 ? a.v : kv[s % 2][1];
    if (s > 0) wait_for(d, compute, g.kv_came);
    if (s + 1 < g.world)
      pass_on(g, d, compute, {k, v}, {kv[(s + 1) % 2][0], kv[(s + 1) % 2][1]}, g.kv_came);
    for (const workloads::RingBlock& blk : steps[s].blocks) {
      rt.launch(fwd,
                {Arg::of(chunk_of(q, blk.q_local)), Arg::of(chunk_of(k, blk.kv_local)),
                 Arg::of(chunk_of(v, blk.kv_local)), Arg::of(o_p), Arg::of(lse_p), scale},
                block_options(rt, q, blk.causal, false, a.stream));
      rt.launch(merge,
                {Arg::of(o_p), Arg::of(lse_p), Arg::of(chunk_of(acc, blk.q_local)),
                 Arg::of(chunk_of(out.lse, blk.q_local)), Arg::of(chunk_of(out.o, blk.q_local))},
                merge_lo);
    }
  }
  return out;
}

void check_ring_attention_backward(const RingAttentionBackwardArgs& a) {
  const OpChecks& c = backward_checks;
  check_ring_shapes(c, a.q, a.k, a.v);
  check_backward_like(c, a.q, a.k, a.o, a.lse, a.dout, a.dq, a.dk, a.dv);
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"o", &a.o},
                {"lse", &a.lse},
                {"dout", &a.dout},
                {"dq", a.dq ? &*a.dq : nullptr},
                {"dk", a.dk ? &*a.dk : nullptr},
                {"dv", a.dv ? &*a.dv : nullptr}});
}

AttentionBackwardResult ring_attention_backward(Runtime& rt, RingGroup& ring,
                                                const RingAttentionBackwardArgs& a) {
  check_ring_attention_backward(a);
  RingGroup::Impl& g = ring.impl();
  const Tensor &q = a.q, &k0 = a.k, &v0 = a.v;
  if (q.device_index != g.device)
    throw Error(str(backward_checks.named("q", q), " is not on the ring's GPU cuda:", g.device));
  AttentionBackwardResult out;
  auto owned = std::make_shared<OwnedBuffers>();
  out.dq = a.dq ? *a.dq : owned->allocate(q.dtype, q.shape, g.device);
  out.dk = a.dk ? *a.dk : owned->allocate(k0.dtype, k0.shape, g.device);
  out.dv = a.dv ? *a.dv : owned->allocate(k0.dtype, k0.shape, g.device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (q.numel() == 0 || k0.numel() == 0) return out;
  CudaDriver& d = driver_on(g.device);
  const cu::CUstream compute = stream_of(a.stream);
  const int64_t c = q.shape[2] / 2;
  const std::vector<int64_t> qs = q.shape, ks = k0.shape, part = {ks[0], ks[1], c, ks[3]};
  Tensor delta = g.buffer("bwd.delta", DType::F32, {qs[0], qs[1], qs[2]});
  Tensor dq_acc = g.buffer("bwd.dq_acc", DType::F32, qs);
  Tensor dk_p = g.buffer("bwd.dk_p", q.dtype, part), dv_p = g.buffer("bwd.dv_p", q.dtype, part);
  Tensor kv[2][2] = {{g.buffer("kv0.k", q.dtype, ks), g.buffer("kv0.v", q.dtype, ks)},
                     {g.buffer("kv1.k", q.dtype, ks), g.buffer("kv1.v", q.dtype, ks)}};
  // The dk and dv sums of the key chunks held at step s, in set s % 2 (set 0: this rank's own).
  Tensor sums[2][2] = {
      {g.buffer("sums0.dk", DType::F32, ks), g.buffer("sums0.dv", DType::F32, ks)},
      {g.buffer("sums1.dk", DType::F32, ks), g.buffer("sums1.dv", DType::F32, ks)}};
  fill_f32(d, sums[0][0], 0, compute);
  fill_f32(d, sums[0][1], 0, compute);
  const Arg scale = Arg::f32(static_cast<float>(scale_of(backward_checks, a.scale, q)));
  static const std::string source = kSource;
  const KernelRef pre = rt.load(source, "attn_bwd_pre"), bwd = rt.load(source, "attn_bwd"),
                  add = rt.load(source, "attn_add"), finish = rt.load(source, "attn_bwd_dq");
  const LaunchOptions each = elementwise_options(q, a.stream);
  LaunchOptions pre_lo = each;
  pre_lo.config["ATOMIC_DQ"] = "1"; // delta, and dq's accumulator zeroed
  rt.launch(pre, {Arg::of(a.o), Arg::of(a.dout), Arg::of(delta), Arg::of(dq_acc)}, pre_lo);
  const std::vector<workloads::RingStep> steps =
      workloads::ring_schedule(g.world, g.rank, a.causal);
  for (int s = 0; s < g.world; ++s) {
    const Tensor& k = s == 0 ? k0 : kv[s % 2][0];
    const Tensor& v = s == 0 ? v0 : kv[s % 2][1];
    const Tensor(&held)[2] = sums[s % 2];
    if (s > 0) wait_for(d, compute, g.kv_came);
    if (s + 1 < g.world)
      pass_on(g, d, compute, {k, v}, {kv[(s + 1) % 2][0], kv[(s + 1) % 2][1]}, g.kv_came);
    bool sums_here = s == 0; // step 0's sums are this rank's own, zeroed above
    for (const workloads::RingBlock& blk : steps[s].blocks) {
      const Tensor lse_c = chunk_of(a.lse, blk.q_local), delta_c = chunk_of(delta, blk.q_local);
      rt.launch(bwd,
                {Arg::of(chunk_of(q, blk.q_local)), Arg::of(chunk_of(k, blk.kv_local)),
                 Arg::of(chunk_of(v, blk.kv_local)), Arg::of(chunk_of(a.dout, blk.q_local)),
                 Arg::of(lse_c), Arg::of(delta_c), Arg::of(dk_p), Arg::of(dv_p),
                 Arg::of(chunk_of(dq_acc, blk.q_local)), scale},
                block_options(rt, q, blk.causal, true, a.stream));
      // The sums came from the previous rank one transfer behind the keys: waited for only
      // here, after the step's first block, so that their transfer overlaps it.
      if (!sums_here) {
        wait_for(d, compute, g.sums_came);
        sums_here = true;
      }
      rt.launch(add, {Arg::of(dk_p), Arg::of(chunk_of(held[0], blk.kv_local)), Arg::of(dk_p)},
                each);
      rt.launch(add, {Arg::of(dv_p), Arg::of(chunk_of(held[1], blk.kv_local)), Arg::of(dv_p)},
                each);
    }
    if (!sums_here) wait_for(d, compute, g.sums_came);
    // Complete for this step: on to the next rank (after the last step, to their owner).
    if (g.world > 1)
      pass_on(g, d, compute, {held[0], held[1]}, {sums[(s + 1) % 2][0], sums[(s + 1) % 2][1]},
              g.sums_came);
  }
  if (g.world > 1) wait_for(d, compute, g.sums_came);
  // After the last transfer this rank's own sums are back (set world % 2); alone, never left.
  const Tensor(&own)[2] = sums[g.world > 1 ? g.world % 2 : 0];
  rt.launch(finish, {Arg::of(own[0]), Arg::of(out.dk)}, each);
  rt.launch(finish, {Arg::of(own[1]), Arg::of(out.dv)}, each);
  rt.launch(finish, {Arg::of(dq_acc), Arg::of(out.dq)}, each);
  return out;
}

} // namespace tilejit::ops
