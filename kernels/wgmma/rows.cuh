// The row-major warpgroup stage-1 kernel (Stage1Schedule::wgmma_rows; NVIDIA sm_90a):
// works of more than 16 (row, head) pairs, 16-bit KV, head_dim 576 or 512, v_dim 512.
//
// Three warpgroups (kernels/wgmma/common.cuh): the producer loads 64-token KV tiles
// with cp.async into two stages (produce_kv_tiles); warpgroup 0 computes S = Q·Kᵀ for
// 64 (row, head) pairs x 64 tokens as one chain of m64n64k16 wgmmas (both operands in
// shared memory), the online softmax (each warp owns 16 whole rows: no cross-warp max)
// and O[:, 0:256] += P·V with P from registers; warpgroup 1 takes P and the rescale
// factors through shared memory (named barriers PFull / PFree) and computes
// O[:, 256:512] += P·V, overlapping warpgroup 0's next Q·Kᵀ. P enters P·V as hi + lo
// 16-bit parts (fp32-level) or, with PvPrecision::once, rounded once (P1).
// Every 64-pair chunk of a work runs in its own block, the chunks of a work adjacent
// in the grid (Stage1Params::pair_tiles), so a work's KV comes from DRAM once.
// Why this schedule and not the six others tried: docs/bench_notes.md, "Row-major
// schedules".
#pragma once

#include "kernels/wgmma/producer.cuh"

namespace mla::wg {

// Shared-memory plan: q (64 rows, 72 KB at head_dim 576), two 64-token stages, one P
// buffer, one alpha buffer, the barriers; the row statistics go to q_s after the tile
// loop (only warpgroup 0's Q·Kᵀ reads q_s, and all of its wgmmas have completed by
// then). P in two parts puts the hi part in the tile's own rope column block (block 8
// of the stage: only Q·Kᵀ reads it, and the tile's Q·Kᵀ is done before P exists); at
// head_dim 512 (no rope block) the P buffer holds both parts.
struct Plan {
  int head_dim;
  bool p_once = false;  // P in one part
  static constexpr int qr = kRows, stages = 2, nt = 64;
  // Two parts at head_dim 576: the hi part goes to the tile's rope block.
  __host__ __device__ constexpr bool p_hi_in_stage() const { return !p_once && head_dim == 576; }
  // P parts the buffer slot holds: hi and lo, or one (P once, or the lo part beside p_hi_in_stage).
  __host__ __device__ constexpr int p_slot_parts() const { return p_once || p_hi_in_stage() ? 1 : 2; }
  __host__ __device__ constexpr int blocks() const { return head_dim / 64; }
  __host__ __device__ constexpr size_t q_bytes() const { return size_t(blocks()) * qr * kRowBytes; }
  __host__ __device__ constexpr size_t stage_bytes() const { return size_t(blocks()) * nt * kRowBytes; }
  // P A fragments of one tile: nt / 16 k-steps x p_slot_parts() x 16 bytes per consumer thread.
  __host__ __device__ constexpr size_t p_buf_bytes() const { return size_t(nt / 16) * p_slot_parts() * 16 * 128; }
  __host__ __device__ constexpr size_t kv_off() const { return q_bytes(); }
  __host__ __device__ constexpr size_t p_off() const { return kv_off() + stages * stage_bytes(); }
  __host__ __device__ constexpr size_t alpha_off() const { return p_off() + p_buf_bytes(); }
  __host__ __device__ constexpr size_t alpha_bytes() const { return 128 * 8; }
  __host__ __device__ constexpr size_t bar_off() const { return alpha_off() + alpha_bytes(); }
  // + 1024: the dynamic window is aligned up to the swizzle atom in the kernel.
  __host__ __device__ constexpr size_t total() const { return bar_off() + 2 * stages * 8 + 1024; }
  // The 128 A fragments (one uint4 a consumer thread) of P part hl, k-step ks, in the P
  // buffer or, for the hi part beside p_hi_in_stage, in the tile's rope block.
  __device__ uint4* p_slot(uint8_t* smem, const uint8_t* stage, int ks, int hl) const {
    if (p_hi_in_stage() && hl == 0)
      return reinterpret_cast<uint4*>(const_cast<uint8_t*>(stage) + 8 * nt * kRowBytes) + ks * 128;
    const int part = p_hi_in_stage() ? 0 : hl;
    return reinterpret_cast<uint4*>(smem + p_off()) + (ks * p_slot_parts() + part) * 128;
  }
};
// Every plan fits the 227 KB a block may take (sm_90: 232,448 bytes).
constexpr size_t kMaxDynamicSmem = 232448;
static_assert(Plan{576, false}.total() <= kMaxDynamicSmem && Plan{576, true}.total() <= kMaxDynamicSmem &&
                  Plan{512, false}.total() <= kMaxDynamicSmem && Plan{512, true}.total() <= kMaxDynamicSmem,
              "row-major shared-memory plan over 227 KB");

// The row-major kernel's KV ring (S stages of plan.stage_bytes() from kv_s; stage s's `full` and `empty` mbarriers at full_bar + 8s
// and empty_bar + 8s): where tile t lies, the wait for it to land, and a warp's release.
template <int S>
struct StageRing {
  uint8_t* kv_s;
  size_t stage_bytes;
  uint32_t full_bar, empty_bar;
  __device__ const uint8_t* at(uint32_t t) const { return kv_s + size_t(t % S) * stage_bytes; }
  // Until tile t has landed; then the producer's cp.async writes (generic proxy) are
  // made visible to the wgmma reads (async proxy).
  __device__ void wait_full(uint32_t t, int32_t* error) const {
    mbar_wait(full_bar + 8 * (t % S), (t / S) & 1, error);
    fence_async_smem();
  }
  // This warp's release of tile t's stage (after its last read of it completed).
  __device__ void release(uint32_t t, int lane) const {
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar + 8 * (t % S));
  }
};

// The row-major kernel's block start: the pipeline's barriers and work range, then the producer warpgroup's registers
// lowered and its loop run. True in the consumer threads, their registers raised;
// false in the producers once their loop is done, and in every thread of a block
// that does nothing. warp and lane are the caller's: recomputing the lane here changed
// the whole kernel's register allocation and was measurably slower (docs/bench_notes.md).
template <int QR, int NT, int S, int HD>
__device__ __forceinline__ bool row_major_start(const Stage1Params& p, const Plan& plan, uint8_t* kv_s, uint32_t full_bar,
                                                uint32_t empty_bar, int warp, int lane, int32_t& w_begin, int32_t& w_end) {
  block_clock_start(p);
  if (!pipeline_start(p, full_bar, empty_bar, S, /*empty_count=*/8, w_begin, w_end)) {  // every consumer warp
    block_clock_end(p);
    return false;
  }
  if (warp >= kConsumers / 32) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce_kv_tiles<QR, NT, S, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar, empty_bar, warp - kConsumers / 32,
                                    lane);
    return false;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
  return true;
}

// The online softmax of one tile's scores in the log2 domain (this thread's NT / 2 of
// them: accumulators 4j, 4j+1 of row r0 and 4j+2, 4j+3 of row r1, tokens tile + 8j +
// 2tq, +1): masked past each row's visible end, scaled, the tile max across the quad,
// the new running max m, sc -> exp2(sc - m), and alpha, the factor that rescales what
// came before; l takes this tile's sum (this thread's columns only).
template <int NT>
__device__ inline void online_softmax(float (&sc)[NT / 2], int tile, int tq, int end0, int end1, float score_scale,
                                      float& m0, float& m1, float& l0, float& l1, float& alpha0, float& alpha1) {
  float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
  for (int j = 0; j < NT / 8; ++j) {
    const int t0 = tile + 8 * j + 2 * tq;
    sc[4 * j + 0] = t0 < end0 ? sc[4 * j + 0] * score_scale : kNegInf;
    sc[4 * j + 1] = t0 + 1 < end0 ? sc[4 * j + 1] * score_scale : kNegInf;
    sc[4 * j + 2] = t0 < end1 ? sc[4 * j + 2] * score_scale : kNegInf;
    sc[4 * j + 3] = t0 + 1 < end1 ? sc[4 * j + 3] * score_scale : kNegInf;
    mx0 = fmaxf(mx0, fmaxf(sc[4 * j + 0], sc[4 * j + 1]));
    mx1 = fmaxf(mx1, fmaxf(sc[4 * j + 2], sc[4 * j + 3]));
  }
#pragma unroll
  for (int o_ = 1; o_ < 4; o_ <<= 1) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o_));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o_));
  }
  const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
  alpha0 = n0 == kNegInf ? 1.0f : exp2f(m0 - n0);
  alpha1 = n1 == kNegInf ? 1.0f : exp2f(m1 - n1);
  m0 = n0;
  m1 = n1;
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int j = 0; j < NT / 8; ++j) {
    sc[4 * j + 0] = sc[4 * j + 0] == kNegInf ? 0.0f : exp2f(sc[4 * j + 0] - n0);
    sc[4 * j + 1] = sc[4 * j + 1] == kNegInf ? 0.0f : exp2f(sc[4 * j + 1] - n0);
    sc[4 * j + 2] = sc[4 * j + 2] == kNegInf ? 0.0f : exp2f(sc[4 * j + 2] - n1);
    sc[4 * j + 3] = sc[4 * j + 3] == kNegInf ? 0.0f : exp2f(sc[4 * j + 3] - n1);
    s0 += sc[4 * j + 0] + sc[4 * j + 1];
    s1 += sc[4 * j + 2] + sc[4 * j + 3];
  }
  l0 = l0 * alpha0 + s0;
  l1 = l1 * alpha1 + s1;
}

// P (this thread's KS * 8 softmax values) as the A fragments of the KS 16-token k-steps,
// [k-step][hi, lo][4] (P1: the hi part only, P rounded once).
// (reg 0: row r0, tokens 0-7 of the k-step; 1: row r1; 2: row r0, tokens 8-15; 3: row r1.)
template <bool F16, bool P1, int KS>
__device__ inline void pack_p(const float (&sc)[KS * 8], uint32_t (&a)[KS][2][4]) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int jb = 2 * ks + h;  // n8 block of the scores
      float ra, rb, rc, rd;
      a[ks][0][2 * h + 0] = pack2<F16>(sc[4 * jb + 0], sc[4 * jb + 1], ra, rb);
      a[ks][0][2 * h + 1] = pack2<F16>(sc[4 * jb + 2], sc[4 * jb + 3], rc, rd);
      if constexpr (!P1) {
        a[ks][1][2 * h + 0] = pack2<F16>(ra, rb);
        a[ks][1][2 * h + 1] = pack2<F16>(rc, rd);
      }
    }
}

// O = alpha · O + P · V over warpgroup g's 256 columns of an NT-token stage, as one
// committed wgmma group (P from registers: [k-step][hi, lo] fragments, P1: hi only).
template <bool F16, bool P1, int NT>
__device__ inline void rescale_and_issue_pv(float (&o)[4][32], const uint32_t (&a)[NT / 16][2][4], float alpha0,
                                            float alpha1, const uint8_t* stage, int g) {
#pragma unroll
  for (int nb = 0; nb < 4; ++nb)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[nb][4 * j + 0] *= alpha0;
      o[nb][4 * j + 1] *= alpha0;
      o[nb][4 * j + 2] *= alpha1;
      o[nb][4 * j + 3] *= alpha1;
    }
  // The rescale before the P·V wgmmas, not between them (unpinned, ptxas sank the
  // multiplies past the fence and injected a warpgroup.arrive per column block: C7519).
#pragma unroll
  for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < NT / 16; ++ks)
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      const uint64_t db = desc_at(desc_sw128(saddr(stage)), (g * 4 + nb) * NT * kRowBytes + ks * 16 * kRowBytes);
      mma_pv<F16>(o[nb], a[ks][0], db);
      if constexpr (!P1) mma_pv<F16>(o[nb], a[ks][1], db);
    }
  wg_commit();
}


// A row-major chunk's start:
// the visible ends of this thread's rows r0 and r1, q staged between two consumer
// barriers (the first: the previous chunk is done with q_s), O zeroed.
template <bool F16, int QR, int HD>
__device__ __forceinline__ void start_row_chunk(const Stage1Params& p, const WorkRow& work, int qn, int chunk, int cp,
                                                uint8_t* q_s, int tid, int r0, int r1, int& end0, int& end1,
                                                float (&o)[4][32]) {
  end0 = visible_end(work, qn, p.heads, p.causal, chunk + r0, chunk + cp);
  end1 = visible_end(work, qn, p.heads, p.causal, chunk + r1, chunk + cp);
  bar_sync(kBarChunk, kConsumers);
  stage_q<F16, QR, HD>(p, work, chunk, cp, q_s, tid);
  bar_sync(kBarChunk, kConsumers);
#pragma unroll
  for (int nb = 0; nb < 4; ++nb)
#pragma unroll
    for (int i = 0; i < 32; ++i) o[nb][i] = 0.0f;
}

// A row-major chunk's output: warpgroup g's 256 columns of rows r0 and r1 (those below
// cp), O / l times kv_scale, as the final output (work.ploc < 0) or the split's partial
// rows; warpgroup 0's quad leader also writes the rows' LSE (natural log).
__device__ inline void store_chunk_rows(const Stage1Params& p, const WorkRow& work, int chunk, int cp, int g, int r0,
                                        int r1, int tq, const float (&o)[4][32], float m0, float l0, float m1, float l1,
                                        float kv_scale) {
  const int heads = p.heads;
  const bool final_out = work.ploc < 0;
  const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
  const float inv0 = l0 == 0.0f ? 0.0f : kv_scale / l0, inv1 = l1 == 0.0f ? 0.0f : kv_scale / l1;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half ? r1 : r0;
    if (r >= cp) continue;
    const float inv = half ? inv1 : inv0;
    const int64_t at_row = (row_base + r) * kVDim + g * kVCols + 2 * tq;
#pragma unroll
    for (int nb = 0; nb < 4; ++nb)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float x0 = o[nb][4 * j + 2 * half] * inv, x1 = o[nb][4 * j + 2 * half + 1] * inv;
        const int64_t at = at_row + nb * 64 + 8 * j;
        if (final_out) {
          *reinterpret_cast<uint32_t*>(p.out + at) =
              uint32_t(encode_out(p.out_type, x0)) | (uint32_t(encode_out(p.out_type, x1)) << 16);
        } else {
          *reinterpret_cast<float2*>(p.partial_out + at) = make_float2(x0, x1);
        }
      }
    if (g == 0 && tq == 0) {
      const float l = half ? l1 : l0, m = half ? m1 : m0;
      const float lse = l == 0.0f ? kNegInf : (m + log2f(l)) * 0.6931471805599453f;
      if (final_out) {
        if (p.lse) p.lse[row_base + r] = lse;
      } else {
        p.partial_lse[row_base + r] = lse;
      }
    }
  }
}

// HD: head_dim (576 or 512), a template parameter so the Q·Kᵀ chain of wgmmas unrolls
// (a rolled loop made ptxas serialise the wgmma pipeline). P1: P rounded once
// (PvPrecision::once). ptxas (nvcc 13.0) serialised the wgmmas (C7514/C7515) for
// several placements of the same steps (a wgmma under a branch in the loop, a
// wait_group 1 after issuing Q·Kᵀ): check -Xptxas -v after any change here.
template <bool F16, int HD, bool P1>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_rows_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int QR = Plan::qr, S = Plan::stages, NT = Plan::nt, kKSteps = NT / 16;
  constexpr int kPParts = P1 ? 1 : 2;  // P as [hi] or [hi, lo]
  constexpr Plan plan{HD, P1};
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float2* alpha_buf = reinterpret_cast<float2*>(smem + plan.alpha_off());  // [128]
  float4* stats = reinterpret_cast<float4*>(smem);                         // [128], in q_s after the tile loop
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * S;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  int32_t w_begin, w_end;
  if (!row_major_start<QR, NT, S, HD>(p, plan, kv_s, full_bar, empty_bar, warp, lane, w_begin, w_end)) return;
  const StageRing<S> ring{kv_s, plan.stage_bytes(), full_bar, empty_bar};

  // ---- consumers: warpgroup g = 0 (Q·Kᵀ, softmax, columns 0..255), 1 (columns 256..511) ----
  // g through a lane-0 shuffle: ptxas then knows it is warp-uniform (derived from
  // threadIdx it saw a divergent path and serialised every wgmma: C7520).
  const int g = __shfl_sync(0xffffffffu, warp / 4, 0), ct = tid % 128, wq = (tid % 128) / 32;
  const int r0 = wq * 16 + lane / 4, r1 = r0 + 8;  // this thread's two chunk rows
  const int tq = lane % 4;
  constexpr float kLog2e = 1.4426950408889634f;
  const float score_scale = p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kLog2e;  // log2 domain
  if (g == 1) bar_arrive(kBarPFree, kConsumers);  // the P buffer starts free
  uint32_t k = 0;  // tiles consumed by this block (stage and phase of the ring)

  for_each_chunk<QR>(p, w_begin, w_end, tid == 0,
                     [&](int32_t w, const WorkRow& work, int qn, int chunk, int cp, int max_end) {
    int end0, end1;
    float o[4][32];
    start_row_chunk<F16, QR, HD>(p, work, qn, chunk, cp, q_s, tid, r0, r1, end0, end1, o);  // (and stats free)
    float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;  // log2-domain running max, partial sums
    uint32_t a[kKSteps][2][4];                              // [k-step][hi, lo] P fragments (P1: hi only)

    int i = 0;
    // This warp's release of the previous tile's stage (none before the chunk's first
    // tile; after the loop, the chunk's last).
    auto release_previous = [&] {
      if (i > 0) ring.release(k - 1, lane);
    };
    for (int tile = work.kv_start; tile < max_end; tile += NT, ++i, ++k) {
      const uint8_t* stage = ring.at(k);
      ring.wait_full(k, p.error);
      float alpha0, alpha1;
      if (g == 0) {
        float sc[NT / 2];
        // One chain: an m64n64k16 takes twice an m64n32k16's tensor time, so the
        // chain's dependent issue latency is half as exposed (two chains would add
        // 32 registers to a warpgroup already at ~200).
        // P·V of the previous tile first: its stage goes back to the producer before
        // this Q·Kᵀ, not after it (with two stages the next tile's load would
        // otherwise start a Q·Kᵀ later).
        wg_wait0();
#pragma unroll
        for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
        release_previous();
#pragma unroll
        for (int x = 0; x < NT / 2; ++x) sc[x] = 0.0f;
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(stage, NT, kk), kk > 0);
        wg_commit();
        wg_wait0();  // S
        pin(sc);
        online_softmax<NT>(sc, tile, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
        pack_p<F16, P1>(sc, a);
        bar_sync(kBarPFree, kConsumers);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
          for (int hl = 0; hl < kPParts; ++hl)
            plan.p_slot(smem, stage, ks, hl)[ct] = make_uint4(a[ks][hl][0], a[ks][hl][1], a[ks][hl][2], a[ks][hl][3]);
        alpha_buf[ct] = make_float2(alpha0, alpha1);
        bar_arrive(kBarPFull, kConsumers);
      } else {
        // The previous stage is released before waiting for P: with two stages, every
        // release counts.
        wg_wait0();  // P·V of the previous tile: its registers and stage are free
        release_previous();
        bar_sync(kBarPFull, kConsumers);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
          for (int hl = 0; hl < kPParts; ++hl) {
            const uint4 v = plan.p_slot(smem, stage, ks, hl)[ct];
            a[ks][hl][0] = v.x;
            a[ks][hl][1] = v.y;
            a[ks][hl][2] = v.z;
            a[ks][hl][3] = v.w;
          }
        const float2 al = alpha_buf[ct];
        alpha0 = al.x;
        alpha1 = al.y;
        bar_arrive(kBarPFree, kConsumers);
      }
      rescale_and_issue_pv<F16, P1, NT>(o, a, alpha0, alpha1, stage, g);
    }
    wg_wait0();
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
    release_previous();

    // Row statistics from warpgroup 0 to warpgroup 1.
    if (g == 0) {
#pragma unroll
      for (int o_ = 1; o_ < 4; o_ <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, o_);
        l1 += __shfl_xor_sync(0xffffffffu, l1, o_);
      }
      stats[ct] = make_float4(m0, l0, m1, l1);
      bar_arrive(kBarStats, kConsumers);
    } else {
      bar_sync(kBarStats, kConsumers);
      const float4 st = stats[ct];
      m0 = st.x, l0 = st.y, m1 = st.z, l1 = st.w;
    }

    store_chunk_rows(p, work, chunk, cp, g, r0, r1, tq, o, m0, l0, m1, l1, 1.0f);
  });
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace mla::wg
