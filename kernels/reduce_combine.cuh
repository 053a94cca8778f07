// The arithmetic of the reduce (docs/stacks/vllm-rocm-aiter.md §A7.1 stage 2), used by
// the reduce kernels of kernels/reduce.hip. Written once for hipcc and nvcc against
// kernels/gpu.hpp.
#pragma once

#include <cmath>

#include "kernels/gpu.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/mla_decode.hpp"

namespace mla {

__device__ inline float wave_max(float v) {
  for (int o = warp_size() / 2; o > 0; o >>= 1) v = fmaxf(v, shfl_xor(v, o, warp_size()));
  return v;
}
__device__ inline float wave_sum(float v) {
  for (int o = warp_size() / 2; o > 0; o >>= 1) v += shfl_xor(v, o, warp_size());
  return v;
}

template <typename T>
__device__ inline T load_partial(const T* at) {
  return *at;
}

// acc += w · x, one fmaf a column (the reduce's per-split step on a float4 quad).
__device__ inline void fma_quad(float4& acc, float w, const float4& x) {
  acc.x = fmaf(w, x.x, acc.x);
  acc.y = fmaf(w, x.y, acc.y);
  acc.z = fmaf(w, x.z, acc.z);
  acc.w = fmaf(w, x.w, acc.w);
}

// LSE of pair (r, h) of a tile with splits [s, e), computed by one whole wave
// (every lane gets the same bits): lane-strided max and sum, then XOR butterflies.
// LSE = M + ln Σ exp(lse_k − M), +inf when the sum is 0 or NaN (as AITER).
// Up to kLseHeld·warp_size splits, a lane loads all its map entries, then all its
// lse values, before the first max: two rounds of loads where the loop below makes
// two dependent loads per split and per pass (S1's 128 splits: 16 in a row, most of
// the combine's time: docs/bench_notes.md). Same operations in the same
// order either way.
constexpr int kLseHeld = 8;
__device__ inline float combine_lse_wave(const ReduceParams& p, int32_t s, int32_t e, int r, int h, int lane) {
  auto row_of = [&](int32_t k) { return (int64_t(p.reduce_partial_map[k]) + r) * p.heads + h; };
  float m = kNegInf, sum = 0.0f;
  if (e - s <= kLseHeld * warp_size()) {
    int64_t row[kLseHeld];
    float v[kLseHeld];
#pragma unroll
    for (int j = 0; j < kLseHeld; ++j) {
      const int32_t k = s + lane + j * warp_size();
      row[j] = k < e ? row_of(k) : 0;
    }
#pragma unroll
    for (int j = 0; j < kLseHeld; ++j) {
      const int32_t k = s + lane + j * warp_size();
      v[j] = k < e ? load_partial(p.partial_lse + row[j]) : kNegInf;
      m = fmaxf(m, v[j]);
    }
    m = wave_max(m);
#pragma unroll
    for (int j = 0; j < kLseHeld; ++j)
      if (s + lane + j * warp_size() < e) sum += expf(v[j] - m);
  } else {
    for (int32_t k = s + lane; k < e; k += warp_size()) m = fmaxf(m, load_partial(p.partial_lse + row_of(k)));
    m = wave_max(m);
    for (int32_t k = s + lane; k < e; k += warp_size()) sum += expf(load_partial(p.partial_lse + row_of(k)) - m);
  }
  sum = wave_sum(sum);
  return (sum == 0.0f || sum != sum) ? INFINITY : m + logf(sum);
}

// Σ over splits k = k0, k0 + step, ... < e of exp(lse_k − lse) · partial_k[c] for
// pair (r, h): one split-group's chain of mla_reduce_kernel, in split order. The
// splits go kChainBatch at a time: their map entries, then their lse and partial
// values, then the fmaf chain (the same order as one split at a time).
constexpr int kChainBatch = 8;
// Partial rows (map entry + r) x heads + h of the B splits k, k + step, ... (0 past e).
template <int B>
__device__ inline void batch_rows(const ReduceParams& p, int32_t k, int32_t e, int32_t step, int r, int h,
                                  int64_t (&prow)[B]) {
#pragma unroll
  for (int b = 0; b < B; ++b) {
    const int32_t kb = k + b * step;
    prow[b] = kb < e ? (int64_t(p.reduce_partial_map[kb]) + r) * p.heads + h : 0;
  }
}
__device__ inline float combine_chain(const ReduceParams& p, int32_t k0, int32_t e, int32_t step, int r, int h,
                                      float lse, int c) {
  float acc = 0.0f;
  for (int32_t k = k0; k < e; k += kChainBatch * step) {
    int64_t prow[kChainBatch];
    float l[kChainBatch], x[kChainBatch];
    batch_rows(p, k, e, step, r, h, prow);
#pragma unroll
    for (int b = 0; b < kChainBatch; ++b) {
      if (k + b * step < e) {
        l[b] = load_partial(p.partial_lse + prow[b]);
        x[b] = load_partial(p.partial_out + prow[b] * p.v_dim + c);
      }
    }
#pragma unroll
    for (int b = 0; b < kChainBatch; ++b)
      if (k + b * step < e) acc = fmaf(expf(l[b] - lse), x[b], acc);
  }
  return acc;
}

// The LSE of pair (r, h) over a tile's n <= NMAX splits from s, every caller thread
// on its own (sequential over the splits); fills each split's lse (lk) and
// partial row x heads + head (prow: < 2^31, reduce_uses_few_kernel).
template <int NMAX>
__device__ inline float pair_lse_few(const ReduceParams& p, int32_t s, int n, int r, int h, float (&lk)[NMAX],
                                     int32_t (&prow)[NMAX]) {
  float m = kNegInf;
#pragma unroll
  for (int k = 0; k < NMAX; ++k) {
    if (k < n) {
      prow[k] = (p.reduce_partial_map[s + k] + r) * p.heads + h;
      lk[k] = load_partial(p.partial_lse + prow[k]);
      m = fmaxf(m, lk[k]);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < NMAX; ++k)
    if (k < n) sum += expf(lk[k] - m);
  return (sum == 0.0f || sum != sum) ? INFINITY : m + logf(sum);
}

// Σ over splits k < n of exp(lk[k] − lse) · partial row prow[k] (row stride `stride`),
// for the NQ float4 column quads col(j), in split order: the few-split chain of
// combine_pair_few and combine_pair_few_wave. A batch of splits' loads goes first
// (small predicated bodies, which ptxas issues back to back), then their fmaf chains:
// one split's load, exp and fmafs under one `if` compiled to a branch around each
// split, so every split's L2 load waited for the one before (SASS of the spread
// combine; docs/bench_notes.md). Same operations in the same order.
template <int NMAX, int NQ, typename ColOf>
__device__ inline void few_chain_quads(const ReduceParams& p, int n, const float (&lk)[NMAX],
                                       const int32_t (&prow)[NMAX], float lse, int64_t stride, ColOf col,
                                       float4 (&acc)[NQ]) {
  constexpr int kB = NMAX < 8 ? NMAX : (NQ > 1 ? 4 : 8);
  static_assert(NMAX % kB == 0, "whole batches");
#pragma unroll
  for (int j = 0; j < NQ; ++j) acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int k0 = 0; k0 < NMAX; k0 += kB) {
    float4 x[kB][NQ];
#pragma unroll
    for (int b = 0; b < kB; ++b)
      if (k0 + b < n)
#pragma unroll
        for (int j = 0; j < NQ; ++j)
          x[b][j] = load_partial(
              reinterpret_cast<const float4*>(p.partial_out + int64_t(prow[k0 + b]) * stride + col(j)));
#pragma unroll
    for (int b = 0; b < kB; ++b)
      if (k0 + b < n) {
        const float wk = expf(lk[k0 + b] - lse);
#pragma unroll
        for (int j = 0; j < NQ; ++j) {
          fma_quad(acc[j], wk, x[b][j]);
        }
      }
  }
}

// Pair (r, h) of a tile of n <= NMAX splits from s (final row q0 + r), columns
// [c4, c4 + 4) (v_dim 512): mla_reduce_few_kernel's arithmetic. Every caller
// thread computes the LSE and weights itself (sequential over the splits); the
// thread with c4 == 0 writes the lse. NMAX only bounds the unrolled arrays: the
// operations on splits k < n, and so the bits, do not depend on it.
template <int NMAX>
__device__ inline void combine_pair_few(const ReduceParams& p, int32_t s, int n, int32_t q0, int r, int h, int c4) {
  const int heads = p.heads, v_dim = p.v_dim;
  float lk[NMAX];
  int32_t prow[NMAX];
  const float lse = pair_lse_few<NMAX>(p, s, n, r, h, lk, prow);
  const int64_t out_row = (int64_t(q0) + r) * heads + h;
  if (c4 == 0 && p.lse) p.lse[out_row] = lse;
  if (c4 < v_dim) {
    float4 quad[1];
    few_chain_quads<NMAX, 1>(p, n, lk, prow, lse, v_dim, [&](int) { return c4; }, quad);
    const float4 acc = quad[0];
    // one 8-byte store (out rows are 1024-byte aligned: v_dim 512 x 16 bits)
    *reinterpret_cast<uint2*>(p.out + out_row * v_dim + c4) =
        make_uint2(uint32_t(encode_out(p.out_type, acc.x)) | (uint32_t(encode_out(p.out_type, acc.y)) << 16),
                   uint32_t(encode_out(p.out_type, acc.z)) | (uint32_t(encode_out(p.out_type, acc.w)) << 16));
  }
}

}  // namespace mla
