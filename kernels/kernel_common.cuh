// Device helpers the kernels share (the stage-1 kernels of stage1_cuda_core.hip,
// stage1_mma.hip, stage1_wgmma.cuh, and the reduce of reduce.hip): the work-list row, the
// device error word, the causal visible end (docs/stacks/vllm-rocm-aiter.md
// §A7.1), the range checks of a work, and the output rounding. Written once for
// hipcc and nvcc against kernels/gpu.hpp.
#pragma once

#include <cmath>

#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"

namespace mla {

constexpr float kNegInf = -INFINITY;

struct WorkRow {
  int32_t batch, ploc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad;
};

__device__ inline void record_error(int32_t* error, int32_t bit, int32_t where, int32_t value) {
  atomicOr(&error[0], bit);
  if (atomicCAS(&error[1], -1, where) == -1) error[2] = value;
}

// The visible end (an index into kv_indices) of (row, head) pair `pair` of a work
// (row = pair / heads): the causal rule of §A7.1, q row i of qn sees KV entries
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

// The block's work range [w_begin, w_end) of workgroup blockIdx.x / pair_tiles
// (blockIdx.x itself unless the grid has pair_tiles blocks per workgroup: adjacent
// blocks, so they run together; select_stage1.hpp, wgmma_pair_tiles); a
// malformed work_indptr is recorded (thread 0) and the block does nothing (false).
__device__ inline bool block_works(const Stage1Params& p, int32_t& w_begin, int32_t& w_end) {
  const int c = int(blockIdx.x) / p.pair_tiles;
  w_begin = p.work_indptr[c];
  w_end = p.work_indptr[c + 1];
  if (w_begin < 0 || w_end < w_begin || w_end > p.num_works) {
    if (threadIdx.x == 0) record_error(p.error, kErrWorkIndptr, c, w_end);
    return false;
  }
  return true;
}

// The first chunk of `chunk_pairs` pairs this block runs of each work, and the step
// to its next (Stage1Params::pair_tiles).
__device__ inline int first_chunk(const Stage1Params& p, int chunk_pairs) {
  return int(blockIdx.x) % p.pair_tiles * chunk_pairs;
}

// A block's chunks in the order its producer and its consumers walk them: each work of
// [w_begin, w_end) that work_ok accepts (`report`: this thread records a malformed one),
// then the work's chunks of up to CHUNK_PAIRS (row, head) pairs from first_chunk,
// pair_tiles chunks apart. body(w, work, qn, chunk, cp, max_end): qn the work's query
// rows, cp the chunk's pairs, max_end the visible end of its last pair.
template <int CHUNK_PAIRS, class Body>
__device__ __forceinline__ void for_each_chunk(const Stage1Params& p, int32_t w_begin, int32_t w_end, bool report,
                                               Body&& body) {
  const int heads = p.heads;
  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    if (!work_ok(p, work, w, report)) continue;
    const int qn = work.qo_end - work.qo_start, pairs = qn * heads;
    for (int chunk = first_chunk(p, CHUNK_PAIRS); chunk < pairs; chunk += CHUNK_PAIRS * p.pair_tiles) {
      const int cp = min(CHUNK_PAIRS, pairs - chunk);
      body(w, work, qn, chunk, cp, visible_end(work, qn, heads, p.causal, chunk + cp - 1, pairs));
    }
  }
}

__device__ inline uint16_t encode_out(ElemType t, float x) { return t == ElemType::fp16 ? encode_fp16(x) : encode_bf16(x); }

// 16-bit matrix operands: fp16 (F16) or bf16 bits.
template <bool F16>
__device__ inline uint16_t encode16(float x) { return F16 ? encode_fp16(x) : encode_bf16(x); }
template <bool F16>
__device__ inline float decode16(uint16_t h) { return F16 ? decode_fp16(h) : decode_bf16(h); }

}  // namespace mla
