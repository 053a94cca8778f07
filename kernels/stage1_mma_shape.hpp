// Shape of the tensor-core stage 1 (tc::stage1_mma_kernel, kernels/stage1_mma.hip)
// per vendor: tile sizes, waves per m-tile, KV stages and shared-memory bytes.
// Plain constexpr arithmetic with no GPU include, so the kernel and
// select_stage1 (host code: does the kernel fit this view on this vendor?) read
// the same numbers.
#pragma once
#include <cstddef>

#include "kernels/fragment_layout.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MLA_MMA_SHAPE_FN __host__ __device__ inline constexpr
#else
#define MLA_MMA_SHAPE_FN inline constexpr
#endif

namespace mla {
namespace mma_shape {

// The vendor's matrix tile as the kernel is built for it.
struct Target {
  int tile_n;       // n of one MMA: 8 (NVIDIA m16n8k16), 16 (AMD 16x16x16)
  bool async_copy;  // cp.async (NVIDIA): KV double-buffered; AMD: one buffer, filled synchronously
};
constexpr Target kNvidia{frag::nv::kTileN, true};
constexpr Target kAmd{frag::amd::kTileN, false};
constexpr size_t kAmdLdsBytes = 65536;  // LDS of gfx90a / gfx94x: the kernel must fit

constexpr int kM = 16;            // pairs per m16 tile
constexpr int kN = 32;            // tokens per KV tile
constexpr int kPStride = kN + 8;  // 16-bit elements per P row (pad: conflict-free ldmatrix)

// Waves per m-tile (4 on NVIDIA, 2 on AMD) and the P·V columns each owns (16 C tiles).
MLA_MMA_SHAPE_FN int parts(Target t) { return kN / t.tile_n; }
MLA_MMA_SHAPE_FN int cols_per_part(Target t) { return 16 * t.tile_n; }
// KV pipeline depth (tiles of 32 tokens). 2 stages beat 4 on the H200 (docs/bench_notes.md,
// "Moved from kernel comments"): a second block hiding this one's barriers matters
// more than bytes in flight; kept as a parameter for the next pipeline (fewer
// barriers per tile). AMD: one buffer, filled synchronously (two would not fit 64 KB
// of LDS with head_dim 576; a register-staged prefetch is the next step there).
MLA_MMA_SHAPE_FN int stages(Target t, bool kv_fp8) {
  return t.async_copy ? (kv_fp8 ? 2 : 2) : 1;  // per KV dtype: fp8 also stages raw bytes
}
MLA_MMA_SHAPE_FN int row_stride_elems(int head_dim) { return head_dim + 8; }  // 16-byte pad
// Dynamic shared memory of a block of g m-tiles. fp8 KV: NVIDIA stages the raw
// codes (cp.async cannot convert) and decodes them in shared memory; AMD decodes
// on the way from global memory (no staging).
MLA_MMA_SHAPE_FN size_t smem_bytes(Target t, int head_dim, bool kv_fp8, int g) {
  const size_t rows16 = size_t(row_stride_elems(head_dim)) * 2;
  const int n_stages = stages(t, kv_fp8);
  const size_t fp8_staging = t.async_copy ? n_stages * size_t(kN) * head_dim : 0;
  return g * kM * rows16 + n_stages * kN * rows16 + 2 * g * kM * kPStride * 2 + 2 * parts(t) * g * kM * 4 + g * kM * 4 +
         (kv_fp8 ? fp8_staging + 256 * 2 : 0);
}

}  // namespace mma_shape
}  // namespace mla
