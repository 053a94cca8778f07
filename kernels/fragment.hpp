// The matrix-core fragment layer of the tensor-core stage 1 (tc::stage1_mma_kernel):
// the few operations it needs, one definition per vendor, so the kernel source is
// written once (the open performance issue: "matrix-core work goes through a
// small fragment abstraction"). Index maps: kernels/fragment_layout.hpp (no GPU
// include; unit-tested by tests/unit/test_fragment.cpp).
//
//   FragA           16 rows x 16 k of a row-major 16-bit shared-memory tile
//   FragB           16 k x kTileN columns
//   mma<F16>(c,a,b) c (16 x kTileN fp32) += a · b, bf16 or (F16) fp16 operands
//   c_row / c_col   C element -> (row, column), as the softmax and epilogue use it
//   copy16 ...      16-byte global -> shared copy with commit / wait
//
// NVIDIA (sm_80+): ldmatrix.x4 + mma.sync.m16n8k16 + cp.async, exactly the PTX
// the kernel used before the layer existed (kTileN = 8, 32 lanes).
// AMD (gfx90a, gfx94x): v_mfma_f32_16x16x16 {bf16_1k, f16} through the compiler
// builtins, fragments read from LDS with plain loads, and a plain (synchronous)
// copy in place of cp.async (kTileN = 16, wave64). Compile-checked only: no AMD
// device has run it (kernels/README.md, "AMD MFMA path").
#pragma once

#include "kernels/fragment_layout.hpp"
#include "kernels/gpu.hpp"

namespace mla {
namespace frag {

__device__ inline int offset_in(RowCol at, int stride) { return at.row * stride + at.col; }

#if defined(MLACTL_GPU_CUDA)
namespace layout = nv;
constexpr bool kAsyncCopy = true;  // cp.async: a copy overlaps the compute of the previous tile
#else
namespace layout = amd;
constexpr bool kAsyncCopy = false;  // loads land before copy16 returns; commit / wait are no-ops
#endif
// Host-visible constants (launch shapes, shared-memory sizes): the vendor's
// matrix tile. Device code takes the wave width from mla::warp_size(), which a
// kernel checks against kWaveLanes.
constexpr int kWaveLanes = layout::kLanes;
constexpr int kTileN = layout::kTileN;
constexpr int kCRowSlots = layout::kCRowSlots;
constexpr int kCElemsPerRow = layout::kCElemsPerRow;
constexpr int kRowLanes = layout::kRowLanes;
static_assert(kCRowSlots * kCElemsPerRow == 4, "a C fragment is 4 fp32 per lane on both vendors");
using layout::c_col;
using layout::c_row;

#if defined(MLACTL_GPU_CUDA)
// ---- NVIDIA: PTX ------------------------------------------------------------
__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Four 8x8 b16 matrices per ldmatrix; register i of the result holds matrix i,
// whose row addresses come from lanes 8i..8i+7.
__device__ inline void ldmatrix_x4(uint32_t r[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_address))
               : "memory");
}
__device__ inline void ldmatrix_x4_trans(uint32_t r[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_address))
               : "memory");
}
// c (16x8 fp32) += a (16x16) * b (16x8); F16 picks fp16 operands, else bf16.
template <bool F16>
__device__ inline void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  if constexpr (F16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
// 16-byte global->shared copy; src_bytes 0 writes zeros and reads nothing.
__device__ inline void cp_async16(void* dst, const void* src, int src_bytes) {
  // No memory clobber: ordering comes from cp_async_wait_all() and the barrier.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ inline void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Wait until at most `Pending` committed groups are still in flight.
template <int Pending>
__device__ inline void cp_async_wait_pending() { asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory"); }

struct FragA {
  uint32_t r[4];  // a0..a3 of the m16n8k16 A fragment (two 16-bit values each)
};
struct FragB {
  uint32_t r[2];  // b0, b1
};

// Element offsets of this lane's fragment address in a tile of `stride` elements a row.
__device__ inline int a_offset(int lane, int stride) { return offset_in(nv::ldm_a_address(lane), stride); }
__device__ inline int b_nk_offset(int lane, int stride) { return offset_in(nv::ldm_b_nk_address(lane), stride); }
__device__ inline int b_kn_offset(int lane, int stride) { return offset_in(nv::ldm_b_kn_address(lane), stride); }
__device__ inline void load_a(FragA& a, const uint16_t* lane_address) { ldmatrix_x4(a.r, lane_address); }
__device__ inline void load_b_nk_x2(FragB& k_lo, FragB& k_hi, const uint16_t* lane_address) {
  uint32_t r[4];
  ldmatrix_x4(r, lane_address);
  k_lo.r[0] = r[0], k_lo.r[1] = r[1], k_hi.r[0] = r[2], k_hi.r[1] = r[3];
}
__device__ inline void load_b_kn_x2(FragB& n_lo, FragB& n_hi, const uint16_t* lane_address, int /*stride*/) {
  uint32_t r[4];
  ldmatrix_x4_trans(r, lane_address);
  n_lo.r[0] = r[0], n_lo.r[1] = r[1], n_hi.r[0] = r[2], n_hi.r[1] = r[3];
}
template <bool F16>
__device__ inline void mma(float c[4], const FragA& a, const FragB& b) {
  mma_16816<F16>(c, a.r, b.r[0], b.r[1]);
}
__device__ inline void copy16(void* dst, const void* src, int src_bytes) { cp_async16(dst, src, src_bytes); }
__device__ inline void copy_commit() { cp_async_commit(); }
__device__ inline void copy_wait_all() { cp_async_wait_all(); }
template <int Pending>
__device__ inline void copy_wait_pending() {
  cp_async_wait_pending<Pending>();
}

#else
// ---- AMD: MFMA builtins ------------------------------------------------------
// The 16x16x16 bf16 "_1k" and f16 MFMAs exist on gfx90a and gfx94x (and gfx950);
// gfx908 has only the older bf16 form and RDNA has no MFMA at all.
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define MLACTL_HAVE_MFMA_16X16X16 1
#endif

struct FragA {
  uint32_t r[2];  // the lane's 4 consecutive k, k-order, two 16-bit values a word
};
struct FragB {
  uint32_t r[2];
};

// Element offsets of this lane's fragment address in a tile of `stride` elements a row.
__device__ inline int a_offset(int lane, int stride) { return offset_in(amd::a_address(lane), stride); }
__device__ inline int b_nk_offset(int lane, int stride) { return offset_in(amd::b_nk_address(lane), stride); }
__device__ inline int b_kn_offset(int lane, int stride) { return offset_in(amd::b_kn_address(lane), stride); }
// 8-byte aligned: the tiles' row strides and the lane's first k are multiples of 4 elements.
__device__ inline void load_a(FragA& a, const uint16_t* lane_address) {
  const uint2 v = *reinterpret_cast<const uint2*>(lane_address);
  a.r[0] = v.x, a.r[1] = v.y;
}
// B stored [n][k]: k 0-15 and k 16-31 of the lane's column.
__device__ inline void load_b_nk_x2(FragB& k_lo, FragB& k_hi, const uint16_t* lane_address) {
  const uint2 lo = *reinterpret_cast<const uint2*>(lane_address);
  const uint2 hi = *reinterpret_cast<const uint2*>(lane_address + 16);
  k_lo.r[0] = lo.x, k_lo.r[1] = lo.y, k_hi.r[0] = hi.x, k_hi.r[1] = hi.y;
}
// B stored [k][n]: one k-step, n-tiles [0, 16) and [16, 32) of the lane's 4 k rows.
__device__ inline void load_b_kn_x2(FragB& n_lo, FragB& n_hi, const uint16_t* lane_address, int stride) {
  uint32_t lo[4], hi[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    lo[i] = lane_address[i * stride];
    hi[i] = lane_address[i * stride + 16];
  }
  n_lo.r[0] = lo[0] | (lo[1] << 16), n_lo.r[1] = lo[2] | (lo[3] << 16);
  n_hi.r[0] = hi[0] | (hi[1] << 16), n_hi.r[1] = hi[2] | (hi[3] << 16);
}

// Operand vectors of the builtins (clang ext vectors; ROCm 5.2's clang 15 takes
// the bf16 operands as 4 x i16).
typedef short mfma_bf16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 mfma_f16x4 __attribute__((ext_vector_type(4)));
typedef float mfma_f32x4 __attribute__((ext_vector_type(4)));

template <bool F16>
__device__ inline void mma(float c[4], const FragA& a, const FragB& b) {
#if defined(MLACTL_HAVE_MFMA_16X16X16)
  mfma_f32x4 acc = {c[0], c[1], c[2], c[3]};
  if constexpr (F16) {
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(mfma_f16x4, a.r), __builtin_bit_cast(mfma_f16x4, b.r),
                                                acc, 0, 0, 0);
  } else {
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(mfma_bf16x4, a.r),
                                                    __builtin_bit_cast(mfma_bf16x4, b.r), acc, 0, 0, 0);
  }
  c[0] = acc[0], c[1] = acc[1], c[2] = acc[2], c[3] = acc[3];
#else
  // Host pass, or a target without these MFMAs: never launched there
  // (select_stage1 keeps AMD on the CUDA-core kernel unless asked).
  (void)c, (void)a, (void)b;
  __builtin_trap();
#endif
}
// 16-byte global->shared copy through registers; src_bytes 0 writes zeros and reads nothing.
__device__ inline void copy16(void* dst, const void* src, int src_bytes) {
  *reinterpret_cast<uint4*>(dst) = src_bytes ? *reinterpret_cast<const uint4*>(src) : make_uint4(0u, 0u, 0u, 0u);
}
__device__ inline void copy_commit() {}
__device__ inline void copy_wait_all() {}
template <int Pending>
__device__ inline void copy_wait_pending() {}
#endif

}  // namespace frag
}  // namespace mla
