// tilejit device prelude: single tile operations that generated kernels call. NVRTC-safe: no
// host headers. Each header holds one kind of operation; none loops over a sequence or a K
// dimension, and none knows any workload.
#pragma once
#include "tj/cluster.cuh"
#include "tj/column_stream.cuh"
#include "tj/layouts.cuh"
#include "tj/memory.cuh"
#include "tj/mma.cuh"
#include "tj/mma_q4.cuh"
#include "tj/reduce.cuh"
#include "tj/shared.cuh"
#include "tj/tensor.cuh"
#include "tj/tma.cuh"
#include "tj/tril.cuh"
#include "tj/types.cuh"
#include "tj/unpack.cuh"
#include "tj/wgmma.cuh"
