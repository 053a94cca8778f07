// The row-major warpgroup stage 1 with the seesaw schedule (WgmmaSchedule::seesaw;
// NVIDIA sm_90a). Included by kernels/stage1_wgmma.hip after kernels/stage1_wgmma.cuh,
// whose producer, Plan, wgmma wrappers, softmax and epilogue it uses.
//
// Why (docs/bench_notes.md steps 38 and 41): in the serial schedules warpgroup 0 carries
// every tile's Q·Kᵀ -> softmax -> P·V chain and warpgroup 1 waits for P more than half
// the time, so nothing is in the tensor pipe while warpgroup 0 runs a softmax. Here the
// warpgroups take turns, as in FlashMLA's seesaw (deepseek-ai/FlashMLA
// docs/20250422-new-kernel-deep-dive.md@12cfd32), on our producer and 64-token tiles:
//   * warpgroup g owns the block's tiles k with k % 2 == g (tile k sits in stage k % 2):
//     it runs their Q·Kᵀ and softmax, publishes P and the new running max m, and
//     rescales and accumulates its half of O (columns 256g .. 256g + 255);
//   * for the other warpgroup's tile it reads P and m (after a named barrier), derives
//     the same alpha from its copy of the previous max, and accumulates its half;
//   * after that P·V it issues the Q·Kᵀ of its next own tile. (Issued before waiting
//     for P, it would run under the other's softmax, but it waits for a load: with two
//     stages, tile k+1 lands only once both P·Vs of tile k-1 are done. Both orders
//     measured slower than serial-64: docs/bench_notes.md step 41.)
// The running max is one chain through both warpgroups (each softmax starts from the
// max the other published), so P and alpha are serial-64's bits; the row sums are kept
// per warpgroup (each adds its own tiles' sums and applies every alpha) and added at
// the chunk's end, so l (and the output) may differ from serial-64's in the last bit.
//
// Shared memory is serial-64's Plan: q, two 64-token stages, one P buffer (P's hi part
// in the tile's rope block when P is in two parts at head_dim 576) and, where serial-64
// keeps alpha, the published max (float2 a thread). One P buffer is enough: P of tile
// k+1 is written by the warpgroup that read P of tile k (the same thread, same slot,
// after its read), and P of tile k+2 only once the reader of tile k has published the
// max of k+1. The row sums meet in q_s after the tile loop (no Q·Kᵀ is in flight then).
#pragma once

namespace mla {
namespace wg {

template <bool F16, int HD, bool P1>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_seesaw_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int QR = kRows, S = 2, NT = 64, kKSteps = NT / 16;
  constexpr int kPParts = P1 ? 1 : 2;
  constexpr Plan plan{QR, S, HD, NT, false, P1};
  static_assert(plan.p_bufs() == 1, "one P buffer (see above)");
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float2* m_buf = reinterpret_cast<float2*>(smem + plan.alpha_off());  // [128]: the owner's new running max
  float2* l_swap = reinterpret_cast<float2*>(q_s);                     // [2][128] after the tile loop
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * S;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  int32_t w_begin, w_end;
  if (!row_major_start<QR, NT, S, HD, false>(p, plan, kv_s, full_bar, empty_bar, warp, lane, w_begin, w_end)) return;

  const int g = __shfl_sync(0xffffffffu, warp / 4, 0), ct = tid % 128, wq = (tid % 128) / 32;
  const int r0 = wq * 16 + lane / 4, r1 = r0 + 8;  // this thread's two chunk rows
  const int tq = lane % 4;
  constexpr float kLog2e = 1.4426950408889634f;
  const float score_scale = p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kLog2e;  // log2 domain
  uint32_t k = 0;  // tiles consumed by this block (stage and phase of the ring, and the tile's owner)
  const StageRing<S> ring{kv_s, plan.stage_bytes(), full_bar, empty_bar};

  for_each_chunk<QR>(p, w_begin, w_end, tid == 0,
                     [&](int32_t w, const WorkRow& work, int qn, int chunk, int cp, int max_end) {
    int end0, end1;
    float o[4][32];
    start_row_chunk<F16, QR, HD>(p, work, qn, chunk, cp, q_s, tid, r0, r1, end0, end1, o);
    float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;  // log2-domain running max; this warpgroup's sums
    uint32_t a[kKSteps][2][4];                              // P fragments [k-step][hi, lo] (P1: hi only)
    float sc[NT / 2];                                       // S of this warpgroup's next own tile
#pragma unroll
    for (int x = 0; x < NT / 2; ++x) sc[x] = 0.0f;
    // S = Q·Kᵀ of tile t (one chain of m64n64k16: serial-64's order of k-steps).
    auto issue_qk = [&](uint32_t t) {
      const uint8_t* st = ring.at(t);
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(st, NT, kk), kk > 0);
      wg_commit();
    };
    // The chunk's first tile: its owner issues Q·Kᵀ here; every later tile's owner
    // issued it at the end of the step before.
    if (work.kv_start < max_end && int(k % 2) == g) {
      ring.wait_full(k, p.error);
      issue_qk(k);
    }

    int i = 0;
    // This warp's release of the previous tile's stage (after its P·V of it completed).
    auto release_previous = [&] {
      if (i > 0) ring.release(k - 1, lane);
    };
    for (int tile = work.kv_start; tile < max_end; tile += NT, ++i, ++k) {
      const uint8_t* stage = ring.at(k);
      const int owner = int(k % 2);
      float alpha0, alpha1;
      if (owner == g) {
        wg_wait0();  // S of this tile, and this warpgroup's P·V of the previous one
        pin(sc);
#pragma unroll
        for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
        release_previous();
        online_softmax<NT>(sc, tile, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
        pack_p<F16, P1>(sc, a);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
          for (int hl = 0; hl < kPParts; ++hl)
            plan.p_slot(smem, stage, 0, ks, hl)[ct] = make_uint4(a[ks][hl][0], a[ks][hl][1], a[ks][hl][2], a[ks][hl][3]);
        m_buf[ct] = make_float2(m0, m1);
        bar_arrive(kBarPFull + owner, kConsumers);
      } else {
        wg_wait0();  // this warpgroup's P·V of the previous tile (its own)
#pragma unroll
        for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
        release_previous();
        ring.wait_full(k, p.error);  // V of this tile, read by this warpgroup's P·V
        bar_sync(kBarPFull + owner, kConsumers);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
          for (int hl = 0; hl < kPParts; ++hl) {
            const uint4 v = plan.p_slot(smem, stage, 0, ks, hl)[ct];
            a[ks][hl][0] = v.x;
            a[ks][hl][1] = v.y;
            a[ks][hl][2] = v.z;
            a[ks][hl][3] = v.w;
          }
        adopt_max(m_buf[ct], m0, m1, l0, l1, alpha0, alpha1);
      }
      rescale_and_issue_pv<F16, P1, NT>(o, a, alpha0, alpha1, stage, g);
      // The next tile is this warpgroup's own: its Q·Kᵀ goes in behind this P·V.
      if (owner != g && tile + NT < max_end) {
        ring.wait_full(k + 1, p.error);
        issue_qk(k + 1);
      }
    }
    wg_wait0();
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
    release_previous();

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
