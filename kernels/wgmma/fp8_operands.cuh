// The fp8 operand forms of the transposed warpgroup kernel (kernels/wgmma/transposed.cuh):
// the m64n16 wgmma instructions, e4m3 wgmma, Vᵀ and K as register A fragments converted
// from the raw codes, and q staged for K in registers.
#pragma once

#include "kernels/wgmma/producer.cuh"

namespace mla {
namespace wg {

// D (64 x 16, fp32) (+)= A (64 x 16, smem; M-major when TRANS_A) · B (16 x 16, smem, K-major).
template <bool F16, int TRANS_A>
__device__ inline void mma_m64n16(float (&d)[8], uint64_t da, uint64_t db, int accumulate) {
#define MLA_WG_N16(TY)                                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"                                            \
               "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                                 \
               " {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, %11, 0;\n}\n"                               \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
                 "+f"(d[7])                                                                            \
               : "l"(da), "l"(db), "r"(accumulate), "n"(TRANS_A))
  if constexpr (F16) MLA_WG_N16("f16");
  else MLA_WG_N16("bf16");
#undef MLA_WG_N16
}

// D (64 x 16, fp32) (+)= A (64 x 32 e4m3 codes, smem) · B (32 x 16 e4m3 codes, smem); both
// K-major (8-bit operands have no transpose: PTX ISA, wgmma.mma_async).
__device__ inline void mma_m64n16k32_e4m3(float (&d)[8], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3"
               " {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "l"(da), "l"(db), "r"(accumulate));
}

// D (64 x 16, fp32) += A (64 x 16 fp16, registers) · B (16 x 16 fp16, smem, K-major).
__device__ inline void mma_m64n16_f16_rs(float (&d)[8], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
               " {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, 1, 1, 1, 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// The e4m3 path's P·V operand layout. Oᵀ = Vᵀ · Pᵀ with Vᵀ as the register A operand,
// converted by the consumer from the raw tile (no 16-bit V stage): thread (warp wq,
// lane 4gq + tq) holds A rows 16wq + gq (+ 8) of each 64-row block cb, and those rows
// stand for V columns e4m3_v_col(wq, gq, cb, h), so its 16 rows of a token are one
// 16-byte chunk (8wq + gq) of the raw row; and A's k columns 2tq, 2tq+1, 2tq+8, 2tq+9
// of k-step ks stand for tokens 16ks + tq + 4e (e = 0..3), so the 32 lanes of each
// load hit the 8 16-byte bank groups 4 times each. Pᵀ is written in that token order.
__device__ inline int e4m3_v_col(int wq, int gq, int cb, int h) { return 16 * (8 * wq + gq) + 2 * cb + h; }
// The k column within its 16-token k-step that token t of the tile is (the inverse
// of token 16ks + tq + 4e for column 2tq + (e & 1) + 8 (e >> 1)).
__device__ inline int e4m3_p_col(int t) {
  const int tl = t & 15, tq = tl & 3, e = tl >> 2;
  return (t & ~15) + 2 * tq + (e & 1) + 8 * (e >> 1);
}
// The A fragments of k-step ks for all 8 column blocks: x[e] is the 16-byte chunk
// of this thread's columns of token 16ks + tq + 4e. An A register pairs two tokens'
// codes of one column (one prmt), converted by cvt.rn.f16x2.e4m3x2 (NaN codes to
// NaN). The integer form of fp8x4_to_f16x4_fast in its place was slower
// (docs/bench_notes.md): the conversion pipe is not what limits here.
__device__ inline void e4m3_v_frags(const uint4 (&x)[4], uint32_t (&a)[8][4]) {
  const uint32_t* x0 = &x[0].x;
  const uint32_t* x1 = &x[1].x;
  const uint32_t* x2 = &x[2].x;
  const uint32_t* x3 = &x[3].x;
#pragma unroll
  for (int cb = 0; cb < 8; ++cb) {
    const int wi = cb >> 1;
    const uint32_t sel = (cb & 1) ? 0x7362u : 0x5140u;  // bytes [x0 b, x1 b, x0 b+1, x1 b+1], b = 2cb % 4
    fp8x4_to_f16x4_cvt(__byte_perm(x0[wi], x1[wi], sel), &a[cb][0], &a[cb][1]);
    fp8x4_to_f16x4_cvt(__byte_perm(x2[wi], x3[wi], sel), &a[cb][2], &a[cb][3]);
  }
}

// D (64 x 32, fp32) (+)= A (64 x 32 e4m3 codes, registers) · B (32 x 32 e4m3 codes, smem,
// K-major); accumulate 0 starts D from zero (scale-d).
__device__ inline void mma_m64n32k32_e4m3_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3"
               " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                 "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// P·V on e4m3 wgmma (Fp8PvMma::e4m3): Oᵀ's tile part Dᵀ (64 V columns x 32) = Vᵀ (64 x 32
// tokens, the raw codes as the 8-bit register A operand) · [P_hiᵀ | P_loᵀ] (32 tokens x
// 16 pairs each, e4m3: P·256 = hi + lo/16), per 32-token k-step, two k-steps a tile, in
// four quarters of 2 column blocks (the per-tile accumulators are 16 registers a block:
// fp8 MMA accumulates with ~14 bits, so a tile's D starts from zero and is added to the
// fp32 O by the consumer, O·α + D_hi + D_lo/16).
// A's 8-bit fragment (CUTLASS include/cute/atom/mma_traits_sm90_gmma.hpp@v3.5.0,
// ALayout_64x32): register h + 2v of thread (warp wq, lane 4gq + tq) holds row
// 16wq + gq + 8h, k columns 4tq + 16v .. +3 (one per byte). Rows stand for V columns
// e4m3_v8_col (the thread's 4 rows of a pair of blocks are one word of a 16-byte chunk
// of a token: a 4-byte shared load per token, the word by gq >> 1 too, so the 32 lanes
// of each load hit 32 distinct banks); k column 4tq + (e & 3) + 16 (e >> 2)
// of k-step s stands for token 32s + tq + 4e (e = 0..7), so Pᵀ is written in that order
// (e4m3_p8_col).
__device__ inline int e4m3_v8_col(int wq, int gq, int cb, int h) {
  return 16 * (8 * wq + gq) + ((2 * cb + h) ^ (4 * (gq >> 1)));
}
// The k column of token t of the tile (the inverse of token 32s + tq + 4e).
__device__ inline int e4m3_p8_col(int t) { return (t & ~31) + 16 * ((t >> 4) & 1) + 4 * (t & 3) + ((t >> 2) & 3); }
// The A fragments of one k-step for a quarter's 2 column blocks: x[e] is this
// thread's word of the quarter of token 32s + tq + 4e; a[cl][h + 2v] = byte 2cl + h of
// the tokens e = 4v .. 4v + 3: a 4 x 4 byte transpose per token group, two prmt
// levels (8 prmt per 4 registers).
__device__ inline void e4m3_v8_frags(const uint32_t (&x)[8], uint32_t (&a)[2][4]) {
#pragma unroll
  for (int v = 0; v < 2; ++v) {
    const uint32_t t01l = __byte_perm(x[4 * v], x[4 * v + 1], 0x5140u), t01h = __byte_perm(x[4 * v], x[4 * v + 1], 0x7362u);
    const uint32_t t23l = __byte_perm(x[4 * v + 2], x[4 * v + 3], 0x5140u),
                   t23h = __byte_perm(x[4 * v + 2], x[4 * v + 3], 0x7362u);
    a[0][2 * v] = __byte_perm(t01l, t23l, 0x5410u);      // byte 0 of the word: block 0, h 0
    a[0][2 * v + 1] = __byte_perm(t01l, t23l, 0x7632u);  // byte 1: block 0, h 1
    a[1][2 * v] = __byte_perm(t01h, t23h, 0x5410u);      // byte 2: block 1, h 0
    a[1][2 * v + 1] = __byte_perm(t01h, t23h, 0x7632u);
  }
}
__device__ inline void lds32(uint32_t addr, uint32_t& v) {
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
}
// Two floats to e4m3fn codes (round to nearest, saturating): low byte x, high byte y.
__device__ inline uint32_t f32x2_to_e4m3x2(float x, float y) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(y), "f"(x));
  return r;
}
// e4m3fn codes (low two bytes) back to floats: x from the low byte.
__device__ inline float2 e4m3x2_to_f32x2(uint32_t codes) {
  float2 r;
  asm("{\n.reg .b16 c, l, h;\n.reg .b32 h2;\ncvt.u16.u32 c, %2;\ncvt.rn.f16x2.e4m3x2 h2, c;\n"
      "mov.b32 {l, h}, h2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n"
      : "=f"(r.x), "=f"(r.y)
      : "r"(codes));
  return r;
}

// ---- KREG: K converted by the consumers into register A fragments (Fp8Convert::registers) ----
//
// Sᵀ = K·Qᵀ with K (64 tokens x head_dim) as the register A operand of
// wgmma.m64n16k16.f16: thread (warp wq, lane 4gq + tq) holds rows 16wq + gq (+ 8) and
// k columns 2tq, 2tq+1, 2tq+8, 2tq+9 of each k-step. A sum over head_dim is the same
// sum in any order of its terms, so the k columns need not be head_dim in order:
// k column c of k-step 4kb + j stands for head_dim kreg_q_col(kb, j, c), which makes
// this thread's 16 columns of k-steps 4kb .. 4kb + 3 one 16-byte chunk (4kb + tq) of
// the token's raw row: one shared load per row and 64 head_dim, the four bytes of
// word j being columns 2tq, 2tq+1, 2tq+8, 2tq+9 of k-step 4kb + j. q is staged in
// the same order (stage_q_kreg), so each score is the same Σ q_d k_d.
__host__ __device__ inline int kreg_q_col(int kb, int j, int c) {
  return 64 * kb + 16 * ((c & 7) >> 1) + 4 * j + 2 * (c >> 3) + (c & 1);
}
// q of a chunk as stage_q<true> stages it (fp16, bf16 q times q_f16_scale, fp8 q decoded),
// its columns in kreg_q_col's order: 16-byte unit u of row r's block kb holds k-step
// 4kb + u / 2, columns 8 (u & 1) .. + 7, i.e. head_dim 64kb + 16t + 4 (u / 2) + 2 (u & 1)
// + {0, 1} for t = 0..3.
template <int QR, int HD>
__device__ inline void stage_q_kreg(const Stage1Params& p, const WorkRow& work, int chunk, int cp, uint8_t* q_s,
                                    int tid) {
  constexpr int kRowChunks = HD / 8;
  const int64_t q_base = (int64_t(work.qo_start) * p.heads + chunk) * HD;
  for (int i = tid; i < QR * kRowChunks; i += kConsumers) {
    const int r = i / kRowChunks, ch = i % kRowChunks;
    uint32_t word[4] = {0, 0, 0, 0};
    if (r < cp) {
      const int kb = ch >> 3, u = ch & 7;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int64_t at = q_base + int64_t(r) * HD + kreg_q_col(kb, u >> 1, 2 * t + 8 * (u & 1));
        // fp8 q: the two codes; bf16 q (exact in fp16 times q_f16_scale): the two elements.
        const uint32_t raw = p.q_type == ElemType::fp8
                                 ? uint32_t(*reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(p.q) + at))
                                 : *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(p.q) + at);
        word[t] = q_word16<true>(p, raw);
      }
    }
    *reinterpret_cast<uint4*>(q_s + swz(ch, r, QR)) = make_uint4(word[0], word[1], word[2], word[3]);
  }
  fence_async_smem();
}

}  // namespace wg
}  // namespace mla
