// The row-major warpgroup stage 1 with the pair schedules (WgmmaSchedule::pair and
// pair_32; NVIDIA sm_90a; docs/bench_notes.md steps 46-48). FlashMLA's order
// (deepseek-ai/FlashMLA csrc/sm90/decode/dense/splitkv_mla.cuh@9241ae3) on serial-64's
// two 64-token stages (pair) or on four 32-token ones (pair_32): per pair of tiles (A =
// tile k in stage k % S, B = tile k + 1 in the next), both Q·Kᵀ are issued at once, one
// a warpgroup, so warpgroup 1 no longer waits for a P it did not compute while the
// tensor pipe idles:
//   warpgroup 0: Q·Kᵀ(A); softmax(A) from the running max m (new max m_A, P_A); P_A and
//     m_A published (mbarrier pa); O_L = α_A·O_L + P_A·V_A,L; then, once P_B and m_B are
//     published (pb), O_L = α_B·O_L + P_B·V_B,L;
//   warpgroup 1: Q·Kᵀ(B); once m_A is published, softmax(B) from m_A (P_B, m_B), P_B and
//     m_B published; O_R = α_A·O_R + P_A·V_A,R, then O_R = α_B·O_R + P_B·V_B,R.
// P_A is applied before P_B in both halves, so no P is rescaled after the fact; the
// running max is one chain (m → m_A → m_B), the same bits in both warpgroups
// (adopt_max); each warpgroup keeps its own row sums, added at the chunk's end as the
// seesaw does (so the output may differ from serial-64's in the last bits).
//
// P is rounded once (wgmma_p_once is true for this schedule): two parts have no room
// beside two 72 KB stages and q. A tile's P goes to its stage's rope block at head_dim
// 576 (Plan::pair_p_slot; the tile's Q·Kᵀ, the block's only reader, has completed), else
// to the stage's P buffer: keyed by the stage, a P is not rewritten before both
// warpgroups gave its stage back, and each reads the other's P before its release. The
// published max is one float2 a thread (m_buf): warpgroup 0 writes m_A after reading
// m_B of the pair before; warpgroup 1 writes m_B after reading m_A. The hand-offs are
// mbarriers (128 arrivals, one phase a pair), so a protocol slip ends in kErrStall
// (exit 4) rather than a hang.
//
// Why every path waits for its P·V before a branch joins (step 47): with a wgmma in
// flight across a join, ptxas serialised every wgmma of the kernel (C7515: the join's
// moves define accumulator registers under the wgmma; C7512 when it kept two copies).
#pragma once

namespace mla {
namespace wg {

// NT-token tiles on S stages: 64 and 2 (WgmmaSchedule::pair), 32 and 4 (pair_32: the
// next pair's two tiles load while this pair's are read).
template <bool F16, int HD, int NT = 64, int S = 2>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_pair_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert((NT == 64 && S == 2) || (NT == 32 && S == 4), "the pair kernel's tiles and stages");
  constexpr int QR = kRows, kKSteps = NT / 16;
  constexpr Plan plan{QR, S, HD, NT, false, /*p_once=*/true, /*pair=*/true};
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float2* m_buf = reinterpret_cast<float2*>(smem + plan.alpha_off());  // [128]: m_A, then m_B
  float2* l_swap = reinterpret_cast<float2*>(q_s);                     // [2][128] after the tile loop
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * S;
  const uint32_t pa_bar = plan.pair_bar(saddr(smem)), pb_bar = pa_bar + 8;  // P_A, P_B published

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  if (tid == 0) {  // fenced by pipeline_start's fence.mbarrier_init, ordered by its __syncthreads
    mbar_init(pa_bar, kConsumers / 2);
    mbar_init(pb_bar, kConsumers / 2);
  }
  int32_t w_begin, w_end;
  if (!row_major_start<QR, NT, S, HD, false>(p, plan, kv_s, full_bar, empty_bar, warp, lane, w_begin, w_end)) return;

  const int g = __shfl_sync(0xffffffffu, warp / 4, 0), ct = tid % 128, wq = (tid % 128) / 32;
  const int r0 = wq * 16 + lane / 4, r1 = r0 + 8;  // this thread's two chunk rows
  const int tq = lane % 4;
  constexpr float kLog2e = 1.4426950408889634f;
  const float score_scale = p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kLog2e;  // log2 domain
  uint32_t k = 0;              // tiles consumed by this block (stage and phase of the ring)
  uint32_t na = 0, nb = 0;     // P_A and P_B hand-offs so far (their mbarriers' phases)
  const StageRing<S> ring{kv_s, plan.stage_bytes(), full_bar, empty_bar};
  // P of a tile as bf16/fp16 fragments into its slot, packed a k-step at a time (no
  // 16-register array beside a P·V in flight).
  auto store_p = [&](const uint8_t* stage, int s, const float (&x)[NT / 2]) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t f[4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int jb = 2 * ks + h;
        f[2 * h + 0] = pack2<F16>(x[4 * jb + 0], x[4 * jb + 1]);
        f[2 * h + 1] = pack2<F16>(x[4 * jb + 2], x[4 * jb + 3]);
      }
      plan.pair_p_slot(smem, stage, s, ks)[ct] = make_uint4(f[0], f[1], f[2], f[3]);
    }
  };
  auto load_p = [&](const uint8_t* stage, int s, uint32_t (&f)[kKSteps][2][4]) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const uint4 v = plan.pair_p_slot(smem, stage, s, ks)[ct];
      f[ks][0][0] = v.x;
      f[ks][0][1] = v.y;
      f[ks][0][2] = v.z;
      f[ks][0][3] = v.w;
    }
  };
  auto store_frags = [&](const uint8_t* stage, int s, const uint32_t (&f)[kKSteps][2][4]) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)
      plan.pair_p_slot(smem, stage, s, ks)[ct] = make_uint4(f[ks][0][0], f[ks][0][1], f[ks][0][2], f[ks][0][3]);
  };

  for_each_chunk<QR>(p, w_begin, w_end, tid == 0,
                     [&](int32_t w, const WorkRow& work, int qn, int chunk, int cp, int max_end) {
    int end0, end1;
    float o[4][32];
    start_row_chunk<F16, QR, HD>(p, work, qn, chunk, cp, q_s, tid, r0, r1, end0, end1, o);
    float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;  // log2-domain running max; this warpgroup's sums
    uint32_t a[kKSteps][2][4];                              // P fragments (hi only) of the P·V being issued
    float sc[NT / 2];  // S of this warpgroup's tile of the pair
    // On 32-token tiles Q·Kᵀ runs as two chains (even and odd k-steps, summed after the
    // wait, as the serial schedule does): one chain of 36 dependent m64n32k16 waits on
    // its own issue latency (docs/bench_notes.md step 48).
    constexpr int kChains = NT == 32 ? 2 : 1;
    float sc2[kChains == 2 ? NT / 2 : 1];
#pragma unroll
    for (int x = 0; x < NT / 2; ++x) sc[x] = 0.0f;
#pragma unroll
    for (int x = 0; x < int(sizeof(sc2) / sizeof(float)); ++x) sc2[x] = 0.0f;
    // S = Q·Kᵀ of one tile into sc (the first wgmma of a chain does not read it: scale-d 0).
    auto issue_qk = [&](const uint8_t* st) {
      wg_fence();
      if constexpr (kChains == 2) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk += 2) {
          mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(st, NT, kk), kk > 0);
          mma_qk<F16>(sc2, kstep_desc(q_s, QR, kk + 1), kstep_desc(st, NT, kk + 1), kk > 0);
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(st, NT, kk), kk > 0);
      }
      wg_commit();
    };
    // After the wait for S: pins it (and adds the second chain).
    auto take_s = [&] {
      pin(sc);
      if constexpr (kChains == 2) {
        pin(sc2);
#pragma unroll
        for (int x = 0; x < NT / 2; ++x) sc[x] += sc2[x];
      }
    };

    auto wait_pv = [&] {
      wg_wait0();
#pragma unroll
      for (int i = 0; i < 4; ++i) pin(o[i]);
    };

    // The pair's second P·V (P_B with B's alpha) once this warpgroup's first completed
    // (stage A goes back), then stage B back: both warpgroups end a full pair with it.
    auto pv_b = [&](const uint8_t* stage_b, int sb, float alpha0, float alpha1) {
      wait_pv();
      ring.release(k, lane);
      load_p(stage_b, sb, a);
      rescale_and_issue_pv<F16, true, NT>(o, a, alpha0, alpha1, stage_b, g);
      wait_pv();
      ring.release(k + 1, lane);
      nb += 1;
      k += 2;
    };

    // Every path below waits for its P·V before any branch joins: a wgmma in flight
    // across a join lets ptxas move its accumulators there (C7515) or keep two copies
    // (C7512) (docs/bench_notes.md steps 46-47).
    if (g == 0) {
      for (int tile = work.kv_start; tile < max_end; tile += 2 * NT) {
        const int sa = int(k % S), sb = int((k + 1) % S);
        const uint8_t* stage_a = ring.at(k);
        const uint8_t* stage_b = ring.at(k + 1);
        float alpha0, alpha1;
        ring.wait_full(k, p.error);
        issue_qk(stage_a);
        wg_wait0();  // S_A
        take_s();
        online_softmax<NT>(sc, tile, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
        pack_p<F16, true>(sc, a);
        store_frags(stage_a, sa, a);
        m_buf[ct] = make_float2(m0, m1);
        mbar_arrive(pa_bar);  // release: P_A and m_A before it
        rescale_and_issue_pv<F16, true, NT>(o, a, alpha0, alpha1, stage_a, g);
        if (tile + NT < max_end) {
          mbar_wait(pb_bar, nb & 1, p.error);
          adopt_max(m_buf[ct], m0, m1, l0, l1, alpha0, alpha1);
          ring.wait_full(k + 1, p.error);  // V_B, read by this warpgroup's wgmma
          pv_b(stage_b, sb, alpha0, alpha1);
        } else {
          wait_pv();
          ring.release(k, lane);
          k += 1;  // a lone last tile takes one stage
        }
        na += 1;
      }
    } else {
      for (int tile = work.kv_start; tile < max_end; tile += 2 * NT) {
        const int sa = int(k % S), sb = int((k + 1) % S);
        const uint8_t* stage_a = ring.at(k);
        const uint8_t* stage_b = ring.at(k + 1);
        float alpha_a0, alpha_a1;
        if (tile + NT < max_end) {
          ring.wait_full(k + 1, p.error);
          issue_qk(stage_b);
          mbar_wait(pa_bar, na & 1, p.error);
          adopt_max(m_buf[ct], m0, m1, l0, l1, alpha_a0, alpha_a1);
          wg_wait0();  // S_B
          take_s();
          // On 32-token tiles P_A·V_A,R runs under softmax(B) (which defines no
          // accumulator of it): O 128 + P_A 8 + S_B 16 registers fit beside the softmax.
          // On 64-token tiles (P_A 16, S_B 32) ptxas serialised the wgmmas (C7512) and
          // spilled, so there it follows softmax(B) (docs/bench_notes.md step 47).
          constexpr bool kPvUnderSoftmax = NT == 32;
          if constexpr (kPvUnderSoftmax) {
            ring.wait_full(k, p.error);
            load_p(stage_a, sa, a);
            rescale_and_issue_pv<F16, true, NT>(o, a, alpha_a0, alpha_a1, stage_a, g);
          }
          float alpha0, alpha1;
          online_softmax<NT>(sc, tile + NT, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
          store_p(stage_b, sb, sc);
          m_buf[ct] = make_float2(m0, m1);
          mbar_arrive(pb_bar);
          if constexpr (!kPvUnderSoftmax) {
            ring.wait_full(k, p.error);
            load_p(stage_a, sa, a);
            rescale_and_issue_pv<F16, true, NT>(o, a, alpha_a0, alpha_a1, stage_a, g);
          }
          pv_b(stage_b, sb, alpha0, alpha1);
        } else {
          mbar_wait(pa_bar, na & 1, p.error);
          adopt_max(m_buf[ct], m0, m1, l0, l1, alpha_a0, alpha_a1);
          ring.wait_full(k, p.error);
          load_p(stage_a, sa, a);
          rescale_and_issue_pv<F16, true, NT>(o, a, alpha_a0, alpha_a1, stage_a, g);
          wait_pv();
          ring.release(k, lane);
          k += 1;
        }
        na += 1;
      }
    }

    add_row_sums_across_warpgroups(l_swap, g, ct, l0, l1);
    store_chunk_rows(p, work, chunk, cp, g, r0, r1, tq, o, m0, l0, m1, l1, 1.0f);
  });
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace wg
}  // namespace mla
