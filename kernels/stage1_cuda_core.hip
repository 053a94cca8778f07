// CUDA-core stage 1 (Stage1Kernel::cuda_core): the kernel for every view and every
// vendor (docs/design.md §5; docs/stacks/vllm-rocm-aiter.md §A7.1), and what
// select_stage1 falls back to. Written once for hipcc and nvcc against
// kernels/gpu.hpp.
//
// One block per workgroup c walks works [work_indptr[c], work_indptr[c+1]).
// For a work it takes up to kMTile (q row, head) pairs at a time ("chunk"), keeps
// their q in shared memory as fp32, and streams the KV rows the work's index range
// names in tiles of kNTile tokens; each tile is loaded once and shared by every
// pair of the chunk. Scores, online softmax and the P·V accumulation are fp32.
//
// Thread layout (kThreads = 256, kMTile = kNTile = 16):
//   scores/softmax: thread = (pair m = tid / 16, token n = tid % 16); a row's 16
//     lanes are adjacent, so the row max/sum are 16-lane XOR shuffles that mean
//     the same on wave32 and wave64;
//   P·V: thread owns output columns 2·tid and 2·tid+1 for all 16 pairs.
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/stage1_launch.hpp"

namespace mla {
namespace {

constexpr int kThreads = 256;
constexpr int kMTile = 16;              // (q row, head) pairs per chunk
constexpr int kNTile = 16;              // KV tokens per tile
constexpr int kKvRowPadBytes = 16;      // keeps 16 tile rows on distinct banks
static_assert(kMTile * kNTile == kThreads, "score layout is one (pair, token) per thread");
static_assert(2 * kThreads >= kMaxVDim, "P·V layout is two columns per thread");

template <ElemType T>
struct Elem;
template <>
struct Elem<ElemType::bf16> {
  static constexpr int bytes = 2;
};
template <>
struct Elem<ElemType::fp16> {
  static constexpr int bytes = 2;
};
template <>
struct Elem<ElemType::fp8> {
  static constexpr int bytes = 1;
};

__device__ inline float decode_any(ElemType t, const void* base, int64_t i, float fp8_scale, bool fnuz) {
  switch (t) {
    case ElemType::bf16: return decode_bf16(static_cast<const uint16_t*>(base)[i]);
    case ElemType::fp16: return decode_fp16(static_cast<const uint16_t*>(base)[i]);
    default: return decode_fp8(static_cast<const uint8_t*>(base)[i], fnuz) * fp8_scale;
  }
}

// Decode 8 consecutive KV elements of a shared-memory tile row. fp8 goes through
// the block's 256-entry table (decode(code) * kv_scale, as the CPU computes it).
template <ElemType T>
__device__ inline void decode8(const uint8_t* row, int d, const float* lut, float out[8]) {
  if constexpr (T == ElemType::fp8) {
    const uint2 raw = *reinterpret_cast<const uint2*>(row + d);
#pragma unroll
    for (int j = 0; j < 4; ++j) out[j] = lut[(raw.x >> (8 * j)) & 0xffu];
#pragma unroll
    for (int j = 0; j < 4; ++j) out[4 + j] = lut[(raw.y >> (8 * j)) & 0xffu];
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(row + 2 * d);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint16_t lo = uint16_t(words[j] & 0xffffu), hi = uint16_t(words[j] >> 16);
      if constexpr (T == ElemType::bf16) {
        out[2 * j] = decode_bf16(lo);
        out[2 * j + 1] = decode_bf16(hi);
      } else {
        out[2 * j] = decode_fp16(lo);
        out[2 * j + 1] = decode_fp16(hi);
      }
    }
  }
}

// Two consecutive KV elements (P·V columns c, c+1) of a tile row.
template <ElemType T>
__device__ inline void decode2(const uint8_t* row, int c, const float* lut, float& v0, float& v1) {
  if constexpr (T == ElemType::fp8) {
    const uint16_t raw = *reinterpret_cast<const uint16_t*>(row + c);
    v0 = lut[raw & 0xffu];
    v1 = lut[raw >> 8];
  } else {
    const uint32_t raw = *reinterpret_cast<const uint32_t*>(row + 2 * c);
    if constexpr (T == ElemType::bf16) {
      v0 = decode_bf16(uint16_t(raw & 0xffffu));
      v1 = decode_bf16(uint16_t(raw >> 16));
    } else {
      v0 = decode_fp16(uint16_t(raw & 0xffffu));
      v1 = decode_fp16(uint16_t(raw >> 16));
    }
  }
}

__device__ inline float row_max16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, shfl_xor(v, o, 16));
  return v;
}
__device__ inline float row_sum16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) v += shfl_xor(v, o, 16);
  return v;
}

// Shared-memory layout of stage 1 (dynamic; head_dim decides the sizes).
struct Stage1Smem {
  float* q;        // [kMTile][head_dim] fp32
  uint8_t* kv;     // [kNTile][kv_row_bytes] raw KV bits
  float* p;        // [kMTile][kNTile] softmax numerators of the tile
  float* alpha;    // [kMTile] rescale of the running output for the tile
  float* row_max;  // [kMTile] final running max
  float* row_sum;  // [kMTile] final running sum
  int* vis_end;    // [kMTile] first KV index (into kv_indices) the pair may not see
  float* lut;      // [256] fp8 decode table
  int kv_row_bytes;
};

__host__ __device__ inline int kv_tile_row_bytes(int head_dim, int elem_bytes) {
  return head_dim * elem_bytes + kKvRowPadBytes;
}
__host__ __device__ inline size_t stage1_smem_bytes(int head_dim, int elem_bytes) {
  return size_t(kMTile) * head_dim * 4 + size_t(kNTile) * kv_tile_row_bytes(head_dim, elem_bytes) +
         size_t(kMTile) * kNTile * 4 + 3 * kMTile * 4 + kMTile * 4 + 256 * 4;
}

template <ElemType KV>
__global__ void __launch_bounds__(kThreads) mla_stage1_kernel(Stage1Params p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  constexpr int kv_bytes = Elem<KV>::bytes;
  const int tid = threadIdx.x;
  const int heads = p.heads, head_dim = p.head_dim, v_dim = p.v_dim;

  Stage1Smem s;
  s.kv_row_bytes = kv_tile_row_bytes(head_dim, kv_bytes);
  {
    uint8_t* cursor = smem_raw;
    s.q = reinterpret_cast<float*>(cursor);
    cursor += size_t(kMTile) * head_dim * 4;
    s.kv = cursor;
    cursor += size_t(kNTile) * s.kv_row_bytes;
    s.p = reinterpret_cast<float*>(cursor);
    cursor += kMTile * kNTile * 4;
    s.alpha = reinterpret_cast<float*>(cursor);
    s.row_max = s.alpha + kMTile;
    s.row_sum = s.row_max + kMTile;
    s.vis_end = reinterpret_cast<int*>(s.row_sum + kMTile);
    s.lut = reinterpret_cast<float*>(s.vis_end + kMTile);
  }
  if constexpr (KV == ElemType::fp8) {
    s.lut[tid] = decode_fp8(uint8_t(tid), p.fp8_fnuz) * p.kv_scale;  // kThreads == 256 codes
  }

  int32_t w_begin, w_end;
  if (!block_works(p, w_begin, w_end)) return;  // a malformed work_indptr (recorded)

  // Score/softmax role.
  const int sm = tid / kNTile, sn = tid % kNTile;
  // P·V role.
  const int col = 2 * tid;
  const bool owns_cols = col < v_dim;
  const int64_t kv_row_elems = head_dim;  // the kernel's own stride (seed 002)

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    const int qn = work.qo_end - work.qo_start;
    if (!work_ok(p, work, w, tid == 0)) continue;  // uniform across the block

    const int pairs = qn * heads;
    for (int chunk = 0; chunk < pairs; chunk += kMTile) {
      const int chunk_pairs = min(kMTile, pairs - chunk);
      __syncthreads();  // previous chunk's readers of q/vis_end are done

      // q of the chunk: pair m is q element row (qo_start * heads + chunk + m).
      const int64_t q_base = (int64_t(work.qo_start) * heads + chunk) * head_dim;
      for (int i = tid; i < kMTile * head_dim; i += kThreads) {
        const int m = i / head_dim;
        s.q[i] = m < chunk_pairs ? decode_any(p.q_type, p.q, q_base + i, p.q_scale, p.fp8_fnuz) : 0.0f;
      }
      if (tid < kMTile) s.vis_end[tid] = visible_end(work, qn, heads, p.causal, chunk + tid, chunk + chunk_pairs);
      __syncthreads();

      int max_end = work.kv_start, min_end = work.kv_end;
      for (int m = 0; m < chunk_pairs; ++m) {
        max_end = max(max_end, s.vis_end[m]);
        min_end = min(min_end, s.vis_end[m]);
      }

      float run_max = kNegInf, run_sum = 0.0f;  // per score-role pair sm
      float acc[kMTile][2];
#pragma unroll
      for (int m = 0; m < kMTile; ++m) acc[m][0] = acc[m][1] = 0.0f;

      for (int tile = work.kv_start; tile < max_end; tile += kNTile) {
        const int count = min(kNTile, max_end - tile);
        __syncthreads();  // previous tile's readers are done with kv/p

        // Load the tile's KV rows (raw bits, 8 bytes per step; rows past `count`
        // are zero so they contribute nothing).
        const int units_per_row = head_dim * kv_bytes / 8;
        for (int u = tid; u < kNTile * units_per_row; u += kThreads) {
          const int n = u / units_per_row, j = u % units_per_row;
          uint2 value = make_uint2(0u, 0u);
          if (n < count) {
            const int64_t slot = p.kv_indices[tile + n];
            if (slot < 0 || (slot + 1) * kv_row_elems > p.kv_elements) {
              if (j == 0) record_error(p.error, kErrKvSlot, w, int32_t(slot));
            } else {
              value = reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.kv) +
                                                     slot * kv_row_elems * kv_bytes)[j];
            }
          }
          *reinterpret_cast<uint2*>(s.kv + n * s.kv_row_bytes + 8 * j) = value;
        }
        __syncthreads();

        // Scores and online softmax for (pair sm, token sn).
        {
          const int kv_index = tile + sn;
          const bool visible = sm < chunk_pairs && kv_index < s.vis_end[sm];
          float dot = 0.0f;
          const float* qrow = s.q + sm * head_dim;
          const uint8_t* krow = s.kv + sn * s.kv_row_bytes;
          for (int d = 0; d < head_dim; d += 8) {
            float k[8];
            decode8<KV>(krow, d, s.lut, k);
            const float4 q0 = *reinterpret_cast<const float4*>(qrow + d);
            const float4 q1 = *reinterpret_cast<const float4*>(qrow + d + 4);
            dot = fmaf(q0.x, k[0], dot);
            dot = fmaf(q0.y, k[1], dot);
            dot = fmaf(q0.z, k[2], dot);
            dot = fmaf(q0.w, k[3], dot);
            dot = fmaf(q1.x, k[4], dot);
            dot = fmaf(q1.y, k[5], dot);
            dot = fmaf(q1.z, k[6], dot);
            dot = fmaf(q1.w, k[7], dot);
          }
          const float score = visible ? dot * p.softmax_scale : kNegInf;
          const float new_max = fmaxf(run_max, row_max16(score));
          // A row that has seen nothing yet keeps max -inf; exp(-inf - -inf) would be NaN.
          const float alpha = new_max == kNegInf ? 1.0f : expf(run_max - new_max);
          const float prob = visible ? expf(score - new_max) : 0.0f;
          run_sum = run_sum * alpha + row_sum16(prob);
          run_max = new_max;
          s.p[sm * kNTile + sn] = prob;
          if (sn == 0) s.alpha[sm] = alpha;
        }
        __syncthreads();

        // P·V for this thread's two columns.
        if (owns_cols) {
#pragma unroll
          for (int m = 0; m < kMTile; ++m) {
            acc[m][0] *= s.alpha[m];
            acc[m][1] *= s.alpha[m];
          }
          // Fully visible tile: plain FMAs. Otherwise a token masked for one pair
          // must not touch it at all (0 * NaN of a poisoned slot would be NaN).
          const bool all_visible = tile + count <= min_end;
          for (int n = 0; n < kNTile; ++n) {
            float v0, v1;
            decode2<KV>(s.kv + n * s.kv_row_bytes, col, s.lut, v0, v1);
            if (all_visible) {
#pragma unroll
              for (int m = 0; m < kMTile; ++m) {
                const float pm = s.p[m * kNTile + n];
                acc[m][0] = fmaf(pm, v0, acc[m][0]);
                acc[m][1] = fmaf(pm, v1, acc[m][1]);
              }
            } else {
#pragma unroll
              for (int m = 0; m < kMTile; ++m) {
                if (tile + n < s.vis_end[m]) {
                  const float pm = s.p[m * kNTile + n];
                  acc[m][0] = fmaf(pm, v0, acc[m][0]);
                  acc[m][1] = fmaf(pm, v1, acc[m][1]);
                }
              }
            }
          }
        }
      }

      if (sn == 0) {
        s.row_max[sm] = run_max;
        s.row_sum[sm] = run_sum;
      }
      __syncthreads();

      // Write the chunk: final output (rounded) + lse, or fp32 partial + lse.
      const bool final_out = work.ploc < 0;
      const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
      if (owns_cols) {
        for (int m = 0; m < chunk_pairs; ++m) {
          const float sum = s.row_sum[m];
          const bool empty = sum == 0.0f;  // no visible KV: out 0, lse -inf
          const float inv = empty ? 0.0f : 1.0f / sum;
          const float o0 = empty ? 0.0f : acc[m][0] * inv, o1 = empty ? 0.0f : acc[m][1] * inv;
          const int64_t at = (row_base + m) * v_dim + col;
          if (final_out) {
            const uint32_t packed = uint32_t(encode_out(p.out_type, o0)) | (uint32_t(encode_out(p.out_type, o1)) << 16);
            *reinterpret_cast<uint32_t*>(p.out + at) = packed;
          } else {
            *reinterpret_cast<float2*>(p.partial_out + at) = make_float2(o0, o1);
          }
        }
      }
      if (tid < chunk_pairs) {
        const float sum = s.row_sum[tid];
        const float lse = sum == 0.0f ? kNegInf : s.row_max[tid] + logf(sum);
        if (final_out) {
          if (p.lse) p.lse[row_base + tid] = lse;
        } else {
          p.partial_lse[row_base + tid] = lse;
        }
      }
    }
  }
}

template <ElemType KV>
bool launch_typed(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  const size_t smem = stage1_smem_bytes(p.head_dim, Elem<KV>::bytes);
  if (!check(gpu_set_max_dynamic_shared(mla_stage1_kernel<KV>, int(smem)), "set stage-1 shared memory", error)) return false;
  mla_stage1_kernel<KV><<<dim3(p.num_workgroups), dim3(kThreads), smem, 0>>>(p);
  if (!check_launch("stage-1 launch", error)) return false;
  static const char* const kKvNames[] = {"bf16", "fp16", "fp8"};  // ElemType's order
  *ran = Stage1Ran{Stage1Kernel::cuda_core, Stage1Schedule::cuda_core, Stage1Precision::fp32,
                   std::string("mla_stage1_kernel<") + kKvNames[int(KV)] + " KV>", int64_t(p.num_workgroups),
                   kThreads, int64_t(smem)};
  return true;
}

}  // namespace

bool launch_stage1_cuda_core(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  switch (p.kv_type) {
    case ElemType::bf16: return launch_typed<ElemType::bf16>(p, ran, error);
    case ElemType::fp16: return launch_typed<ElemType::fp16>(p, ran, error);
    case ElemType::fp8: return launch_typed<ElemType::fp8>(p, ran, error);
  }
  if (error) *error = "stage-1: unknown KV element type";
  return false;
}

}  // namespace mla
