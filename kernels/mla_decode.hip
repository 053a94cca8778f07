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
#include "kernels/fragment.hpp"
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/fp8x2.hpp"

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

// The visible end (an index into kv_indices) of (row, head) pair `pair` of a work
// (row = pair / heads): the causal rule of §7.1, q row i of qn sees KV entries
// < kv_end - max(0, (qn-1-i) - kv_offset); pairs at or past `pairs` (chunk padding)
// see nothing. An empty or reversed kv range reads nothing (out 0, lse -inf).
__device__ inline int visible_end(const WorkRow& w, int qn, int heads, bool causal, int pair, int pairs) {
  if (pair >= pairs) return w.kv_start;
  int end = w.kv_end;
  if (causal) end -= max(0, (qn - 1 - pair / heads) - w.kv_offset);
  return max(end, w.kv_start);
}

// A work a stage-1 kernel can run: rows to compute and every range in its
// buffers. A range error is recorded (when `report`: one thread per block) and
// the work skipped; no rows is skipped silently (as the CPU executor).
__device__ inline bool work_ok(const Stage1Params& p, const WorkRow& work, int32_t w, bool report) {
  const int qn = work.qo_end - work.qo_start;
  if (qn <= 0) return false;
  int32_t bit = 0, value = 0;
  if (work.qo_start < 0 || work.qo_end > p.num_q_rows) bit = kErrQRows, value = work.qo_end;
  else if (work.kv_end > work.kv_start && (work.kv_start < 0 || work.kv_end > p.num_kv_indices))
    bit = kErrKvRange, value = work.kv_end;
  else if (work.ploc >= 0 && int64_t(work.ploc) + qn > p.num_partial_rows)
    bit = kErrPartialRows, value = work.ploc;
  if (bit && report) record_error(p.error, bit, w, value);
  return bit == 0;
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

// Reduce (§7.1 stage 2). Grid: x = tile, y strides over (row, head, column
// slice) of the tile:
//   LSE = M + ln Σ exp(lse_k − M) (+inf when the sum is 0 or NaN, as AITER);
//   out = Σ exp(lse_k − LSE) · partial[rpm[k] + r].
// The block's 256 threads are `groups` split-groups × (256 / groups) columns;
// groups grows with the split count (reduce_split_groups), so a tile with
// hundreds of splits is read by many threads in parallel and a 2-split tile
// costs one load per thread. Every wave computes the LSE itself (no barrier).
constexpr int kReduceThreads = 256;

__device__ inline float wave_max(float v) {
  for (int o = warp_size() / 2; o > 0; o >>= 1) v = fmaxf(v, shfl_xor(v, o, warp_size()));
  return v;
}
__device__ inline float wave_sum(float v) {
  for (int o = warp_size() / 2; o > 0; o >>= 1) v += shfl_xor(v, o, warp_size());
  return v;
}

// Reduce tile t's splits [s, e) and final rows [q0, q0 + rows). False (the block
// returns) for an unsplit tile (stage 1 wrote it), a tile with nothing to write,
// or one whose maps are out of range or that has more than max_splits splits
// (recorded once as kErrReduceMap). Every partial map entry is checked by the
// block's threads together (one thread walking 256 splits was a chain of 256
// loads in every block); all threads must call it (a block-wide barrier).
struct ReduceTile {
  int32_t s, e, q0, rows;
};
__device__ inline bool reduce_tile(const ReduceParams& p, int t, int max_splits, ReduceTile* out) {
  const int32_t s = p.reduce_indptr[t], e = p.reduce_indptr[t + 1];
  if (e - s <= 1) return false;
  const int32_t q0 = p.reduce_final_map[2 * t], q1 = p.reduce_final_map[2 * t + 1];
  if (q0 < 0) return false;  // {-1, -1}
  const int rows = q1 - q0;
  bool bad = s < 0 || e > p.num_partial_map || rows < 0 || q1 > p.num_q_rows || e - s > max_splits;
  for (int32_t k = s + int32_t(threadIdx.x); !bad && k < e; k += int32_t(blockDim.x)) {
    const int32_t r0 = p.reduce_partial_map[k];
    bad = r0 < 0 || int64_t(r0) + rows > p.num_partial_rows;
  }
  if (__syncthreads_or(bad)) {
    if (threadIdx.x == 0 && blockIdx.y == 0) record_error(p.error, kErrReduceMap, t, q0);
    return false;
  }
  *out = ReduceTile{s, e, q0, rows};
  return true;
}

__global__ void __launch_bounds__(kReduceThreads) mla_reduce_kernel(ReduceParams p) {
  __shared__ float scratch[kReduceThreads];
  grid_dependency_wait();  // stage 1's partials (launched with gpu_launch_dependent)
  const int t = blockIdx.x, tid = threadIdx.x;
  ReduceTile tile;
  if (!reduce_tile(p, t, INT32_MAX, &tile)) return;  // any number of splits
  const int32_t s = tile.s, e = tile.e, q0 = tile.q0, rows = tile.rows;
  const int heads = p.heads, v_dim = p.v_dim;
  const int groups = reduce_split_groups(e - s), cols = kReduceThreads / groups;
  const int slices = (v_dim + cols - 1) / cols;
  const int group = tid / cols, lane = tid % warp_size();
  const int items = rows * heads * slices;
  for (int item = blockIdx.y; item < items; item += gridDim.y) {
    const int slice = item % slices, pair = item / slices;
    const int r = pair / heads, h = pair % heads;
    auto lse_of = [&](int32_t k) { return p.partial_lse[(int64_t(p.reduce_partial_map[k]) + r) * heads + h]; };

    float m = kNegInf;
    for (int32_t k = s + lane; k < e; k += warp_size()) m = fmaxf(m, lse_of(k));
    m = wave_max(m);
    float sum = 0.0f;
    for (int32_t k = s + lane; k < e; k += warp_size()) sum += expf(lse_of(k) - m);
    sum = wave_sum(sum);
    const float lse = (sum == 0.0f || sum != sum) ? INFINITY : m + logf(sum);
    const int64_t out_row = (int64_t(q0) + r) * heads + h;
    if (tid == 0 && slice == 0 && p.lse) p.lse[out_row] = lse;

    const int c = slice * cols + tid % cols;
    float acc = 0.0f;
    if (c < v_dim) {
#pragma unroll 4
      for (int32_t k = s + group; k < e; k += groups) {
        const int64_t prow = (int64_t(p.reduce_partial_map[k]) + r) * heads + h;
        acc = fmaf(expf(p.partial_lse[prow] - lse), p.partial_out[prow * v_dim + c], acc);
      }
    }
    if (groups > 1) {
      __syncthreads();  // the previous item is done with scratch
      scratch[tid] = acc;
      __syncthreads();
      if (group == 0)
        for (int g = 1; g < groups; ++g) acc += scratch[g * cols + tid];
    }
    if (group == 0 && c < v_dim) p.out[out_row * v_dim + c] = encode_out(p.out_type, acc);
  }
}

// Reduce for tiles of at most kFewSplits splits (M1-M3, C1: 2-32): one
// (row, head) pair per 128 threads, 4 columns (float4) per thread; every thread
// computes the pair's LSE and weights itself from the n lse values (the same
// addresses across the pair's threads: broadcast loads), so a pair costs two
// rounds of independent loads and no barrier. The general kernel above (one item
// per block, the weights recomputed per split) took 173 us of C1's 1017.
// NMAX (2, 4, ..., 32) bounds the tile's splits and sizes the per-thread arrays:
// one kernel for 32 held 106 registers (2 blocks per SM) and walked 32
// predicated entries per loop for C1's 2 splits: 110 us for 67 MB (ncu).
constexpr int kFewSplits = 32;
template <int NMAX>
__global__ void __launch_bounds__(kReduceThreads) mla_reduce_few_kernel(ReduceParams p) {
  grid_dependency_wait();  // stage 1's partials (launched with gpu_launch_dependent)
  const int t = blockIdx.x, tid = threadIdx.x;
  ReduceTile tile;
  if (!reduce_tile(p, t, NMAX, &tile)) return;
  const int32_t s = tile.s, e = tile.e, q0 = tile.q0, rows = tile.rows;
  const int heads = p.heads, v_dim = p.v_dim, n = e - s;
  constexpr int kPairThreads = 128;  // 512 columns / 4
  const int half = tid / kPairThreads, c4 = (tid % kPairThreads) * 4;
  const int pairs = rows * heads;
  for (int pair = blockIdx.y * 2 + half; pair < pairs; pair += gridDim.y * 2) {
    const int r = pair / heads, h = pair % heads;
    float lk[NMAX];
    int32_t prow[NMAX];  // partial row x heads + head (< 2^31: checked at launch)
    float m = kNegInf;
#pragma unroll
    for (int k = 0; k < NMAX; ++k) {
      if (k < n) {
        prow[k] = (p.reduce_partial_map[s + k] + r) * heads + h;
        lk[k] = p.partial_lse[prow[k]];
        m = fmaxf(m, lk[k]);
      }
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < NMAX; ++k)
      if (k < n) sum += expf(lk[k] - m);
    const float lse = (sum == 0.0f || sum != sum) ? INFINITY : m + logf(sum);
    const int64_t out_row = (int64_t(q0) + r) * heads + h;
    if (c4 == 0 && p.lse) p.lse[out_row] = lse;
    if (c4 < v_dim) {
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int k = 0; k < NMAX; ++k) {
        if (k < n) {
          const float wk = expf(lk[k] - lse);
          const float4 x = *reinterpret_cast<const float4*>(p.partial_out + int64_t(prow[k]) * v_dim + c4);
          acc.x = fmaf(wk, x.x, acc.x);
          acc.y = fmaf(wk, x.y, acc.y);
          acc.z = fmaf(wk, x.z, acc.z);
          acc.w = fmaf(wk, x.w, acc.w);
        }
      }
      // one 8-byte store (out rows are 1024-byte aligned: v_dim 512 x 16 bits)
      *reinterpret_cast<uint2*>(p.out + out_row * v_dim + c4) =
          make_uint2(uint32_t(encode_out(p.out_type, acc.x)) | (uint32_t(encode_out(p.out_type, acc.y)) << 16),
                     uint32_t(encode_out(p.out_type, acc.z)) | (uint32_t(encode_out(p.out_type, acc.w)) << 16));
    }
  }
}

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
// AMD builds run it only when asked (Stage1Kernel::mma, see stage1_kernel_for).
namespace tc {

constexpr int kM = 16;                          // pairs per m16 tile
constexpr int kN = 32;                          // tokens per KV tile
constexpr int kParts = kN / frag::kTileN;       // waves per m-tile: 4 (NVIDIA), 2 (AMD)
constexpr int kPStride = kN + 8;                // 16-bit elements per P row (pad: conflict-free ldmatrix)
constexpr int kColsPerPart = 16 * frag::kTileN; // P·V columns per wave: 16 C tiles (o[16][4])
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

#if defined(MLACTL_GPU_CUDA)
// The warpgroup kernel (stage1_wgmma.cuh) issues its copies with these.
using frag::cp_async16;
using frag::cp_async_wait_all;
#endif

// KV pipeline depth (tiles of 32 tokens). Measured on the H200 (M1): 2 stages
// with 2 blocks per SM 590 us; 4 stages (1 block per SM, 3 tiles in flight)
// 867 us: a second block hiding this one's barriers matters more than bytes in
// flight. Kept as a parameter for the next pipeline (fewer barriers per tile).
// AMD: one buffer, filled synchronously (two would not fit 64 KB of LDS with
// head_dim 576; a register-staged prefetch is the next step there).
template <bool KV_FP8>
__host__ __device__ constexpr int stages() {
  return frag::kAsyncCopy ? (KV_FP8 ? 2 : 2) : 1;  // per KV dtype: fp8 also stages raw bytes
}

template <bool F16>
__device__ inline uint16_t encode16(float x) { return F16 ? encode_fp16(x) : encode_bf16(x); }
template <bool F16>
__device__ inline float decode16(uint16_t h) { return F16 ? decode_fp16(h) : decode_bf16(h); }

// 8 fp8 codes -> 8 16-bit operands through the block's table.
__device__ inline uint4 fp8x8_to_operands(uint2 codes, const uint16_t* lut16) {
  uint4 out;
  out.x = lut16[codes.x & 0xffu] | (uint32_t(lut16[(codes.x >> 8) & 0xffu]) << 16);
  out.y = lut16[(codes.x >> 16) & 0xffu] | (uint32_t(lut16[codes.x >> 24]) << 16);
  out.z = lut16[codes.y & 0xffu] | (uint32_t(lut16[(codes.y >> 8) & 0xffu]) << 16);
  out.w = lut16[(codes.y >> 16) & 0xffu] | (uint32_t(lut16[codes.y >> 24]) << 16);
  return out;
}

__host__ __device__ inline int row_stride_elems(int head_dim) { return head_dim + 8; }  // 16-byte pad
// fp8 KV: NVIDIA stages the raw codes (cp.async cannot convert) and decodes them
// in shared memory; AMD decodes on the way from global memory (no staging).
__host__ __device__ inline size_t smem_bytes(int head_dim, bool kv_fp8, int g) {
  const size_t rows16 = size_t(row_stride_elems(head_dim)) * 2;
  const int n_stages = kv_fp8 ? stages<true>() : stages<false>();
  const size_t fp8_staging = frag::kAsyncCopy ? n_stages * size_t(kN) * head_dim : 0;
  return g * kM * rows16 + n_stages * kN * rows16 + 2 * g * kM * kPStride * 2 + 2 * kParts * g * kM * 4 + g * kM * 4 +
         (kv_fp8 ? fp8_staging + 256 * 2 : 0);
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

  const int c = blockIdx.x;
  const int32_t w_begin = p.work_indptr[c], w_end = p.work_indptr[c + 1];
  if (w_begin < 0 || w_end < w_begin || w_end > p.num_works) {
    if (tid == 0) record_error(p.error, kErrWorkIndptr, c, w_end);
    return;
  }
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
        // Four independent accumulators (k mod 64 in 16-wide steps): one chain of
        // head_dim / 16 dependent MMAs was the latency of this phase.
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        {
          float sa[4][4] = {};
          const uint16_t* q_row = q_s + (mt * kM) * stride + frag::a_offset(lane, stride);
          const uint16_t* k_row = kv_tile + (part * frag::kTileN) * stride + frag::b_nk_offset(lane, stride);
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
        {
          // P as the A operand of P·V: the C element (row, token) goes to
          // p_hi / p_lo[row][token]; a lane's kPerRow tokens are adjacent.
          const int col = part * frag::kTileN + frag::c_col(lane, 0);
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
  }
}

}  // namespace tc

#if defined(MLACTL_GPU_CUDA)
#include "kernels/stage1_wgmma.cuh"
#endif  // MLACTL_GPU_CUDA

template <ElemType KV>
bool launch_stage1_typed(const Stage1Params& p, std::string* error) {
  const size_t smem = stage1_smem_bytes(p.head_dim, Elem<KV>::bytes);
  if (!check(gpu_set_max_dynamic_shared(mla_stage1_kernel<KV>, int(smem)), "set stage-1 shared memory", error)) return false;
  mla_stage1_kernel<KV><<<dim3(p.num_workgroups), dim3(kThreads), smem, 0>>>(p);
  return check_launch("stage-1 launch", error);
}

template <bool F16, bool KV_FP8, int G>
bool launch_stage1_mma_g(const Stage1Params& p, std::string* error) {
  const size_t smem = tc::smem_bytes(p.head_dim, KV_FP8, G);
  if (!check(gpu_set_max_dynamic_shared(tc::stage1_mma_kernel<F16, KV_FP8, G>, int(smem)), "set stage-1 shared memory",
             error))
    return false;
  tc::stage1_mma_kernel<F16, KV_FP8, G><<<dim3(p.num_workgroups), dim3(tc::threads<G>()), smem, 0>>>(p);
  return check_launch("stage-1 (tensor core) launch", error);
}
// More than 16 pairs in some work (M2: 4 rows x 16 heads, C1: 128 heads): two m16
// tiles per block share each KV tile. fp8 KV keeps G = 1 (its staging buffer), and
// so does AMD (a second m-tile's q rows would not fit 64 KB of LDS).
template <bool F16, bool KV_FP8>
bool launch_stage1_mma(const Stage1Params& p, std::string* error) {
  const int64_t pairs = p.max_pairs > 0 ? p.max_pairs : p.heads;
  if constexpr (!KV_FP8 && frag::kAsyncCopy) {
    if (pairs > tc::kM) return launch_stage1_mma_g<F16, KV_FP8, 2>(p, error);
  }
  (void)pairs;
  return launch_stage1_mma_g<F16, KV_FP8, 1>(p, error);
}

}  // namespace

namespace {
// Both operands must be exact in the MMA's 16-bit type (fp8 codes are, in both).
bool mma_operands_exact(const Stage1Params& p) {
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
  return f16 ? (p.q_type != ElemType::bf16 && p.kv_type != ElemType::bf16) : true;
}
// v_dim: whole pairs of MMA n-tiles (16 columns on NVIDIA, 32 on AMD). AMD also
// needs the kernel's LDS within the 64 KB of gfx90a / gfx94x.
bool mma_applies(const Stage1Params& p) {
  const bool fits = frag::kAsyncCopy || tc::smem_bytes(p.head_dim, p.kv_type == ElemType::fp8, 1) <= 65536;
  return mma_operands_exact(p) && p.head_dim % 32 == 0 && p.v_dim % (2 * frag::kTileN) == 0 &&
         p.v_dim <= tc::kParts * tc::kColsPerPart && fits;
}
#if defined(MLACTL_GPU_CUDA)
// The warpgroup kernel: compiled only for sm_90a (MLACTL_CUDA_WGMMA, set by CMake
// when CMAKE_CUDA_ARCHITECTURES has 90a), run only on a compute-capability-9.0
// device; 16-bit KV, or fp8 KV for works of <= 16 pairs (the producer converts
// the codes into the stage), head_dim 576 (MLA) or 512 (rope-free), v_dim = 512.
bool wgmma_applies(const Stage1Params& p) {
#if defined(MLACTL_CUDA_WGMMA)
  static const int cc = gpu_current_compute_capability();
  // fp8 KV: the producer converts the codes to bf16 (exact), so bf16 operands
  // only (q bf16 or fp8; an fp16 q with fp8 KV stays on mma.sync), and only the
  // transposed kernel (<= 16 pairs: its consumers leave the producer registers).
  const int64_t pairs = p.max_pairs > 0 ? p.max_pairs : p.heads;
  const bool kv8_ok = p.kv_type != ElemType::fp8 || (p.q_type != ElemType::fp16 && pairs <= 16);
  return cc == 90 && mma_operands_exact(p) && kv8_ok && (p.head_dim == 576 || p.head_dim == 512) &&
         p.v_dim == wg::kVDim;
#else
  (void)p;
  return false;
#endif
}
#endif
}  // namespace

Stage1Kernel stage1_kernel_for(const Stage1Params& p) {
#if defined(MLACTL_GPU_CUDA)
  const Stage1Kernel want = p.kernel;
  if (want == Stage1Kernel::cuda_core) return Stage1Kernel::cuda_core;
  // automatic: the warpgroup kernels wherever they apply (sm_90a build on a
  // compute-9.0 device, 16-bit KV). Since the producer copies whole row segments
  // (bench_notes step 16) they beat mma.sync on every SPEC shape: M1 412 vs 545 us,
  // M3 228 vs 288, M2 163 vs 610, C1 572 vs 2181 (stage 1).
  // fp8 KV stays on mma.sync under automatic: the transposed kernel's converting
  // producer gains at most 5% there (F1 1155-1169 vs 1205-1220 us, wider spread;
  // bench_notes step 19) until its loads are staged (branch wip/fp8-cpasync-staging).
  const bool auto_wgmma = want == Stage1Kernel::automatic && p.kv_type != ElemType::fp8;
  if ((want == Stage1Kernel::wgmma || auto_wgmma) && wgmma_applies(p)) return Stage1Kernel::wgmma;
  if (mma_applies(p)) return Stage1Kernel::mma;
#else
  // AMD: the MFMA build of the tensor-core kernel has been compile-checked
  // (gfx90a, gfx940) but never run on AMD hardware, so only an explicit
  // Stage1Kernel::mma (--stage1 mma) selects it; automatic stays on the CUDA-core kernel.
  if (p.kernel == Stage1Kernel::mma && mma_applies(p)) return Stage1Kernel::mma;
#endif
  return Stage1Kernel::cuda_core;
}


namespace {
#if defined(MLACTL_GPU_CUDA) && defined(MLACTL_CUDA_WGMMA)
template <bool F16, bool KV8, int QR, int S, int NT>
bool launch_stage1_wgmma_rows(const Stage1Params& p, std::string* error) {
  const size_t smem = wg::Plan{QR, S, p.head_dim, NT}.total();
  auto kernel = p.head_dim == 576 ? wg::stage1_wgmma_kernel<F16, QR, S, 576, NT, KV8>
                                  : wg::stage1_wgmma_kernel<F16, QR, S, 512, NT, KV8>;
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma) shared memory", error)) return false;
  kernel<<<dim3(p.num_workgroups), dim3(wg::kThreads), smem, 0>>>(p);
  return check_launch("stage-1 (wgmma) launch", error);
}
template <bool F16, bool KV8>
bool launch_stage1_wgmma_transposed(const Stage1Params& p, std::string* error) {
  const size_t smem = wg::PlanT{p.head_dim}.total();
  auto kernel = p.head_dim == 576 ? wg::stage1_wgmma_t_kernel<F16, 576, KV8> : wg::stage1_wgmma_t_kernel<F16, 512, KV8>;
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma, transposed) shared memory", error))
    return false;
  kernel<<<dim3(p.num_workgroups), dim3(wg::kThreads), smem, 0>>>(p);
  return check_launch("stage-1 (wgmma, transposed) launch", error);
}
// Up to 16 pairs per work (M1, M3, S1: 16 or fewer heads, one q row): the
// transposed kernel (64 tokens as the wgmma rows, no padding). More pairs (M2,
// C1): 64 q rows (72 KB), 3 stages of 32-token tiles (206 KB). (The row-major
// kernel on 16 pairs, 16 q rows, 4 stages: M1 820 us; with 64-token tiles 1037 us,
// docs/bench_notes.md steps 11-12.)
template <bool F16, bool KV8>
bool launch_stage1_wgmma(const Stage1Params& p, std::string* error) {
  const int64_t pairs = p.max_pairs > 0 ? p.max_pairs : p.heads;
  if (pairs <= 16) return launch_stage1_wgmma_transposed<F16, KV8>(p, error);
  return launch_stage1_wgmma_rows<F16, KV8, 64, 3, 32>(p, error);
}
#endif

bool launch_stage1_any(const Stage1Params& p, std::string* error) {
  const Stage1Kernel k = stage1_kernel_for(p);
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
#if defined(MLACTL_GPU_CUDA) && defined(MLACTL_CUDA_WGMMA)
  if (k == Stage1Kernel::wgmma) {
    // fp8 KV: the transposed kernel only (wgmma_applies), bf16 operands
    if (p.kv_type == ElemType::fp8) return launch_stage1_wgmma_transposed<false, true>(p, error);
    return f16 ? launch_stage1_wgmma<true, false>(p, error) : launch_stage1_wgmma<false, false>(p, error);
  }
#endif
  if (k == Stage1Kernel::mma) {
    const bool kv_fp8 = p.kv_type == ElemType::fp8;
    if (f16) return kv_fp8 ? launch_stage1_mma<true, true>(p, error) : launch_stage1_mma<true, false>(p, error);
    return kv_fp8 ? launch_stage1_mma<false, true>(p, error) : launch_stage1_mma<false, false>(p, error);
  }
  switch (p.kv_type) {
    case ElemType::bf16: return launch_stage1_typed<ElemType::bf16>(p, error);
    case ElemType::fp16: return launch_stage1_typed<ElemType::fp16>(p, error);
    case ElemType::fp8: return launch_stage1_typed<ElemType::fp8>(p, error);
  }
  if (error) *error = "stage-1: unknown KV element type";
  return false;
}
}  // namespace

bool launch_stage1(const Stage1Params& p, std::string* error) {
  if (p.num_workgroups <= 0) return true;
  return launch_stage1_any(p, error);
}

bool launch_reduce(const ReduceParams& p, std::string* error) {
  if (p.num_tiles <= 0) return true;
  if (p.max_items <= 0) return true;
  if (p.max_splits <= kFewSplits && p.v_dim == 512 && p.num_partial_rows * p.heads < (int64_t(1) << 31)) {
    // two pairs per block per pass; ~2048 blocks in all (the kernel strides)
    const int64_t pairs = int64_t(p.max_rows) * p.heads;
    const int64_t want = std::max<int64_t>(1, 2048 / std::max<int32_t>(1, p.num_tiles));
    const unsigned by = unsigned(std::max<int64_t>(1, std::min<int64_t>({(pairs + 1) / 2, want, 65535})));
    const dim3 grid(unsigned(p.num_tiles), by), block(kReduceThreads);
    auto kernel = p.max_splits <= 2    ? mla_reduce_few_kernel<2>
                  : p.max_splits <= 4  ? mla_reduce_few_kernel<4>
                  : p.max_splits <= 8  ? mla_reduce_few_kernel<8>
                  : p.max_splits <= 16 ? mla_reduce_few_kernel<16>
                                       : mla_reduce_few_kernel<kFewSplits>;
    return check(gpu_launch_dependent(kernel, grid, block, p), "reduce launch", error);
  }
  const unsigned blocks_y = unsigned(std::min<int64_t>(p.max_items, 65535));  // grid y limit; the kernel strides
  return check(gpu_launch_dependent(mla_reduce_kernel, dim3(unsigned(p.num_tiles), blocks_y), dim3(kReduceThreads), p),
               "reduce launch", error);
}

namespace {
constexpr int kCopyThreads = 256;
constexpr int kCopyUnroll = 8;
// Grid-stride copy, kCopyUnroll independent 16-byte loads in flight per thread.
__global__ void __launch_bounds__(kCopyThreads) device_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                                    size_t n16, unsigned char* __restrict__ dst_tail,
                                                                    const unsigned char* __restrict__ src_tail, size_t tail) {
  const size_t stride = size_t(gridDim.x) * kCopyThreads;
  size_t i = size_t(blockIdx.x) * kCopyThreads + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < n16; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n16; i += stride) dst[i] = src[i];
  if (blockIdx.x == 0)
    for (size_t t = threadIdx.x; t < tail; t += kCopyThreads) dst_tail[t] = src_tail[t];
}
}  // namespace

bool launch_device_copy(void* dst, const void* src, size_t bytes, std::string* error) {
  if (bytes == 0) return true;
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16) {
    if (error) *error = "device copy: buffers must be 16-byte aligned";
    return false;
  }
  const size_t n16 = bytes / 16, tail = bytes % 16;
  const size_t want = (n16 + size_t(kCopyThreads) * kCopyUnroll - 1) / (size_t(kCopyThreads) * kCopyUnroll);
  const unsigned blocks = unsigned(std::max<size_t>(1, std::min<size_t>(want, 132 * 16)));
  device_copy_kernel<<<dim3(blocks), dim3(kCopyThreads), 0, 0>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16, static_cast<unsigned char*>(dst) + n16 * 16,
      static_cast<const unsigned char*>(src) + n16 * 16, tail);
  return check_launch("device copy launch", error);
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
      {kErrStall, " stage-1 pipeline stalled (a wait gave up after ~2 s: a kernel bug, please report)"},
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
