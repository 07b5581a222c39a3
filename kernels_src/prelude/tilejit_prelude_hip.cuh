// tilejit device prelude for the HIP target (AMD GPUs through HIPRTC): the portable single tile
// operations, their NVIDIA-only spellings replaced under TJ_AMD (types.cuh), and dot on the FMA
// units (dot_fma.cuh, gfx1030) or the MFMA matrix cores (dot_mfma.cuh, gfx90a: the MfmaAcc
// layout, tj/layouts.cuh). NVIDIA's tensor cores (mma, wgmma), TMA and clusters are NVIDIA-only
// for now: the AMD targets say so to the compiler, which refuses such
// kernels with a reason before they get here; cp.async becomes a plain copy (memory.cuh). The emitter defines TJ_WARP (64 on
// gfx90a, 32 on gfx1030) first.
#pragma once
#include "tj/column_stream.cuh"
#include "tj/dot_fma.cuh"
#include "tj/dot_mfma.cuh"
#include "tj/layouts.cuh"
#include "tj/memory.cuh"
#include "tj/reduce.cuh"
#include "tj/shared.cuh"
#include "tj/tensor.cuh"
#include "tj/tril.cuh"
#include "tj/types.cuh"
#include "tj/unpack.cuh"
