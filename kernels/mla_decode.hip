// MLA decode over a work list (SPEC §5; aiter_mla_metadata.md §7.1): ONE stage-1
// kernel and ONE reduce kernel serve every route. Written once for hipcc and nvcc
// against kernels/gpu.hpp.
//
// Stage 1: one block per workgroup c walks works [work_indptr[c], work_indptr[c+1]).
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

#include <algorithm>
#include <cmath>

namespace mla {
namespace {

constexpr int kThreads = 256;
constexpr int kMTile = 16;              // (q row, head) pairs per chunk
constexpr int kNTile = 16;              // KV tokens per tile
constexpr int kKvRowPadBytes = 16;      // keeps 16 tile rows on distinct banks
static_assert(kMTile * kNTile == kThreads, "score layout is one (pair, token) per thread");
static_assert(2 * kThreads >= kMaxVDim, "P·V layout is two columns per thread");

constexpr float kNegInf = -INFINITY;

struct WorkRow {
  int32_t batch, ploc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad;
};

__device__ inline void record_error(int32_t* error, int32_t bit, int32_t where, int32_t value) {
  atomicOr(&error[0], bit);
  if (atomicCAS(&error[1], -1, where) == -1) error[2] = value;
}

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

__device__ inline uint16_t encode_out(ElemType t, float x) { return t == ElemType::fp16 ? encode_fp16(x) : encode_bf16(x); }

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

  const int c = blockIdx.x;
  const int32_t w_begin = p.work_indptr[c], w_end = p.work_indptr[c + 1];
  if (w_begin < 0 || w_end < w_begin || w_end > p.num_works) {
    if (tid == 0) record_error(p.error, kErrWorkIndptr, c, w_end);
    return;
  }

  // Score/softmax role.
  const int sm = tid / kNTile, sn = tid % kNTile;
  // P·V role.
  const int col = 2 * tid;
  const bool owns_cols = col < v_dim;
  const int64_t kv_row_elems = head_dim;  // the kernel's own stride (seed 002)

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    const int qn = work.qo_end - work.qo_start;
    if (qn <= 0) continue;  // no rows: nothing to compute (as the CPU executor)
    bool bad = false;
    if (work.qo_start < 0 || work.qo_end > p.num_q_rows) {
      if (tid == 0) record_error(p.error, kErrQRows, w, work.qo_end);
      bad = true;
    } else if (work.kv_end > work.kv_start && (work.kv_start < 0 || work.kv_end > p.num_kv_indices)) {
      // an empty or reversed kv range reads nothing: every row gets out 0 / lse -inf
      if (tid == 0) record_error(p.error, kErrKvRange, w, work.kv_end);
      bad = true;
    } else if (work.ploc >= 0 && int64_t(work.ploc) + qn > p.num_partial_rows) {
      if (tid == 0) record_error(p.error, kErrPartialRows, w, work.ploc);
      bad = true;
    }
    if (bad) continue;  // uniform across the block

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
      // Causal rule (§7.1): q row i of qn sees KV < kv_end - max(0, (qn-1-i) - kv_offset).
      if (tid < kMTile) {
        int end = work.kv_start;  // padding pairs of the chunk see nothing
        if (tid < chunk_pairs) {
          const int row = (chunk + tid) / heads;
          end = work.kv_end;
          if (p.causal) end -= max(0, (qn - 1 - row) - work.kv_offset);
          end = max(end, work.kv_start);
        }
        s.vis_end[tid] = end;
      }
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

// Reduce (§7.1 stage 2). One block per (tile, output row, head, 64-column slice):
//   LSE = M + ln Σ exp(lse_k − M) (+inf when the sum is 0 or NaN, as AITER);
//   out = Σ exp(lse_k − LSE) · partial[rpm[k] + r].
// The block's 256 threads are 4 split-groups × 64 columns, so a tile with
// hundreds of splits (one long request) is read by many blocks in parallel.
constexpr int kReduceThreads = 256;
constexpr int kReduceCols = 64;
constexpr int kReduceGroups = kReduceThreads / kReduceCols;
constexpr int kReduceWeightChunk = 1024;  // split weights staged in shared memory per pass

__device__ inline float block_reduce(float v, bool is_max, float* scratch) {
  // every lane of a wave holds the wave's result after the XOR butterfly
  for (int o = warp_size() / 2; o > 0; o >>= 1) {
    const float other = shfl_xor(v, o, warp_size());
    v = is_max ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % warp_size(), wave = threadIdx.x / warp_size();
  constexpr int waves = kReduceThreads / warp_size();
  __syncthreads();
  if (lane == 0) scratch[wave] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < waves; ++i) r = is_max ? fmaxf(r, scratch[i]) : r + scratch[i];
  return r;
}

__global__ void __launch_bounds__(kReduceThreads) mla_reduce_kernel(ReduceParams p, int32_t slices_per_head) {
  __shared__ float weights[kReduceWeightChunk];
  __shared__ float scratch[kReduceThreads];
  const int t = blockIdx.x, tid = threadIdx.x;
  const int32_t s = p.reduce_indptr[t], e = p.reduce_indptr[t + 1];
  if (e - s <= 1) return;  // unsplit tiles were written by stage 1
  const int32_t q0 = p.reduce_final_map[2 * t], q1 = p.reduce_final_map[2 * t + 1];
  if (q0 < 0) return;  // {-1, -1}: a tile with nothing to write
  const int rows = q1 - q0;
  bool bad = s < 0 || e > p.num_partial_map || rows < 0 || q1 > p.num_q_rows;
  for (int32_t k = s; !bad && k < e; ++k) {
    const int32_t r0 = p.reduce_partial_map[k];
    bad = r0 < 0 || int64_t(r0) + rows > p.num_partial_rows;
  }
  if (bad) {
    if (tid == 0 && blockIdx.y == 0) record_error(p.error, kErrReduceMap, t, q0);
    return;
  }
  const int heads = p.heads, v_dim = p.v_dim;
  // blockIdx.y strides over (row, head, column slice) of the tile.
  const int items = rows * heads * slices_per_head;
  for (int item = blockIdx.y; item < items; item += gridDim.y) {
    const int slice = item % slices_per_head, pair = item / slices_per_head;
    const int r = pair / heads, h = pair % heads;
    auto lse_of = [&](int32_t k) { return p.partial_lse[(int64_t(p.reduce_partial_map[k]) + r) * heads + h]; };

    float m = kNegInf;
    for (int32_t k = s + tid; k < e; k += kReduceThreads) m = fmaxf(m, lse_of(k));
    m = block_reduce(m, true, scratch);
    float sum = 0.0f;
    for (int32_t k = s + tid; k < e; k += kReduceThreads) sum += expf(lse_of(k) - m);
    sum = block_reduce(sum, false, scratch);
    const float lse = (sum == 0.0f || sum != sum) ? INFINITY : m + logf(sum);
    const int64_t out_row = (int64_t(q0) + r) * heads + h;
    if (tid == 0 && slice == 0 && p.lse) p.lse[out_row] = lse;

    const int group = tid / kReduceCols, c = slice * kReduceCols + tid % kReduceCols;
    float acc = 0.0f;
    for (int32_t k0 = s; k0 < e; k0 += kReduceWeightChunk) {
      const int32_t k1 = min(e, k0 + kReduceWeightChunk);
      __syncthreads();
      for (int32_t k = k0 + tid; k < k1; k += kReduceThreads) weights[k - k0] = expf(lse_of(k) - lse);
      __syncthreads();
      if (c < v_dim)
        for (int32_t k = k0 + group; k < k1; k += kReduceGroups) {
          const int64_t prow = (int64_t(p.reduce_partial_map[k]) + r) * heads + h;
          acc = fmaf(weights[k - k0], p.partial_out[prow * v_dim + c], acc);
        }
    }
    __syncthreads();
    scratch[tid] = acc;
    __syncthreads();
    if (group == 0 && c < v_dim) {
      for (int g = 1; g < kReduceGroups; ++g) acc += scratch[g * kReduceCols + tid];
      p.out[out_row * v_dim + c] = encode_out(p.out_type, acc);
    }
  }
}

template <ElemType KV>
bool launch_stage1_typed(const Stage1Params& p, std::string* error) {
  const size_t smem = stage1_smem_bytes(p.head_dim, Elem<KV>::bytes);
  if (!check(gpu_set_max_dynamic_shared(mla_stage1_kernel<KV>, int(smem)), "set stage-1 shared memory", error)) return false;
  mla_stage1_kernel<KV><<<dim3(p.num_workgroups), dim3(kThreads), smem, 0>>>(p);
  return check_launch("stage-1 launch", error);
}

}  // namespace

bool launch_stage1(const Stage1Params& p, std::string* error) {
  if (p.num_workgroups <= 0) return true;
  switch (p.kv_type) {
    case ElemType::bf16: return launch_stage1_typed<ElemType::bf16>(p, error);
    case ElemType::fp16: return launch_stage1_typed<ElemType::fp16>(p, error);
    case ElemType::fp8: return launch_stage1_typed<ElemType::fp8>(p, error);
  }
  if (error) *error = "stage-1: unknown KV element type";
  return false;
}

bool launch_reduce(const ReduceParams& p, std::string* error) {
  if (p.num_tiles <= 0) return true;
  if (p.max_tile_rows <= 0) return true;
  const int32_t slices = (p.v_dim + kReduceCols - 1) / kReduceCols;
  const int64_t items = int64_t(p.max_tile_rows) * p.heads * slices;
  const unsigned blocks_y = unsigned(std::min<int64_t>(items, 65535));  // grid y limit; the kernel strides
  mla_reduce_kernel<<<dim3(unsigned(p.num_tiles), blocks_y), dim3(kReduceThreads), 0, 0>>>(p, slices);
  return check_launch("reduce launch", error);
}

std::string describe_device_error(const int32_t* words) {
  if (words[0] == 0) return {};
  std::string text = "device error:";
  const struct {
    int32_t bit;
    const char* what;
  } bits[] = {
      {kErrWorkIndptr, " work_indptr out of range"},
      {kErrQRows, " a work's q rows are outside the q tensor"},
      {kErrKvRange, " a work's kv range is outside the kv index list"},
      {kErrKvSlot, " KV slot read past the end of the KV cache (slot * head_dim beyond num_slots * kv_row_stride)"},
      {kErrPartialRows, " partial rows outside the partial buffer"},
      {kErrReduceMap, " reduce map out of range"},
  };
  bool first = true;
  for (const auto& b : bits) {
    if (words[0] & b.bit) {
      text += first ? "" : ";";
      text += b.what;
      first = false;
    }
  }
  text += " (first at work/tile " + std::to_string(words[1]) + ", value " + std::to_string(words[2]) + ")";
  return text;
}

}  // namespace mla
