// Thread block clusters (sm_90): the programs of one cluster add their values through each
// other's shared memory (DSMEM), with no round trip to global memory. What `cluster_sum`
// lowers to; the kernel carries __cluster_dims__ so that a plain launch forms the clusters.
#pragma once

#include "tj/memory.cuh"
#include "tj/types.cuh"

namespace tj {

/// Every thread of every block of the cluster arrives, then waits for all of them. Release /
/// acquire: shared memory written before it is visible to the cluster's blocks after it.
TJ_DEVICE void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
#endif
}

/// This block's rank in its cluster.
TJ_DEVICE unsigned cluster_rank() {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}

/// The shared-window address `addr` of this block, in block `rank` of the cluster.
TJ_DEVICE unsigned map_shared_rank(unsigned addr, unsigned rank) {
  unsigned out = addr;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
#endif
  return out;
}

TJ_DEVICE float load_cluster(unsigned addr, float) {
  float v = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}
TJ_DEVICE int load_cluster(unsigned addr, int) {
  int v = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
#endif
  return v;
}

/// v[e] becomes the sum over the P blocks of the cluster of their v[e], added in rank order
/// (the same result in every block). Every thread puts its values in `scratch` (N per thread,
/// element-major), the cluster syncs, each thread reads its own positions in every block, and
/// the cluster syncs again so that no block reuses or frees its scratch while others read it.
template <int P, int N, class T> TJ_DEVICE void cluster_sum_tile(T (&v)[N], T* scratch) {
  if constexpr (P > 1) {
    const int tid = threadIdx.x, threads = blockDim.x;
    TJ_UNROLL for (int e = 0; e < N; ++e) scratch[e * threads + tid] = v[e];
    cluster_sync();
    const unsigned me = cluster_rank();
    TJ_UNROLL for (int e = 0; e < N; ++e) {
      const unsigned mine = smem_addr(scratch + e * threads + tid);
      T parts[P];
      // The others' values through DSMEM, this program's own from its registers (the same
      // value: every program adds the same P values in the same order).
      TJ_UNROLL for (int r = 0; r < P; ++r)
        parts[r] = r == static_cast<int>(me) ? v[e] : load_cluster(map_shared_rank(mine, r), T());
      T s = parts[0];
      TJ_UNROLL for (int r = 1; r < P; ++r) s += parts[r];
      v[e] = s;
    }
    cluster_sync();
  }
}

/// The scalar form: every thread holds the same `value`; *out gets the cluster's sum.
template <int P, class T> TJ_DEVICE void cluster_sum(T* out, T value, T* scratch) {
  T v[1] = {value};
  if constexpr (P > 1) {
    if (threadIdx.x == 0) scratch[0] = value;
    cluster_sync();
    const unsigned mine = smem_addr(scratch);
    T s = load_cluster(map_shared_rank(mine, 0), T());
    TJ_UNROLL for (int r = 1; r < P; ++r) s += load_cluster(map_shared_rank(mine, r), T());
    v[0] = s;
    cluster_sync();
  }
  *out = v[0];
}

} // namespace tj
