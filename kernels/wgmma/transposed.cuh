// The transposed warpgroup stage-1 kernel (Stage1Schedule::wgmma_transposed; NVIDIA
// sm_90a): works of at most 16 (row, head) pairs, and every fp8-KV view the warpgroup
// family serves; head_dim 576 or 512, v_dim 512.
#pragma once

#include "kernels/wgmma/fp8_operands.cuh"

namespace mla {
namespace wg {

// ---- Transposed warpgroup stage 1, for works of at most 16 (row, head) pairs ----
//
// With 16 pairs the kernel above runs 64-row wgmmas that are 3/4 padding (and
// loses to mma.sync on M1: docs/bench_notes.md). Here the 64 rows are
// KV tokens instead:
//   Sᵀ (64 tokens x 16 pairs) = K (64 x d, smem) · Qᵀ   (wgmma m64n16k16, Q as B)
//   Oᵀ (512 cols x 16 pairs) += Vᵀ (512 x 64, the same tile read M-major) · Pᵀ
// so no row is padding and each KV tile is read once by the tensor cores. Each
// consumer warpgroup owns alternate 64-token tiles with its own softmax state
// (tile max across its 4 warps through shared memory), writes Pᵀ (hi and lo
// parts, bf16/fp16) into its own swizzled buffer, and the two states are merged
// at the end of a chunk. Producer: produce_kv_tiles with 2 stages of 64 tokens.
constexpr int kTNT = 64, kTPairs = 16, kTStages = 2;
// fp8 KV (kv8) adds the producer's raw buffers (kRawHalves x 32 rows of head_dim
// codes, 54 KB at 576) where 16-bit KV has the 32 KB merge buffer: both would not
// fit in 227 KB, so fp8 merges warpgroup 1's accumulators through q_s (18 KB) in
// two rounds of 16 KB at the chunk end, when q is no longer read.
// The e4m3 path (fp8 q and e4m3fn KV, stage1_wgmma_t_kernel's E4M3) has no 16-bit
// stage at all: q as codes (9 KB), the P buffers and statistics next to it, then
// kTRawStages tiles of raw codes (36 KB each at 576, the layout of raw_offset). It
// merges through q_s and the P buffers (16 KB from offset 0, two rounds), free at
// the chunk end, so its smem holds five raw stages.
constexpr int kTRawStages = 5;
struct PlanT {
  int head_dim;
  bool kv8 = false;
  bool e4m3 = false;  // q as codes (Q·Kᵀ on e4m3 wgmma)
  bool kreg = false;  // K converted in registers (KREG)
  __host__ __device__ static constexpr size_t align1k(size_t x) { return (x + 1023) & ~size_t(1023); }
  // The raw ring and no 16-bit stage: both paths that convert in the consumers.
  __host__ __device__ constexpr bool raw() const { return e4m3 || kreg; }
  __host__ __device__ constexpr int blocks() const { return head_dim / 64; }
  __host__ __device__ constexpr int stages() const { return raw() ? kTRawStages : kTStages; }
  __host__ __device__ constexpr size_t q_bytes() const {
    return e4m3 ? size_t(kTPairs) * head_dim : size_t(blocks()) * kTPairs * kRowBytes;
  }
  __host__ __device__ constexpr size_t stage_bytes() const {
    return raw() ? size_t(kTNT) * head_dim : size_t(blocks()) * kTNT * kRowBytes;
  }
  static constexpr size_t kPBytes = 2 * 2 * kTPairs * kRowBytes;  // [wg][hi, lo][16][128 B]
  static constexpr size_t kRedBytes = 2 * 4 * kTPairs * 4;        // [wg][4 warps][16] f32
  static constexpr size_t kMlBytes = (2 * 4 * kTPairs + kTPairs) * 4;  // [wg][4 warps][16] l, [16] m
  // 16-bit KV: [64 regs][128 thr] f32; staged fp8 KV: the raw buffers, [half][chunk][thread][16 B]; e4m3: none
  __host__ __device__ constexpr size_t raw_half_bytes() const { return size_t(kProducers / 4) * head_dim; }
  __host__ __device__ constexpr size_t merge_bytes() const { return raw() ? 0 : kv8 ? kRawHalves * raw_half_bytes() : 64 * 128 * 4; }
  __host__ __device__ constexpr size_t p_off() const { return raw() ? q_bytes() : kv_off() + stages() * stage_bytes(); }
  __host__ __device__ constexpr size_t red_off() const { return p_off() + kPBytes; }
  __host__ __device__ constexpr size_t merge_off() const { return red_off() + kRedBytes; }
  __host__ __device__ constexpr size_t ml_off() const { return merge_off() + merge_bytes(); }
  __host__ __device__ constexpr size_t kv_off() const { return raw() ? align1k(ml_off() + kMlBytes) : q_bytes(); }
  __host__ __device__ constexpr size_t bar_off() const {
    return raw() ? kv_off() + stages() * stage_bytes() : ml_off() + kMlBytes;
  }
  __host__ __device__ constexpr size_t total() const { return bar_off() + 2 * stages() * 8 + 1024; }
};
// The merge of warpgroup 1's 64 accumulators: in one round (its own buffer) or two
// (fp8 KV, from offset 0: q_s, with the P buffers after it on the e4m3 path, holds
// 16 KB: 32 accumulators x 128 threads).
__host__ __device__ constexpr int merge_rounds(bool merge_in_q) { return merge_in_q ? 2 : 1; }
static_assert(kTPairs * kRowBytes * (512 / 64) >= 32 * 128 * 4, "fp8 merge rounds fit in q_s (head_dim 512 or 576)");
static_assert(kTPairs * 512 + PlanT::kPBytes >= 32 * 128 * 4, "e4m3 merge rounds fit in q_s + P");
static_assert(kTPairs * 576 % 1024 == 0 && kTPairs * 512 % 1024 == 0,
              "e4m3 plan: q keeps the P buffers 1024-aligned (the 128-byte swizzle atom)");
static_assert(PlanT{576, true, true}.total() <= 232448 && PlanT{576, true, false, true}.total() <= 232448 &&
                  PlanT{576, true, false}.total() <= 232448 && PlanT{576, false, false}.total() <= 232448,
              "transposed plans within the 227 KB of an sm_90 block");
constexpr int kBarMergeStart = 9, kBarMergeRead = 10;

// This consumer thread's place in the kernel's fragments: warpgroup g, warp wq of it,
// lane 4gq + tq.
struct TLane {
  int g, wq, gq, tq, ct, lane, tid;
  // This thread's 4 pair columns of every n16 accumulator: x = 2j + e (j: n8 block, e: low bit).
  __device__ int pair_of(int x) const { return 8 * (x >> 1) + 2 * tq + (x & 1); }
};

// The producer warpgroup's loop for the kernel's path: 16-bit tiles, fp8 codes
// converted into 16-bit stages (KV8, not RAW), or the raw codes (RAW).
template <bool F16, int HD, bool KV8, bool RAW>
__device__ __forceinline__ void t_produce(const Stage1Params& p, const PlanT& plan, uint8_t* smem, uint8_t* kv_s,
                                          uint32_t full_bar, uint32_t empty_bar, int32_t w_begin, int32_t w_end,
                                          int warp, int lane, int tid) {
  if constexpr (RAW) {
    produce_kv_tiles<kTPairs, kTNT, kTRawStages, HD, true>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar,
                                                           empty_bar, warp - kConsumers / 32, lane);
  } else if constexpr (KV8) {
    if (p.fp8_fnuz)
      produce_fp8_tiles<F16, true, kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(),
                                                                smem + plan.merge_off(), full_bar, empty_bar,
                                                                tid - kConsumers);
    else
      produce_fp8_tiles<F16, false, kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(),
                                                                 smem + plan.merge_off(), full_bar, empty_bar,
                                                                 tid - kConsumers);
  } else {
    produce_kv_tiles<kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar, empty_bar,
                                                  warp - kConsumers / 32, lane);
  }
}

// Sᵀ of one tile (64 tokens x 16 pairs) into two accumulator chains (even and odd
// k-steps, summed by the caller): from the codes on e4m3 wgmma (E4M3), from K converted
// into register A fragments (KREG), or from the 16-bit stage.
template <bool F16, int HD, bool E4M3, bool KREG>
__device__ __forceinline__ void t_scores(const uint8_t* stage, const uint8_t* q_s, const TLane& th, float (&sa)[8],
                                         float (&sb)[8]) {
  const int wq = th.wq, gq = th.gq, tq = th.tq;
#pragma unroll
  for (int x = 0; x < 8; ++x) sa[x] = sb[x] = 0.0f;
  wg_fence();
  if constexpr (E4M3) {
#pragma unroll
    for (int kk = 0; kk < HD / 32; ++kk) {
      const uint64_t da = desc_at(desc_sw32(saddr(stage)), kk * kTNT * kRawKBytes),
                     db = desc_at(desc_sw32(saddr(q_s)), kk * kTPairs * kRawKBytes);
      if (kk % 2 == 0) mma_m64n16k32_e4m3(sa, da, db, kk > 1);
      else mma_m64n16k32_e4m3(sb, da, db, kk > 1);
    }
  } else if constexpr (KREG) {
    // Rows 16wq + gq and + 8 (the same 32-byte swizzle phase), chunk 4kb + tq:
    // raw_offset(tq, r, 64) + 4096 kb. Block kb + 1's codes are loaded while kb's
    // are converted; kb's fragments are converted while kb - 1's wgmmas run (two
    // buffers: wait_group 1 frees the one kb - 2 read).
    constexpr int kBlocks = HD / 64;
    // The zeroed accumulators before kb = 0's fence (ptxas sank the zeroing to the first
    // wgmma and injected a warpgroup.arrive and a warpgroup.wait: C7519, C7517).
    pin(sa);
    pin(sb);
    const uint32_t k0 = saddr(stage) + raw_offset(tq, 16 * wq + gq, kTNT), k1 = k0 + 8 * kRawKBytes;
    uint32_t a[2][4][4];
    uint4 x0, x1;
    lds128(k0, x0);
    lds128(k1, x1);
#pragma unroll
    for (int kb = 0; kb < kBlocks; ++kb) {
      uint4 y0, y1;
      if (kb + 1 < kBlocks) {
        lds128(k0 + (kb + 1) * 2 * kTNT * kRawKBytes, y0);
        lds128(k1 + (kb + 1) * 2 * kTNT * kRawKBytes, y1);
      }
      if (kb >= 2) wg_wait<1>();
      const uint32_t* w0 = &x0.x;
      const uint32_t* w1 = &x1.x;
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // word j: columns 2tq, 2tq+1 (low half), 2tq+8, 2tq+9 of k-step 4kb + j
        fp8x4_to_f16x4_cvt(w0[j], &a[kb & 1][j][0], &a[kb & 1][j][2]);
        fp8x4_to_f16x4_cvt(w1[j], &a[kb & 1][j][1], &a[kb & 1][j][3]);
        // converted before the fence (else ptxas injects one per wgmma: C7519)
        asm volatile("" : "+r"(a[kb & 1][j][0]), "+r"(a[kb & 1][j][1]), "+r"(a[kb & 1][j][2]),
                     "+r"(a[kb & 1][j][3])::"memory");
      }
      wg_fence();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint64_t db = kstep_desc(q_s, kTPairs, 4 * kb + j);
        if (j % 2 == 0) mma_m64n16_f16_rs(sa, a[kb & 1][j], db);
        else mma_m64n16_f16_rs(sb, a[kb & 1][j], db);
      }
      wg_commit();
      if (kb + 1 < kBlocks) x0 = y0, x1 = y1;
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const uint64_t da = kstep_desc(stage, kTNT, kk), db = kstep_desc(q_s, kTPairs, kk);
      if (kk % 2 == 0) mma_m64n16<F16, 0>(sa, da, db, kk > 1);
      else mma_m64n16<F16, 0>(sb, da, db, kk > 1);
    }
  }
  wg_commit();
  wg_wait0();
  pin(sa);
  pin(sb);
}

// The online softmax of one tile (this warpgroup's running max m, sums l, the rescale
// alpha of what came before) and Pᵀ into the warpgroup's buffers.
template <bool F16, bool PV8, bool RAW, bool P1>
__device__ __forceinline__ void t_softmax_to_p(const float (&sa)[8], const float (&sb)[8], int tile, const int (&end)[4],
                                               float score_scale, float* red, uint8_t* p_hi, uint8_t* p_lo,
                                               const TLane& th, float (&m)[4], float (&l)[4], float (&alpha)[4]) {
  const int g = th.g, wq = th.wq, gq = th.gq;
  auto pair_of = [&](int x) { return th.pair_of(x); };
  // Accumulator a = 4j + e: token 16wq + gq + 8 (e >> 1), pair 8j + 2tq + (e & 1).
  float v[8], mx[4];
#pragma unroll
  for (int x = 0; x < 4; ++x) mx[x] = kNegInf;
#pragma unroll
  for (int a = 0; a < 8; ++a) {
    const int x = 2 * (a >> 2) + (a & 1);
    const int tok = tile + 16 * wq + gq + 8 * ((a >> 1) & 1);
    v[a] = tok < end[x] ? (sa[a] + sb[a]) * score_scale : kNegInf;
    mx[x] = fmaxf(mx[x], v[a]);
  }
#pragma unroll
  for (int x = 0; x < 4; ++x)
#pragma unroll
    for (int o_ = 4; o_ < 32; o_ <<= 1) mx[x] = fmaxf(mx[x], __shfl_xor_sync(0xffffffffu, mx[x], o_));
  if (gq == 0)
#pragma unroll
    for (int x = 0; x < 4; ++x) red[(g * 4 + wq) * kTPairs + pair_of(x)] = mx[x];
  bar_sync(kBarRed + g, 128);
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    float t = red[(g * 4 + 0) * kTPairs + pair_of(x)];
#pragma unroll
    for (int w2 = 1; w2 < 4; ++w2) t = fmaxf(t, red[(g * 4 + w2) * kTPairs + pair_of(x)]);
    const float n = fmaxf(m[x], t);
    alpha[x] = n == kNegInf ? 1.0f : exp2f(m[x] - n);
    m[x] = n;
    l[x] *= alpha[x];
  }
  // Pᵀ into the warpgroup's buffers: row = pair, 64 tokens of 16 bits (one swizzle row);
  // PV8: [k-step][hi rows 0-15, lo rows 16-31][32 codes] (raw_offset's layout, 32 rows).
  if constexpr (PV8) {
#pragma unroll
    for (int a = 0; a < 8; a += 2) {
      const int x = 2 * (a >> 2);  // a: pair r = pair_of(x), a + 1: pair r + 1
      const float p0 = v[a] == kNegInf ? 0.0f : exp2f(v[a] - m[x]);
      const float p1 = v[a + 1] == kNegInf ? 0.0f : exp2f(v[a + 1] - m[x + 1]);
      l[x] += p0;
      l[x + 1] += p1;
      const int t = e4m3_p8_col(16 * wq + gq + 8 * ((a >> 1) & 1)), r = pair_of(x);
      const float s0 = p0 * 256.0f, s1 = p1 * 256.0f;  // P <= 1: e4m3's range is 448
      const uint32_t hi = f32x2_to_e4m3x2(s0, s1);
      const float2 hv = e4m3x2_to_f32x2(hi);
      const uint32_t lo = f32x2_to_e4m3x2((s0 - hv.x) * 16.0f, (s1 - hv.y) * 16.0f);
      auto at = [&](int n) { return p_hi + raw_offset(t >> 4, n, 32) + (t & 15); };
      *at(r) = uint8_t(hi);
      *at(r + 1) = uint8_t(hi >> 8);
      *at(16 + r) = uint8_t(lo);
      *at(17 + r) = uint8_t(lo >> 8);
    }
  } else
#pragma unroll
  for (int a = 0; a < 8; ++a) {
    const int x = 2 * (a >> 2) + (a & 1);
    const float pv = v[a] == kNegInf ? 0.0f : exp2f(v[a] - m[x]);
    l[x] += pv;
    const int tt = 16 * wq + gq + 8 * ((a >> 1) & 1), r = pair_of(x);
    const int t = RAW ? e4m3_p_col(tt) : tt;  // Pᵀ's k column for the token
    const uint32_t off = swz(t >> 3, r, kTPairs) + (t & 7) * 2;
    const uint16_t hi = encode16<F16>(pv);
    *reinterpret_cast<uint16_t*>(p_hi + off) = hi;
    if constexpr (!RAW && !P1) *reinterpret_cast<uint16_t*>(p_lo + off) = encode16<F16>(pv - decode16<F16>(hi));
  }
  fence_async_smem();
  bar_sync(kBarRed + g, 128);  // Pᵀ complete; every warp is past reading red
}

// Oᵀ = alpha · Oᵀ + Vᵀ · Pᵀ for one tile, then this warp's release of the stage
// (its `empty` mbarrier at empty_bar_s).
template <bool F16, bool PV8, bool RAW, bool P1>
__device__ __forceinline__ void t_pv(float (&o)[8][8], const float (&alpha)[4], const uint8_t* stage, uint8_t* p_hi,
                                     uint8_t* p_lo, const TLane& th, uint32_t empty_bar_s) {
  const int wq = th.wq, gq = th.gq, tq = th.tq, lane = th.lane;
  auto pair_of = [&](int x) { return th.pair_of(x); };
  bool released = false;       // this warp's arrival on the stage's `empty`
  if constexpr (!PV8)          // PV8 rescales O as it adds each tile's part
#pragma unroll
    for (int cb = 0; cb < 8; ++cb)
#pragma unroll
      for (int a = 0; a < 8; ++a) o[cb][a] *= alpha[2 * (a >> 2) + (a & 1)];
  if constexpr (PV8) {
    // Four quarters of 2 column blocks (e4m3_v8_col): quarter q reads word q ^ sh of
    // this thread's 16-byte chunk c of each token, token 32s + tq + 4e at
    // raw_offset(c, tq, 64) + (32s + 4e) 32 with the 16-byte unit flipped for odd e.
    // Two quarters in flight (D and A double-buffered), so a quarter's O update runs
    // while the next quarter's wgmmas do.
    const int c = 8 * wq + gq, sh = gq >> 1;
    const uint32_t vb[2] = {saddr(stage) + raw_offset(c, tq, kTNT), saddr(stage) + raw_offset(c ^ 1, tq, kTNT)};
    uint32_t av[2][2][2][4];  // [buffer][k-step][block of the quarter][register]
    float d[1][2][16];        // [block of the quarter][accumulator]
    auto load_quarter = [&](int q, uint32_t(&aq)[2][2][4]) {
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        uint32_t x[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) lds32(vb[e & 1] + (32 * ks + 4 * e) * kRawKBytes + 4 * (q ^ sh), x[e]);
        e4m3_v8_frags(x, aq[ks]);
#pragma unroll
        for (int cl = 0; cl < 2; ++cl)  // converted before the fence (C7519)
          asm volatile("" : "+r"(aq[ks][cl][0]), "+r"(aq[ks][cl][1]), "+r"(aq[ks][cl][2]),
                       "+r"(aq[ks][cl][3])::"memory");
      }
    };
    auto issue_quarter = [&](const uint32_t(&aq)[2][2][4], float(&dq)[2][16]) {
      wg_fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const uint64_t db = desc_at(desc_sw32(saddr(p_hi)), ks * 32 * kRawKBytes);
#pragma unroll
        for (int cl = 0; cl < 2; ++cl) mma_m64n32k32_e4m3_rs(dq[cl], aq[ks][cl], db, ks);
      }
      wg_commit();
    };
    // O·α + D_hi + D_lo / 16 (both parts scaled by 256: inv takes 1/256 at the end).
    auto add_quarter = [&](int q, float(&dq)[2][16]) {
#pragma unroll
      for (int cl = 0; cl < 2; ++cl) {
        pin(dq[cl]);
#pragma unroll
        for (int a = 0; a < 8; ++a)
          o[2 * q + cl][a] =
              fmaf(o[2 * q + cl][a], alpha[2 * (a >> 2) + (a & 1)], fmaf(dq[cl][a + 8], 0.0625f, dq[cl][a]));
      }
    };
    load_quarter(0, av[0]);
    issue_quarter(av[0], d[0]);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (q + 1 < 4) load_quarter(q + 1, av[(q + 1) & 1]);  // while quarter q's wgmmas run
      if (q == 3) {  // every quarter's V codes are in registers: the stage is free
        __syncwarp();
        if (lane == 0) mbar_arrive(empty_bar_s);
        released = true;
      }
      wg_wait0();
      add_quarter(q, d[0]);
      if (q + 1 < 4) issue_quarter(av[(q + 1) & 1], d[0]);
    }
  } else if constexpr (RAW) {
#pragma unroll
    for (int cb = 0; cb < 8; ++cb) pin(o[cb]);  // rescaled before the first P·V wgmma (C7519)
    // Vᵀ from registers: k-step ks's fragments converted while ks - 1's
    // wgmmas run (two buffers; wait_group 1 frees the older one). Token
    // 16ks + tq + 4e of chunk c sits at raw_offset(c, tq, 64) + (16ks + 4e) 32
    // with the 16-byte unit flipped for odd e (bit 2 of the row is e & 1).
    const int c = 8 * wq + gq;
    const uint32_t vb[2] = {saddr(stage) + raw_offset(c, tq, kTNT), saddr(stage) + raw_offset(c ^ 1, tq, kTNT)};
    uint32_t a[2][8][4];
#pragma unroll
    for (int ks = 0; ks < kTNT / 16; ++ks) {
      uint4 x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) lds128(vb[e & 1] + (16 * ks + 4 * e) * kRawKBytes, x[e]);
      if (ks >= 2) wg_wait<1>();
      e4m3_v_frags(x, a[ks & 1]);
#pragma unroll
      for (int cb = 0; cb < 8; ++cb)  // converted before the fence (else ptxas injects one per wgmma: C7519)
        asm volatile("" : "+r"(a[ks & 1][cb][0]), "+r"(a[ks & 1][cb][1]), "+r"(a[ks & 1][cb][2]),
                     "+r"(a[ks & 1][cb][3])::"memory");
      const uint64_t dh = desc_at(desc_sw128(saddr(p_hi)), ks * 32);
      wg_fence();
#pragma unroll
      for (int cb = 0; cb < 8; ++cb) mma_m64n16_f16_rs(o[cb], a[ks & 1][cb], dh);
      wg_commit();
    }
  } else {
#pragma unroll
    for (int cb = 0; cb < 8; ++cb) pin(o[cb]);  // rescaled before the first P·V wgmma (C7519)
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < kTNT / 16; ++ks) {
      const uint64_t dh = desc_at(desc_sw128(saddr(p_hi)), ks * 32), dl = desc_at(desc_sw128(saddr(p_lo)), ks * 32);
#pragma unroll
      for (int cb = 0; cb < 8; ++cb) {
        const uint64_t da = desc_at(desc_sw128(saddr(stage)), cb * kTNT * kRowBytes + ks * 16 * kRowBytes);
        mma_m64n16<F16, 1>(o[cb], da, dh, 1);
        if constexpr (!P1) mma_m64n16<F16, 1>(o[cb], da, dl, 1);
      }
    }
    wg_commit();
  }
  wg_wait0();  // this warp's share of P·V: the stage and (after the next barrier) Pᵀ are free
#pragma unroll
  for (int cb = 0; cb < 8; ++cb) pin(o[cb]);
  __syncwarp();
  if (lane == 0 && !released) mbar_arrive(empty_bar_s);
}

// The chunk's end: the two warpgroups' states merged (per pair, L = Σ_wg l·2^(m_wg − M),
// O likewise; warpgroup 1 hands its accumulators over and returns), then warpgroup 0
// stores the rows (final output or the split's partial rows) and their LSE.
template <bool KV8, bool RAW, bool PV8>
__device__ __forceinline__ void t_merge_and_store(const Stage1Params& p, const WorkRow& work, int chunk, int cp,
                                                  float (&o)[8][8], const float (&m)[4], float (&l)[4], uint8_t* q_s,
                                                  float* merge, float* lsum, float* mrec, float kv_scale,
                                                  const TLane& th) {
  const int g = th.g, wq = th.wq, gq = th.gq;
  auto pair_of = [&](int x) { return th.pair_of(x); };
  const int ct = th.ct, tid = th.tid, heads = p.heads;
  // Merge the two warpgroups' states: per pair, L = Σ_wg l·2^(m_wg − M), O likewise.
#pragma unroll
  for (int x = 0; x < 4; ++x)
#pragma unroll
    for (int o_ = 4; o_ < 32; o_ <<= 1) l[x] += __shfl_xor_sync(0xffffffffu, l[x], o_);
  if (gq == 0)
#pragma unroll
    for (int x = 0; x < 4; ++x) lsum[(g * 4 + wq) * kTPairs + pair_of(x)] = l[x];
  if (g == 1 && wq == 0 && gq == 0)
#pragma unroll
    for (int x = 0; x < 4; ++x) mrec[pair_of(x)] = m[x];
  constexpr bool kMergeInQ = KV8;  // through q_s (and, e4m3, the P buffers after it)
  constexpr int kRounds = merge_rounds(kMergeInQ), kCbPer = 8 / kRounds;
  // fp8: merge goes through q_s (and P), so both warpgroups must be past their
  // last Q·Kᵀ and P·V (waited wgmmas) first; this barrier also publishes lsum and mrec.
  float* mbuf = kMergeInQ ? reinterpret_cast<float*>(q_s) : merge;
  if constexpr (kMergeInQ) bar_sync(kBarMergeStart, kConsumers);
  if (g == 1) {
#pragma unroll
    for (int rd = 0; rd < kRounds; ++rd) {
      if (rd > 0) bar_sync(kBarMergeRead, kConsumers);  // warpgroup 0 has read round rd - 1
#pragma unroll
      for (int cb = 0; cb < kCbPer; ++cb)
#pragma unroll
        for (int a = 0; a < 8; ++a) mbuf[(cb * 8 + a) * 128 + ct] = o[rd * kCbPer + cb][a];
      bar_arrive(kBarStats, kConsumers);
    }
    return;
  }
  if constexpr (!kMergeInQ) bar_sync(kBarStats, kConsumers);  // round 0 (lsum, mrec with it)
  if (tid == 0) block_clock_mark(p, kClockMet);
  float f0[4], f1[4], inv[4], lse[4];
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const int r = pair_of(x);
    float l0 = 0.0f, l1 = 0.0f;
#pragma unroll
    for (int w2 = 0; w2 < 4; ++w2) {
      l0 += lsum[(0 * 4 + w2) * kTPairs + r];
      l1 += lsum[(1 * 4 + w2) * kTPairs + r];
    }
    const float m1 = mrec[r], M = fmaxf(m[x], m1);
    f0[x] = M == kNegInf ? 0.0f : exp2f(m[x] - M);
    f1[x] = M == kNegInf ? 0.0f : exp2f(m1 - M);
    const float L = l0 * f0[x] + l1 * f1[x];
    inv[x] = L == 0.0f ? 0.0f : (PV8 ? kv_scale / 256.0f : kv_scale) / L;  // PV8: P was scaled by 256
    lse[x] = L == 0.0f ? kNegInf : (M + log2f(L)) * 0.6931471805599453f;
  }
#pragma unroll
  for (int rd = 0; rd < kRounds; ++rd) {
    if (kMergeInQ || rd > 0) bar_sync(kBarStats, kConsumers);  // round rd written
#pragma unroll
    for (int cb = 0; cb < kCbPer; ++cb)
#pragma unroll
      for (int a = 0; a < 8; ++a) {
        const int x = 2 * (a >> 2) + (a & 1);
        o[rd * kCbPer + cb][a] = o[rd * kCbPer + cb][a] * f0[x] + mbuf[(cb * 8 + a) * 128 + ct] * f1[x];
      }
    if (rd + 1 < kRounds) bar_arrive(kBarMergeRead, kConsumers);
  }
  if (tid == 0) block_clock_mark(p, kClockCombined);
  const bool final_out = work.ploc < 0;
  const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
  if constexpr (!kMergeInQ) {
    // Through the merge buffer (warpgroup 0 is done reading it; warpgroup 1 writes it
    // again only after the next chunk barrier), then whole rows: 16 coalesced 16-byte
    // stores a thread instead of 64 scattered 4-byte ones, whose issue was measurable
    // per chunk (bench --block-times, docs/bench_notes.md). Row r's column c at
    // r * kVDim + (c ^ ((r >> 1 & 3) << 3)): the 32 lanes of a scattered write hit 32 banks.
    bar_sync(kBarRed, 128);  // every thread of warpgroup 0 has read mbuf
#pragma unroll
    for (int cb = 0; cb < 8; ++cb)
#pragma unroll
      for (int a = 0; a < 8; ++a) {
        const int x = 2 * (a >> 2) + (a & 1), r = pair_of(x);
        const int col = cb * 64 + 16 * wq + gq + 8 * ((a >> 1) & 1);
        mbuf[r * kVDim + (col ^ (((r >> 1) & 3) << 3))] = o[cb][a] * inv[x];
      }
    bar_sync(kBarRed, 128);
    constexpr int kQuadsPerRow = kVDim / 4;
    for (int i = ct; i < cp * kQuadsPerRow; i += 128) {
      const int r = i / kQuadsPerRow, c = 4 * (i % kQuadsPerRow);
      const float4 v = *reinterpret_cast<const float4*>(mbuf + r * kVDim + (c ^ (((r >> 1) & 3) << 3)));
      const int64_t at = (row_base + r) * kVDim + c;
      if (final_out)
        *reinterpret_cast<uint2*>(p.out + at) =
            make_uint2(uint32_t(encode_out(p.out_type, v.x)) | (uint32_t(encode_out(p.out_type, v.y)) << 16),
                       uint32_t(encode_out(p.out_type, v.z)) | (uint32_t(encode_out(p.out_type, v.w)) << 16));
      else
        *reinterpret_cast<float4*>(p.partial_out + at) = v;
    }
  } else if constexpr (RAW) {
    // The raw-code paths: this thread's columns of a pair are the 16 contiguous
    // e4m3_v_col(wq, gq, ·) (PV8: e4m3_v8_col, the same 16 with 4-column groups
    // XOR-permuted by gq >> 1), so four 16-byte stores a pair instead of 16 scalar
    // ones (the scattered stores were measurably slower: docs/bench_notes.md).
    // Group kk's column i is 2cb + h = 4kk + i: cb = 2kk + i / 2, h = i % 2, and a
    // (pair x, half h) is accumulator 4 (x / 2) + 2h + x % 2; the same values as the
    // scalar loop below.
    const int base = 16 * (8 * wq + gq), sw = PV8 ? gq >> 1 : 0;
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int r = pair_of(x);
      if (r >= cp) continue;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = o[2 * kk + i / 2][4 * (x >> 1) + 2 * (i & 1) + (x & 1)] * inv[x];
        const int64_t at = (row_base + r) * kVDim + base + 4 * (kk ^ sw);
        if (final_out)
          *reinterpret_cast<uint2*>(p.out + at) =
              make_uint2(uint32_t(encode_out(p.out_type, v[0])) | (uint32_t(encode_out(p.out_type, v[1])) << 16),
                         uint32_t(encode_out(p.out_type, v[2])) | (uint32_t(encode_out(p.out_type, v[3])) << 16));
        else
          *reinterpret_cast<float4*>(p.partial_out + at) = make_float4(v[0], v[1], v[2], v[3]);
      }
    }
  } else
#pragma unroll
  for (int cb = 0; cb < 8; ++cb)  // the staged fp8 path (producer-converted 16-bit stages, merged through q_s)
#pragma unroll
    for (int a = 0; a < 8; ++a) {
      const int x = 2 * (a >> 2) + (a & 1), r = pair_of(x);
      if (r >= cp) continue;
      const float val = o[cb][a] * inv[x];
      const int col = cb * 64 + 16 * wq + gq + 8 * ((a >> 1) & 1);
      const int64_t at = (row_base + r) * kVDim + col;
      if (final_out) p.out[at] = encode_out(p.out_type, val);
      else p.partial_out[at] = val;
    }
  if (wq == 0 && gq == 0)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int r = pair_of(x);
      if (r >= cp) continue;
      if (final_out) {
        if (p.lse) p.lse[row_base + r] = lse[x];
      } else {
        p.partial_lse[row_base + r] = lse[x];
      }
    }
  if (tid == 0) block_clock_mark(p, kClockOutputs);
}

// E4M3 (fp8 q and e4m3fn KV, F16 and KV8 with it): Q·Kᵀ on e4m3 wgmma straight from
// the raw codes (q staged as codes), V converted by the consumers into register A
// fragments (e4m3_v_frags), so no 16-bit KV stage is written or read; the producer
// only copies (produce_kv_tiles, RAW8) into kTRawStages stages. P·V takes P once,
// in fp16 (no lo part): the scores of e4m3 wgmma are exact to only ~2^-13 (its
// accumulation: tests/gpu/gpu_tests.cpp, kFp8MmaTol), which P's own rounding
// (2^-12 relative, unbiased) does not add to measurably, and the wgmmas per tile
// drop from 82 to 50. PV8 (Fp8PvMma::e4m3): P·V on e4m3 wgmma too, from the V codes as
// they are and P as e4m3 hi + lo parts (mma_m64n32k32_e4m3_rs), 16 P·V wgmmas a tile
// instead of 32.
// KREG (Fp8Convert::registers; bf16 q, or fp8 q with Fp8QkMma::fp16, e4m3fn KV, q exact
// in fp16): the e4m3 path's raw ring, P once in fp16 and V in registers, with Q·Kᵀ on
// fp16 wgmma, K converted by the consumers into register A fragments (stage_q_kreg's
// order of head_dim): exact scores, 36 + 32 wgmmas a tile and no 16-bit stage; with PV8
// (Fp8PvMma::e4m3 asked) the e4m3 path's P·V instead, 36 + 16.
// P1 (PvPrecision::once, 16-bit KV): P·V takes Pᵀ rounded once (no lo part): 36 + 32
// wgmmas a tile instead of 36 + 64.
template <bool F16, int HD, bool KV8, bool E4M3 = false, bool PV8 = false, bool KREG = false, bool P1 = false>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_t_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!P1 || !KV8, "P once: the 16-bit KV path (the raw-code paths take P once already)");
  static_assert(!E4M3 || (F16 && KV8), "the e4m3 path: fp8 KV, fp16 operands for P·V");
  static_assert(!PV8 || E4M3 || KREG, "P·V on e4m3 wgmma: the raw-code paths only");
  static_assert(!KREG || (F16 && KV8 && !E4M3), "K in registers: fp8 KV, fp16 operands, Q·Kᵀ not on e4m3");
  constexpr bool kRaw = E4M3 || KREG;       // the raw ring: the consumers convert
  constexpr bool kConverts = KV8 && !kRaw;  // the producer converts fp8 into a 16-bit stage
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  const PlanT plan{HD, KV8, E4M3, KREG};
  const int stages = plan.stages();
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float* red = reinterpret_cast<float*>(smem + plan.red_off());
  float* merge = reinterpret_cast<float*>(smem + plan.merge_off());
  float* lsum = reinterpret_cast<float*>(smem + plan.ml_off());  // [wg][warp][16]
  float* mrec = lsum + 2 * 4 * kTPairs;                           // [16]: warpgroup 1's running max
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * stages;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int heads = p.heads;
  int32_t w_begin, w_end;  // a tile's `empty`: the 4 warps of the warpgroup that owns it
  block_clock_start(p);
  if (!pipeline_start(p, full_bar, empty_bar, stages, /*empty_count=*/4, w_begin, w_end)) {
    block_clock_end(p);
    return;
  }
  if (warp >= kConsumers / 32) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(producer_regs(kConverts)));
    t_produce<F16, HD, KV8, kRaw>(p, plan, smem, kv_s, full_bar, empty_bar, w_begin, w_end, warp, lane, tid);
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(consumer_regs(kConverts)));
  // g through a shuffle from lane 0: ptxas then knows it is warp-uniform; derived
  // from threadIdx it saw the tile loop's `continue` as a divergent path and
  // serialised every wgmma (C7520).
  const int g = __shfl_sync(0xffffffffu, warp / 4, 0);
  const TLane th{g, warp % 4, lane / 4, lane % 4, tid % 128, lane, tid};
  uint8_t* p_hi = smem + plan.p_off() + size_t(g) * 2 * kTPairs * kRowBytes;
  uint8_t* p_lo = p_hi + kTPairs * kRowBytes;
  constexpr float kLog2e = 1.4426950408889634f;
  const float kv_scale = KV8 ? p.kv_scale : 1.0f;  // fp8 KV: on the scores and the output, not the operands
  // fp16 operands with bf16 q: q was staged times q_f16_scale, a power of two (exact).
  const float q_unscale = F16 && KV8 && p.q_type == ElemType::bf16 ? 1.0f / p.q_f16_scale : 1.0f;
  const float score_scale =
      p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kv_scale * kLog2e * q_unscale;
  uint32_t k = 0;  // tiles of the block so far (both warpgroups count every tile)

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    if (!work_ok(p, work, w, tid == 0)) continue;
    const int qn = work.qo_end - work.qo_start, pairs = qn * heads;
    for (int chunk = 0; chunk < pairs; chunk += kTPairs) {
      const int cp = min(kTPairs, pairs - chunk);
      const int max_end = visible_end(work, qn, heads, p.causal, chunk + cp - 1, pairs);
      int end[4];
#pragma unroll
      for (int x = 0; x < 4; ++x) end[x] = visible_end(work, qn, heads, p.causal, chunk + th.pair_of(x), chunk + cp);

      bar_sync(kBarChunk, kConsumers);  // the previous chunk is done with q_s, merge, lsum
      if constexpr (E4M3) stage_q_codes<kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      else if constexpr (KREG) stage_q_kreg<kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      else stage_q<F16, kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      bar_sync(kBarChunk, kConsumers);
      if (tid == 0) block_clock_mark(p, kClockQStaged);

      float o[8][8];  // Oᵀ: [64-column block][accumulator]: cols 16wq + gq (+8), pairs pair_of(x)
#pragma unroll
      for (int cb = 0; cb < 8; ++cb)
#pragma unroll
        for (int x = 0; x < 8; ++x) o[cb][x] = 0.0f;
      float m[4], l[4];  // log2-domain running max (same in every thread of the warpgroup), partial sums
#pragma unroll
      for (int x = 0; x < 4; ++x) m[x] = kNegInf, l[x] = 0.0f;

      int i = 0;
      for (int tile = work.kv_start; tile < max_end; tile += kTNT, ++i, ++k) {
        if ((i & 1) != g) continue;  // the other warpgroup's tile
        const int s = int(k % uint32_t(stages));
        const uint8_t* stage = kv_s + size_t(s) * plan.stage_bytes();
        mbar_wait(full_bar + 8 * s, (k / uint32_t(stages)) & 1, p.error);
        fence_async_smem();
        if (tid == 0) block_clock_mark(p, kClockFirstTile);
        float sa[8], sb[8];
        t_scores<F16, HD, E4M3, KREG>(stage, q_s, th, sa, sb);
        float alpha[4];
        t_softmax_to_p<F16, PV8, kRaw, P1>(sa, sb, tile, end, score_scale, red, p_hi, p_lo, th, m, l, alpha);
        t_pv<F16, PV8, kRaw, P1>(o, alpha, stage, p_hi, p_lo, th, empty_bar + 8 * s);
      }
      if (tid == 0) block_clock_mark(p, kClockTilesDone);
      t_merge_and_store<KV8, kRaw, PV8>(p, work, chunk, cp, o, m, l, q_s, merge, lsum, mrec, kv_scale, th);
    }
  }
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace wg
}  // namespace mla
