// Tensor-core stage 1 (Stage1Kernel::mma; one source: NVIDIA mma.sync, AMD MFMA).
// Written once for hipcc and nvcc against kernels/gpu.hpp and the fragment layer
// kernels/fragment.hpp; its shape per vendor: kernels/stage1_mma_shape.hpp.
#include "kernels/fragment.hpp"
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/select_stage1.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/stage1_launch.hpp"
#include "kernels/stage1_mma_shape.hpp"

namespace mla {
namespace {

// ---- Tensor-core stage 1 (one source: NVIDIA mma.sync, AMD MFMA) -------------
//
// Same contract as mla_stage1_kernel, for the common views: 16 (q row, head) pairs
// per chunk as one m16 tile, KV tiles of 32 tokens. Matrix work goes through
// kernels/fragment.hpp: NVIDIA (sm_80+) ldmatrix + mma.sync m16n8k16 + cp.async
// (KV double-buffered), AMD (gfx90a, gfx94x) MFMA 16x16x16 from plain LDS loads
// with a synchronous copy (one KV buffer: 64 KB of LDS). A m-tile is served by
// kParts waves (4 warps on NVIDIA, 2 waves of 64 on AMD; 128 threads either way):
// for Q·Kᵀ part w owns tokens [w·kTileN, (w+1)·kTileN) of the tile (one MMA
// n-tile: 8 or 16), for P·V output columns [w·kColsPerPart, (w+1)·kColsPerPart)
// (128 or 256). Operands are 16-bit: bf16 (or fp16 when q or KV is fp16); fp8
// codes are exact in either, so the fp8 scales are applied to the scores and to
// the output instead of to the operands. P is split into hi + lo 16-bit parts
// (two MMAs) so P·V keeps ~fp32 accuracy.
// AMD builds run it only when asked (Stage1Kernel::mma, see select_stage1).
namespace tc {

// This build's vendor, in the shape select_stage1 decides with (kernels/stage1_mma_shape.hpp).
#if defined(MLACTL_GPU_CUDA)
constexpr mma_shape::Target kTarget = mma_shape::kNvidia;
#else
constexpr mma_shape::Target kTarget = mma_shape::kAmd;
#endif
static_assert(kTarget.tile_n == frag::kTileN && kTarget.async_copy == frag::kAsyncCopy,
              "select_stage1's shape of this vendor is the fragment layer's");
constexpr int kM = mma_shape::kM;                          // pairs per m16 tile
constexpr int kN = mma_shape::kN;                          // tokens per KV tile
constexpr int kParts = mma_shape::parts(kTarget);          // waves per m-tile: 4 (NVIDIA), 2 (AMD)
constexpr int kPStride = mma_shape::kPStride;              // 16-bit elements per P row (pad: conflict-free ldmatrix)
constexpr int kColsPerPart = mma_shape::cols_per_part(kTarget);  // P·V columns per wave: 16 C tiles (o[16][4])
static_assert(kParts * kColsPerPart == kMaxVDim, "the m-tile's waves cover every output column");

// A block of G x kParts waves serves G m16 tiles (16 (row, head) pairs each) from
// one KV tile: wave w works on m-tile w / kParts and on token part / column part
// w % kParts. G = 1: 128 threads, 2 blocks per SM (M1); G = 2 (NVIDIA): 256
// threads, 1 block per SM, the work's KV is streamed once per 32 pairs instead of
// once per 16 (M2, C1).
template <int G>
__host__ __device__ constexpr int warps() { return kParts * G; }
template <int G>
__host__ __device__ constexpr int threads() { return frag::kWaveLanes * warps<G>(); }

// KV pipeline depth (tiles of 32 tokens): mma_shape::stages says why 2 (NVIDIA), 1 (AMD).
template <bool KV_FP8>
__host__ __device__ constexpr int stages() {
  return mma_shape::stages(kTarget, KV_FP8);
}

// 8 fp8 codes -> 8 16-bit operands through the block's table.
__device__ inline uint4 fp8x8_to_operands(uint2 codes, const uint16_t* lut16) {
  uint4 out;
  out.x = lut16[codes.x & 0xffu] | (uint32_t(lut16[(codes.x >> 8) & 0xffu]) << 16);
  out.y = lut16[(codes.x >> 16) & 0xffu] | (uint32_t(lut16[codes.x >> 24]) << 16);
  out.z = lut16[codes.y & 0xffu] | (uint32_t(lut16[(codes.y >> 8) & 0xffu]) << 16);
  out.w = lut16[(codes.y >> 16) & 0xffu] | (uint32_t(lut16[codes.y >> 24]) << 16);
  return out;
}

using mma_shape::row_stride_elems;  // 16-byte pad
// Shared memory of a block of g m-tiles (mma_shape::smem_bytes: fp8 staging on NVIDIA only).
__host__ __device__ inline size_t smem_bytes(int head_dim, bool kv_fp8, int g) {
  return mma_shape::smem_bytes(kTarget, head_dim, kv_fp8, g);
}

// S = Q · Kᵀ of one wave's kTileN tokens: q_rows is the m-tile's first q row, k_rows the
// wave's first KV row of the tile. Four independent accumulators (k mod 64 in 16-wide
// steps): one chain of head_dim / 16 dependent MMAs was the latency of this phase.
template <bool F16>
__device__ __forceinline__ void mma_scores(const uint16_t* q_rows, const uint16_t* k_rows, int stride, int head_dim,
                                           int lane, float (&s)[4]) {
  float sa[4][4] = {};
  const uint16_t* q_row = q_rows + frag::a_offset(lane, stride);
  const uint16_t* k_row = k_rows + frag::b_nk_offset(lane, stride);
  int k0 = 0;
  for (; k0 + 64 <= head_dim; k0 += 64) {
    frag::FragA a0, a1, a2, a3;
    frag::FragB b0, b1, b2, b3;
    frag::load_a(a0, q_row + k0);
    frag::load_a(a1, q_row + k0 + 16);
    frag::load_b_nk_x2(b0, b1, k_row + k0);
    frag::load_a(a2, q_row + k0 + 32);
    frag::load_a(a3, q_row + k0 + 48);
    frag::load_b_nk_x2(b2, b3, k_row + k0 + 32);
    frag::mma<F16>(sa[0], a0, b0);
    frag::mma<F16>(sa[1], a1, b1);
    frag::mma<F16>(sa[2], a2, b2);
    frag::mma<F16>(sa[3], a3, b3);
  }
  if (k0 < head_dim) {  // head_dim % 64 == 32
    frag::FragA a0, a1;
    frag::FragB b0, b1;
    frag::load_a(a0, q_row + k0);
    frag::load_a(a1, q_row + k0 + 16);
    frag::load_b_nk_x2(b0, b1, k_row + k0);
    frag::mma<F16>(sa[0], a0, b0);
    frag::mma<F16>(sa[1], a1, b1);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) s[i] = (sa[0][i] + sa[1][i]) + (sa[2][i] + sa[3][i]);
}

// P as the A operand of P·V: the C element (row, token) goes to p_hi / p_lo[row][col],
// hi + lo = P in two 16-bit parts; a lane's kPerRow tokens are adjacent from col.
template <bool F16>
__device__ __forceinline__ void write_p(const float (&pv)[4], const int (&row)[frag::kCRowSlots], int col,
                                        uint16_t* p_hi, uint16_t* p_lo) {
  constexpr int kSlots = frag::kCRowSlots, kPerRow = frag::kCElemsPerRow;
  uint16_t hi[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) hi[e] = encode16<F16>(pv[e]);
#pragma unroll
  for (int sl = 0; sl < kSlots; ++sl) {
    if constexpr (kPerRow == 2) {
      *reinterpret_cast<uint32_t*>(p_hi + row[sl] * kPStride + col) = hi[2 * sl] | (uint32_t(hi[2 * sl + 1]) << 16);
    } else {
      p_hi[row[sl] * kPStride + col] = hi[sl];
    }
  }
  uint16_t lo[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) lo[e] = encode16<F16>(pv[e] - decode16<F16>(hi[e]));
#pragma unroll
  for (int sl = 0; sl < kSlots; ++sl) {
    if constexpr (kPerRow == 2) {
      *reinterpret_cast<uint32_t*>(p_lo + row[sl] * kPStride + col) = lo[2 * sl] | (uint32_t(lo[2 * sl + 1]) << 16);
    } else {
      p_lo[row[sl] * kPStride + col] = lo[sl];
    }
  }
}

// A chunk's output: this wave's columns of its pair rows (those below chunk_pairs), O
// times inv, as the final output (work.ploc < 0) or the split's partial rows; the
// first wave of each m-tile writes the rows' LSE (natural log).
__device__ __forceinline__ void store_chunk(const Stage1Params& p, const WorkRow& work, int chunk, int chunk_pairs,
                                            const float (&o)[16][4], const int (&row)[frag::kCRowSlots],
                                            const float (&run_max)[frag::kCRowSlots],
                                            const float (&sum)[frag::kCRowSlots], const float (&inv)[frag::kCRowSlots],
                                            int part, int lane) {
  constexpr int kSlots = frag::kCRowSlots, kPerRow = frag::kCElemsPerRow;
  const int heads = p.heads, v_dim = p.v_dim;
  const bool final_out = work.ploc < 0;
  const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = part * kColsPerPart + j * frag::kTileN + frag::c_col(lane, 0);
    if (col >= v_dim) continue;
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) {
      const int r = row[sl];
      if (r >= chunk_pairs) continue;
      const int64_t at = (row_base + r) * v_dim + col;
      if constexpr (kPerRow == 2) {
        const float x0 = o[j][2 * sl] * inv[sl], x1 = o[j][2 * sl + 1] * inv[sl];
        if (final_out) {
          *reinterpret_cast<uint32_t*>(p.out + at) =
              uint32_t(encode_out(p.out_type, x0)) | (uint32_t(encode_out(p.out_type, x1)) << 16);
        } else {
          *reinterpret_cast<float2*>(p.partial_out + at) = make_float2(x0, x1);
        }
      } else {
        const float x = o[j][sl] * inv[sl];
        if (final_out) {
          p.out[at] = encode_out(p.out_type, x);
        } else {
          p.partial_out[at] = x;
        }
      }
    }
  }
  if (part == 0 && lane % frag::kRowLanes == 0) {
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) {
      const int r = row[sl];
      if (r >= chunk_pairs) continue;
      const float lse = sum[sl] == 0.0f ? kNegInf : run_max[sl] + logf(sum[sl]);
      if (final_out) {
        if (p.lse) p.lse[row_base + r] = lse;
      } else {
        p.partial_lse[row_base + r] = lse;
      }
    }
  }
}


template <bool F16, bool KV_FP8, int G>
__global__ void __launch_bounds__(threads<G>()) stage1_mma_kernel(Stage1Params p) {
  constexpr int kLanes = warp_size();
  static_assert(kLanes == frag::kWaveLanes || !frag::kAsyncCopy, "NVIDIA: 32-lane warps");
#if defined(__GFX9__)
  static_assert(kLanes == frag::kWaveLanes, "the MFMA layouts are wave64");
#endif
  constexpr int kWarps = warps<G>();
  constexpr int kThreads = threads<G>();
  constexpr int kMG = kM * G;  // pairs per chunk
  constexpr int kSlots = frag::kCRowSlots, kPerRow = frag::kCElemsPerRow;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int mt = warp / kParts, part = warp % kParts;  // m-tile; token part / column part
  const int heads = p.heads, head_dim = p.head_dim, v_dim = p.v_dim;
  const int stride = row_stride_elems(head_dim);

  uint16_t* q_s = reinterpret_cast<uint16_t*>(smem_raw);                 // [kMG][stride]
  constexpr int kStages = stages<KV_FP8>();
  uint16_t* kv_s = q_s + kMG * stride;                                    // [kStages][kN][stride]
  uint16_t* p_hi = kv_s + kStages * kN * stride;                          // [kMG][kPStride]
  uint16_t* p_lo = p_hi + kMG * kPStride;
  float* red_max = reinterpret_cast<float*>(p_lo + kMG * kPStride);       // [kWarps][kM]
  float* red_sum = red_max + kWarps * kM;                                 // [kWarps][kM]
  int* vis_end = reinterpret_cast<int*>(red_sum + kWarps * kM);           // [kMG]
  uint8_t* raw8 = reinterpret_cast<uint8_t*>(vis_end + kMG);              // [kStages][kN][head_dim] fp8 staging (NVIDIA)
  uint16_t* lut16 = reinterpret_cast<uint16_t*>(raw8 + (frag::kAsyncCopy ? kStages * kN * head_dim : 0));  // fp8 code -> 16-bit operand

  if constexpr (KV_FP8) {
    for (int c = tid; c < 256; c += kThreads) lut16[c] = encode16<F16>(decode_fp8(uint8_t(c), p.fp8_fnuz));
  }
  const float kv_scale = KV_FP8 ? p.kv_scale : 1.0f;
  const float score_scale = p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kv_scale;

  int32_t w_begin, w_end;
  if (!block_works(p, w_begin, w_end)) return;  // a malformed work_indptr (recorded)
  const int kv_bytes_per_row = head_dim * (KV_FP8 ? 1 : 2);
  const int chunks_per_row = kv_bytes_per_row / 16;

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    const int qn = work.qo_end - work.qo_start;
    if (!work_ok(p, work, w, tid == 0)) continue;

    const int pairs = qn * heads;
    for (int chunk = 0; chunk < pairs; chunk += kMG) {
      const int chunk_pairs = min(kMG, pairs - chunk);
      __syncthreads();  // the previous chunk is done with q_s / vis_end / kv_s

      const int64_t q_base = (int64_t(work.qo_start) * heads + chunk) * head_dim;
      for (int i = tid; i < kMG * head_dim; i += kThreads) {
        const int m = i / head_dim, d = i % head_dim;
        uint16_t bits = 0;
        if (m < chunk_pairs) {
          const int64_t at = q_base + i;
          if (p.q_type == ElemType::fp8) bits = encode16<F16>(decode_fp8(static_cast<const uint8_t*>(p.q)[at], p.fp8_fnuz));
          else bits = static_cast<const uint16_t*>(p.q)[at];
        }
        q_s[m * stride + d] = bits;
      }
      if (tid < kMG) vis_end[tid] = visible_end(work, qn, heads, p.causal, chunk + tid, chunk + chunk_pairs);
      __syncthreads();
      int max_end = work.kv_start;
      for (int m = 0; m < chunk_pairs; ++m) max_end = max(max_end, vis_end[m]);

      // This lane's pair rows in every C fragment (frag::c_row): row[s] within
      // the chunk, end[s] its visible end.
      int row[kSlots], end[kSlots];
      float run_max[kSlots], run_sum[kSlots];
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        row[s] = mt * kM + frag::c_row(lane, s);
        end[s] = row[s] < chunk_pairs ? vis_end[row[s]] : work.kv_start;
        run_max[s] = kNegInf;
        run_sum[s] = 0.0f;
      }
      float o[16][4];
#pragma unroll
      for (int j = 0; j < 16; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

      // Issue the copy of the tile starting at `tile` into buffer `stage`. Four
      // threads share a row, so each thread loads one slot index per tile (a
      // per-chunk index load would serialise behind every cp.async).
      auto issue_tile = [&](int tile, int stage) {
        constexpr int kThreadsPerRow = kThreads / kN;
        if (tile < max_end) {
          const int n = tid / kThreadsPerRow;
          const uint8_t* src = static_cast<const uint8_t*>(p.kv);
          int bytes = 0;
          if (n < min(kN, max_end - tile)) {
            const int64_t slot = p.kv_indices[tile + n];
            if (slot < 0 || (slot + 1) * int64_t(head_dim) > p.kv_elements) {
              if (tid % kThreadsPerRow == 0) record_error(p.error, kErrKvSlot, w, int32_t(slot));
            } else {
              src += slot * kv_bytes_per_row;
              bytes = 16;
            }
          }
          if constexpr (KV_FP8 && !frag::kAsyncCopy) {
            // A synchronous copy: decode the 16 codes of a chunk on their way in.
            uint16_t* dst = kv_s + (size_t(stage) * kN + n) * stride;
            for (int j = tid % kThreadsPerRow; j < chunks_per_row; j += kThreadsPerRow) {
              const uint4 codes = bytes ? *reinterpret_cast<const uint4*>(src + 16 * j) : make_uint4(0u, 0u, 0u, 0u);
              *reinterpret_cast<uint4*>(dst + 16 * j) = fp8x8_to_operands(make_uint2(codes.x, codes.y), lut16);
              *reinterpret_cast<uint4*>(dst + 16 * j + 8) = fp8x8_to_operands(make_uint2(codes.z, codes.w), lut16);
            }
          } else {
            uint8_t* dst = KV_FP8 ? raw8 + (size_t(stage) * kN + n) * head_dim
                                  : reinterpret_cast<uint8_t*>(kv_s + (size_t(stage) * kN + n) * stride);
            for (int j = tid % kThreadsPerRow; j < chunks_per_row; j += kThreadsPerRow)
              frag::copy16(dst + 16 * j, src + (bytes ? 16 * j : 0), bytes);
          }
        }
        frag::copy_commit();
      };

      // Prologue: kStages-1 tiles in flight (empty groups past the end keep the
      // group count uniform, so wait_group's arithmetic holds at the tail).
#pragma unroll
      for (int i = 0; i < kStages - 1; ++i) issue_tile(work.kv_start + i * kN, i);
      int stage = 0;
      for (int tile = work.kv_start; tile < max_end; tile += kN, stage = stage + 1 == kStages ? 0 : stage + 1) {
        if constexpr (kStages == 1) {
          __syncthreads();  // everyone done with the buffer and P of the previous tile
          issue_tile(tile, 0);
        } else {
          frag::copy_wait_pending<kStages - 2>();  // this tile's group is complete
        }
        __syncthreads();  // visible to all; everyone done with the buffer refilled next, and P
        if constexpr (kStages > 1) {
          const int refill = stage == 0 ? kStages - 1 : stage - 1;  // the buffer used by the previous tile
          issue_tile(tile + (kStages - 1) * kN, refill);
        }
        uint16_t* kv_tile = kv_s + size_t(stage) * kN * stride;
        if constexpr (KV_FP8 && frag::kAsyncCopy) {
          const uint8_t* raw = raw8 + size_t(stage) * kN * head_dim;
          for (int u = tid; u < kN * head_dim / 8; u += kThreads) {
            const int n = u / (head_dim / 8), d = (u % (head_dim / 8)) * 8;
            const uint2 bytes8 = *reinterpret_cast<const uint2*>(raw + n * head_dim + d);
            *reinterpret_cast<uint4*>(kv_tile + n * stride + d) = fp8x8_to_operands(bytes8, lut16);
          }
          __syncthreads();
        }

        // S = Q · Kᵀ for this wave's kTileN tokens.
        float s[4];
        mma_scores<F16>(q_s + (mt * kM) * stride, kv_tile + (part * frag::kTileN) * stride, stride, head_dim, lane, s);
        // Mask, scale, tile max per row across the row's lanes and the m-tile's waves.
        const int t0 = tile + part * frag::kTileN + frag::c_col(lane, 0);  // token of element e: t0 + e % kPerRow
        bool vis[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          vis[e] = t0 + e % kPerRow < end[e / kPerRow];
          s[e] = vis[e] ? s[e] * score_scale : kNegInf;
        }
        float mx[kSlots];
#pragma unroll
        for (int sl = 0; sl < kSlots; ++sl) {
          mx[sl] = s[sl * kPerRow];
#pragma unroll
          for (int j = 1; j < kPerRow; ++j) mx[sl] = fmaxf(mx[sl], s[sl * kPerRow + j]);
        }
#pragma unroll
        for (int o_ = 1; o_ < frag::kRowLanes; o_ <<= 1) {
#pragma unroll
          for (int sl = 0; sl < kSlots; ++sl) mx[sl] = fmaxf(mx[sl], shfl_xor(mx[sl], o_, frag::kRowLanes));
        }
        if (lane % frag::kRowLanes == 0) {
#pragma unroll
          for (int sl = 0; sl < kSlots; ++sl) red_max[warp * kM + frag::c_row(lane, sl)] = mx[sl];
        }
        __syncthreads();
        float alpha[kSlots], pv[4];
#pragma unroll
        for (int sl = 0; sl < kSlots; ++sl) {
          float fresh = run_max[sl];
#pragma unroll
          for (int w2 = 0; w2 < kParts; ++w2) fresh = fmaxf(fresh, red_max[(mt * kParts + w2) * kM + frag::c_row(lane, sl)]);
          alpha[sl] = fresh == kNegInf ? 1.0f : expf(run_max[sl] - fresh);
          run_max[sl] = fresh;
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) pv[e] = vis[e] ? expf(s[e] - run_max[e / kPerRow]) : 0.0f;
#pragma unroll
        for (int sl = 0; sl < kSlots; ++sl) {
          run_sum[sl] = run_sum[sl] * alpha[sl] + pv[sl * kPerRow];
#pragma unroll
          for (int j = 1; j < kPerRow; ++j) run_sum[sl] += pv[sl * kPerRow + j];
        }
        write_p<F16>(pv, row, part * frag::kTileN + frag::c_col(lane, 0), p_hi, p_lo);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) o[j][e] *= alpha[e / kPerRow];
        }
        __syncthreads();  // P complete

        // O += P · V over this wave's kColsPerPart columns (two 16-token k-steps);
        // each V load is one k-step of two adjacent n-tiles.
        {
          const int a_off = frag::a_offset(lane, kPStride), v_off = frag::b_kn_offset(lane, stride);
#pragma unroll
          for (int k0 = 0; k0 < kN; k0 += 16) {
            frag::FragA ahi, alo;
            frag::load_a(ahi, p_hi + (mt * kM) * kPStride + k0 + a_off);
            frag::load_a(alo, p_lo + (mt * kM) * kPStride + k0 + a_off);
#pragma unroll
            for (int j2 = 0; j2 < 8; ++j2) {
              const int col0 = part * kColsPerPart + j2 * 2 * frag::kTileN;
              if (col0 < v_dim) {
                frag::FragB b_lo, b_hi;
                frag::load_b_kn_x2(b_lo, b_hi, kv_tile + k0 * stride + col0 + v_off, stride);
                frag::mma<F16>(o[2 * j2], ahi, b_lo);
                frag::mma<F16>(o[2 * j2], alo, b_lo);
                frag::mma<F16>(o[2 * j2 + 1], ahi, b_hi);
                frag::mma<F16>(o[2 * j2 + 1], alo, b_hi);
              }
            }
          }
        }
      }
      frag::copy_wait_all();  // the last (empty) group

      // Row sums: across the row's lanes, then across waves.
#pragma unroll
      for (int o_ = 1; o_ < frag::kRowLanes; o_ <<= 1) {
#pragma unroll
        for (int sl = 0; sl < kSlots; ++sl) run_sum[sl] += shfl_xor(run_sum[sl], o_, frag::kRowLanes);
      }
      __syncthreads();
      if (lane % frag::kRowLanes == 0) {
#pragma unroll
        for (int sl = 0; sl < kSlots; ++sl) red_sum[warp * kM + frag::c_row(lane, sl)] = run_sum[sl];
      }
      __syncthreads();
      float sum[kSlots], inv[kSlots];
#pragma unroll
      for (int sl = 0; sl < kSlots; ++sl) {
        sum[sl] = 0.0f;
#pragma unroll
        for (int w2 = 0; w2 < kParts; ++w2) sum[sl] += red_sum[(mt * kParts + w2) * kM + frag::c_row(lane, sl)];
        inv[sl] = sum[sl] == 0.0f ? 0.0f : kv_scale / sum[sl];
      }

      store_chunk(p, work, chunk, chunk_pairs, o, row, run_max, sum, inv, part, lane);
    }
  }
}

}  // namespace tc

template <bool F16, bool KV_FP8, int G>
bool launch_g(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  const size_t smem = tc::smem_bytes(p.head_dim, KV_FP8, G);
  if (!check(gpu_set_max_dynamic_shared(tc::stage1_mma_kernel<F16, KV_FP8, G>, int(smem)), "set stage-1 shared memory",
             error))
    return false;
  tc::stage1_mma_kernel<F16, KV_FP8, G><<<dim3(p.num_workgroups), dim3(tc::threads<G>()), smem, 0>>>(p);
  if (!check_launch("stage-1 (tensor core) launch", error)) return false;
  // P enters P·V as hi + lo 16-bit parts (p_hi, p_lo above).
  *ran = Stage1Ran{Stage1Kernel::mma, Stage1Schedule::mma_m16, Stage1Precision::p_split,
                   std::string("stage1_mma_kernel<") + (F16 ? "fp16" : "bf16") + (KV_FP8 ? ", fp8 KV" : "") + ", " +
                       std::to_string(G) + " m16 tiles>",
                   int64_t(p.num_workgroups), tc::threads<G>(), int64_t(smem)};
  return true;
}
// More than 16 pairs in some work (M2: 4 rows x 16 heads, C1: 128 heads): two m16
// tiles per block share each KV tile. fp8 KV keeps G = 1 (its staging buffer), and
// so does AMD (a second m-tile's q rows would not fit 64 KB of LDS).
template <bool F16, bool KV_FP8>
bool launch_typed(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  if constexpr (!KV_FP8 && frag::kAsyncCopy) {
    if (stage1_pairs(p) > tc::kM) return launch_g<F16, KV_FP8, 2>(p, ran, error);
  }
  return launch_g<F16, KV_FP8, 1>(p, ran, error);
}

}  // namespace

bool launch_stage1_mma(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
  const bool kv_fp8 = p.kv_type == ElemType::fp8;
  if (f16) return kv_fp8 ? launch_typed<true, true>(p, ran, error) : launch_typed<true, false>(p, ran, error);
  return kv_fp8 ? launch_typed<false, true>(p, ran, error) : launch_typed<false, false>(p, ran, error);
}

}  // namespace mla
