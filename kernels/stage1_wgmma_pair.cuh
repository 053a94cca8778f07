// The row-major warpgroup stage 1 with the pair schedule (NVIDIA sm_90a). EXPERIMENT,
// NOT WIRED IN AND NEVER RUN (docs/bench_notes.md step 46): committed to keep it and
// reverted in the next commit. It compiles (include it after kernels/stage1_wgmma.cuh
// and kernels/stage1_wgmma_seesaw.cuh and instantiate stage1_wgmma_pair_kernel<F16, HD>),
// but ptxas serialises its wgmmas (C7512 here, with each warpgroup's loop of its own;
// C7515 with one loop and a branch inside, b17418b), which has to be solved before it is
// worth a launch.
//
// Why (docs/bench_notes.md step 44 and "Not done" (d)): serial-64's warpgroup 1 waits
// for P at a named barrier and the tensor pipe idles through every softmax; the seesaw
// (step 41) took turns but still ran one Q·Kᵀ at a time. FlashMLA's order
// (deepseek-ai/FlashMLA csrc/sm90/decode/dense/splitkv_mla.cuh@9241ae3) issues two tiles'
// Q·Kᵀ at once, one a warpgroup, on the same two stages we have. Per pair of 64-token
// tiles (A = tile k in stage k % 2, B = tile k + 1 in the other):
//   warpgroup 0: Q·Kᵀ(A); softmax(A) from the running max m (new max m_A, P_A); P_A and
//     m_A published; O_L = α_A·O_L + P_A·V_A,L; then, once P_B and m_B are published and
//     its P·V is done (stage A back), O_L = α_B·O_L + P_B·V_B,L;
//   warpgroup 1: Q·Kᵀ(B), issued at the pair's start beside warpgroup 0's; once m_A is
//     published and its Q·Kᵀ is done, softmax(B) from m_A, P_B and m_B published; then
//     O_R = α_A·O_R + P_A·V_A,R and, once that P·V is done (stage A back),
//     O_R = α_B·O_R + P_B·V_B,R. (Its softmax runs with no wgmma of its own in flight:
//     ptxas serialises a pipeline whose accumulators are redefined under it, C7515.)
// So P_A is applied before P_B in both halves and no P is rescaled after the fact; the
// running max is one chain (m → m_A → m_B), the same bits in both warpgroups (adopt_max),
// and each warpgroup keeps its own row sums, added at the chunk's end as the seesaw does.
// Stage A goes back mid-pair (its next tile loads under B's P·Vs), stage B at the next
// pair's start, before either warpgroup waits for anything else.
//
// P is rounded once (PvPrecision::once): P in two parts has no room beside two 72 KB
// stages and q. P_A goes to P buffer 0; P_B to tile B's rope block at head_dim 576 (B's
// Q·Kᵀ, its only reader, has completed), else to P buffer 1 (Plan::pair_p_slot). The
// published max is serial-64's alpha slot (one float2 a thread: warpgroup 1 overwrites
// m_A with m_B after reading it, the same thread). The two hand-offs are mbarriers
// (128 arrivals, one phase a pair), not named barriers, so a protocol slip ends in
// kErrStall (exit 4) rather than a hang. A buffer is never rewritten before it is read:
// warpgroup 0 writes P_A(j+1) only after waiting for P_B(j), which warpgroup 1 publishes
// after it read P_A(j); warpgroup 1 writes P_B(j+1) only after P_A(j+1), which warpgroup 0
// publishes after it read P_B(j).
#pragma once

namespace mla {
namespace wg {

template <bool F16, int HD>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_pair_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int QR = kRows, S = 2, NT = 64, kKSteps = NT / 16;
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
  const int heads = p.heads;

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
  auto stage_at = [&](uint32_t t) { return kv_s + size_t(t % S) * plan.stage_bytes(); };
  // Waits until tile t has landed, and makes the producer's writes visible to wgmma.
  auto wait_full = [&](uint32_t t) {
    mbar_wait(full_bar + 8 * (t % S), (t / S) & 1, p.error);
    fence_async_smem();
  };
  // This warp's release of tile t's stage (after its last read of it completed).
  auto release = [&](uint32_t t) {
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar + 8 * (t % S));
  };
  auto store_p = [&](const uint8_t* stage, bool second, const uint32_t (&f)[kKSteps][2][4]) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)
      plan.pair_p_slot(smem, stage, second, ks)[ct] = make_uint4(f[ks][0][0], f[ks][0][1], f[ks][0][2], f[ks][0][3]);
  };
  auto load_p = [&](const uint8_t* stage, bool second, uint32_t (&f)[kKSteps][2][4]) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const uint4 v = plan.pair_p_slot(smem, stage, second, ks)[ct];
      f[ks][0][0] = v.x;
      f[ks][0][1] = v.y;
      f[ks][0][2] = v.z;
      f[ks][0][3] = v.w;
    }
  };

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    if (!work_ok(p, work, w, tid == 0)) continue;
    const int qn = work.qo_end - work.qo_start, pairs = qn * heads;
    for (int chunk = first_chunk(p, QR); chunk < pairs; chunk += QR * p.pair_tiles) {
      const int cp = min(QR, pairs - chunk);
      const int max_end = visible_end(work, qn, heads, p.causal, chunk + cp - 1, pairs);
      const int end0 = visible_end(work, qn, heads, p.causal, chunk + r0, chunk + cp);
      const int end1 = visible_end(work, qn, heads, p.causal, chunk + r1, chunk + cp);

      bar_sync(kBarChunk, kConsumers);  // the previous chunk is done with q_s
      stage_q<F16, QR, HD>(p, work, chunk, cp, q_s, tid);
      bar_sync(kBarChunk, kConsumers);

      float o[4][32];
#pragma unroll
      for (int nb_ = 0; nb_ < 4; ++nb_)
#pragma unroll
        for (int i = 0; i < 32; ++i) o[nb_][i] = 0.0f;
      float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;  // log2-domain running max; this warpgroup's sums
      uint32_t a[kKSteps][2][4];                              // P fragments (hi only) of the P·V being issued
      float sc[NT / 2];  // S of this warpgroup's tile of the pair
#pragma unroll
      for (int x = 0; x < NT / 2; ++x) sc[x] = 0.0f;
      // S = Q·Kᵀ of one tile into sc (the first wgmma does not read sc: scale-d 0).
      auto issue_qk = [&](const uint8_t* st) {
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(st, NT, kk), kk > 0);
        wg_commit();
      };

      bool holds = false;  // this warpgroup's last P·V read tile `held`'s stage, not yet given back
      uint32_t held = 0;
      // Each warpgroup runs its own loop over the pairs: one loop with a branch inside
      // let ptxas join the branches and serialise the wgmmas (docs/bench_notes.md step 46).
      if (g == 0) {
        for (int tile = work.kv_start; tile < max_end; tile += 2 * NT) {
          const bool has_b = tile + NT < max_end;
          const uint8_t* stage_a = stage_at(k);
          const uint8_t* stage_b = stage_at(k + 1);
          // The previous pair's last P·V, then its stage back before anything else: the
          // producer refills it with this pair's tile B.
          wg_wait0();
#pragma unroll
          for (int i = 0; i < 4; ++i) pin(o[i]);
          if (holds) release(held);
          holds = true;  // each branch below sets `held`
          float alpha0, alpha1;
            wait_full(k);
            issue_qk(stage_a);
            wg_wait0();  // S_A
            pin(sc);
            online_softmax<NT>(sc, tile, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
            pack_p<F16, true>(sc, a);
            store_p(stage_a, false, a);
            m_buf[ct] = make_float2(m0, m1);
            mbar_arrive(pa_bar);  // release: P_A and m_A before it
            rescale_and_issue_pv<F16, true, NT>(o, a, alpha0, alpha1, stage_a, g);
            if (has_b) {
              mbar_wait(pb_bar, nb & 1, p.error);
              wait_full(k + 1);  // V_B, read by this warpgroup's wgmma
              wg_wait0();        // P_A·V_A,L: stage A and the fragments are free
#pragma unroll
              for (int i = 0; i < 4; ++i) pin(o[i]);
              release(k);
              load_p(stage_b, true, a);
              adopt_max(m_buf[ct], m0, m1, l0, l1, alpha0, alpha1);
              rescale_and_issue_pv<F16, true, NT>(o, a, alpha0, alpha1, stage_b, g);
              held = k + 1;
            } else {
              held = k;
            }
          na += 1;
          nb += has_b ? 1 : 0;
          k += has_b ? 2 : 1;  // a lone last tile takes one stage
        }
      } else {
        for (int tile = work.kv_start; tile < max_end; tile += 2 * NT) {
          const bool has_b = tile + NT < max_end;
          const uint8_t* stage_a = stage_at(k);
          const uint8_t* stage_b = stage_at(k + 1);
          // The previous pair's last P·V, then its stage back before anything else: the
          // producer refills it with this pair's tile B.
          wg_wait0();
#pragma unroll
          for (int i = 0; i < 4; ++i) pin(o[i]);
          if (holds) release(held);
          holds = true;  // each branch below sets `held`
          float alpha0, alpha1;
            if (has_b) {
              wait_full(k + 1);
              issue_qk(stage_b);
            }
            mbar_wait(pa_bar, na & 1, p.error);
            float alpha_a0, alpha_a1;
            adopt_max(m_buf[ct], m0, m1, l0, l1, alpha_a0, alpha_a1);
            // S_B. Unconditional: ptxas does not tie this wait to the issue above, and a
            // path with Q·Kᵀ in flight while O is rescaled serialises every wgmma (C7515).
            wg_wait0();
            pin(sc);
            // α_A on O now (no wgmma of this warpgroup is in flight), so it is not live
            // across the softmax: registers, ptxas C7512.
#pragma unroll
            for (int nb_ = 0; nb_ < 4; ++nb_)
#pragma unroll
              for (int j = 0; j < 8; ++j) {
                o[nb_][4 * j + 0] *= alpha_a0;
                o[nb_][4 * j + 1] *= alpha_a0;
                o[nb_][4 * j + 2] *= alpha_a1;
                o[nb_][4 * j + 3] *= alpha_a1;
              }
            if (has_b) {
              // softmax(B) before P_A's P·V, with no wgmma of this warpgroup in flight, and
              // P_B out as early as it can be: warpgroup 0 waits for it.
              online_softmax<NT>(sc, tile + NT, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
              pack_p<F16, true>(sc, a);
              store_p(stage_b, true, a);
              m_buf[ct] = make_float2(m0, m1);
              mbar_arrive(pb_bar);
            }
            wait_full(k);  // V_A, read by this warpgroup's wgmma
            load_p(stage_a, false, a);
            rescale_and_issue_pv<F16, true, NT>(o, a, 1.0f, 1.0f, stage_a, g);  // O already took α_A
            if (has_b) {
              wg_wait0();  // P_A·V_A,R: stage A is free
#pragma unroll
              for (int i = 0; i < 4; ++i) pin(o[i]);
              release(k);
              load_p(stage_b, true, a);  // P_B again: one fragment array (registers: ptxas C7512)
              rescale_and_issue_pv<F16, true, NT>(o, a, alpha0, alpha1, stage_b, g);
              held = k + 1;
            } else {
              held = k;
            }
          na += 1;
          nb += has_b ? 1 : 0;
          k += has_b ? 2 : 1;  // a lone last tile takes one stage
        }
      }
      wg_wait0();
#pragma unroll
      for (int i = 0; i < 4; ++i) pin(o[i]);
      if (holds) release(held);

      add_row_sums_across_warpgroups(l_swap, g, ct, l0, l1);
      store_chunk_rows(p, work, chunk, cp, g, r0, r1, tq, o, m0, l0, m1, l1, 1.0f);
    }
  }
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace wg
}  // namespace mla
