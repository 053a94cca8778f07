// fp8 e4m3 codes -> bf16 bits, two codes per 32-bit word, exact and branch-free,
// for the warpgroup kernel's producer (fp8 KV is converted into the bf16 stage
// that wgmma reads). No GPU headers: the CPU unit test (tests/unit/test_fp8x2.cpp)
// checks every code pair of both flavours against core/dtype's software decode,
// the one the CPU reference uses (docs/design.md §4: fp8 decoded by us, bit-identical).
//
// A code is (sign, e: 4 bits, m: 3 bits). With em = code & 0x7f:
//   normal (e > 0): value 2^(e - bias) (1 + m/8) is exact in bf16 with the
//     exponent re-biased in place: bits = em << 4 + (127 - bias) << 7, i.e.
//     + 0x3C00 for e4m3fn (bias 7), + 0x3B80 for e4m3fnuz (bias 8);
//   subnormal (e = 0): m 2^(1 - bias - 3); the 8 results come from two byte
//     tables through a byte permute (one prmt for the low bytes, one for the high);
//   NaN: 0x7f / 0xff (e4m3fn), 0x80 (e4m3fnuz) -> 0x7fc0. e4m3fn's 0x80 is -0.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MLA_FP8X2_FN __host__ __device__ inline
#else
#define MLA_FP8X2_FN inline
#endif

namespace mla {

// Byte permute (PTX prmt, default mode): result byte i = byte (sel >> 4i) & 7 of
// the 8-byte pool {a (bytes 0-3), b (bytes 4-7)}; with bit 3 of that nibble set,
// the byte's top bit replicated (0x00 or 0xff).
MLA_FP8X2_FN uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(a, b, sel);
#else
  const uint64_t pool = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (sel >> (4 * i)) & 0xfu;
    uint32_t byte = uint32_t(pool >> (8 * (nib & 7))) & 0xffu;
    if (nib & 8) byte = (byte & 0x80u) ? 0xffu : 0u;
    r |= byte << (8 * i);
  }
  return r;
#endif
}

// Per 16-bit lane (both operands' lanes < 0x8000): 0xffff where a < b, else 0.
MLA_FP8X2_FN uint32_t lanes_lt(uint32_t a, uint32_t b) {
  const uint32_t ge = ((a | 0x80008000u) - b) & 0x80008000u;  // no borrow across lanes
  return ((~ge & 0x80008000u) >> 15) * 0xffffu;
}
MLA_FP8X2_FN uint32_t lanes_eq(uint32_t a, uint32_t b) { return lanes_lt(a ^ b, 0x00010001u); }

// x: two codes in the low bytes of its 16-bit lanes ([c0, 0, c1, 0]).
MLA_FP8X2_FN uint32_t fp8x2_to_bf16x2(uint32_t x, bool fnuz) {
  const uint32_t em = x & 0x007f007fu, sign = (x & 0x00800080u) << 8;
  const uint32_t normal = (em << 4) + (fnuz ? 0x3B803B80u : 0x3C003C00u);
  const uint32_t m = em & 0x00070007u, sel = (m | (m >> 8)) & 0xffffu;  // m0 | m1 << 8
  // subnormal m -> bf16: e4m3fn m 2^-9: 0, 3B00, 3B80, 3BC0, 3C00, 3C20, 3C40, 3C60;
  //                      e4m3fnuz m 2^-10: 0, 3A80, 3B00, 3B40, 3B80, 3BA0, 3BC0, 3BE0.
  const uint32_t sub = fnuz ? byte_perm(0x40008000u, 0xE0C0A080u, sel) | byte_perm(0x3B3B3A00u, 0x3B3B3B3Bu, sel << 4)
                            : byte_perm(0xC0800000u, 0x60402000u, sel) | byte_perm(0x3B3B3B00u, 0x3C3C3C3Cu, sel << 4);
  const uint32_t is_sub = lanes_lt(em, 0x00080008u);
  const uint32_t r = ((normal & ~is_sub) | (sub & is_sub)) | sign;
  const uint32_t nan = fnuz ? lanes_eq(x & 0x00ff00ffu, 0x00800080u) : lanes_eq(em, 0x007f007fu);
  return (r & ~nan) | (0x7fc07fc0u & nan);
}

// Four codes (one 32-bit word, code i in byte i) -> bf16 bits of codes 0-1 in
// *lo and 2-3 in *hi (code order kept: element 2i in the low half).
MLA_FP8X2_FN void fp8x4_to_bf16x4(uint32_t w, bool fnuz, uint32_t* lo, uint32_t* hi) {
  *lo = fp8x2_to_bf16x2(byte_perm(w, 0, 0x4140), fnuz);
  *hi = fp8x2_to_bf16x2(byte_perm(w, 0, 0x4342), fnuz);
}

// ---- The fast form (the transposed wgmma kernel's staged fp8 producer) ----------
// Integer work is what limits a converting producer (the ALU pipe runs at half the
// FP32 rate), so this form does the exponent re-bias with one bf16x2 multiply:
// a lane holding sign | e << 7 | m << 4 is the bf16 2^(e - 127) (1 + m/8) (e > 0)
// or the bf16 subnormal (m/8) 2^-126 (e = 0), and times 2^(127 - bias) it is the
// code's value exactly (bf16 multiplies keep subnormal inputs; 4 significant bits,
// in range: no rounding). ~2 integer operations per code instead of ~10. The NaN
// codes come out as values no other code gives (e4m3fn 0x7f/0xff -> +-480, above
// its largest finite 448; e4m3fnuz 0x80 -> -0, which it has no code for): a cheap
// per-word test (fp8x4_nan_bytes) says whether any is present, and
// fp8_fix_nan_bf16x2 sets those lanes to 0x7fc0 as the exact form does.

// Two bf16 lanes times two bf16 lanes, round to nearest (exact for the operands here).
MLA_FP8X2_FN uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  uint32_t r = 0;
  for (int i = 0; i < 2; ++i) {
    // bf16 -> float is exact; the product of a 4-bit significand and a power of two
    // is exact in float and in bf16 (the callers' operands), so truncating is exact.
    const uint32_t x = ((a >> (16 * i)) & 0xffffu) << 16, y = ((b >> (16 * i)) & 0xffffu) << 16;
    float fx, fy;
    __builtin_memcpy(&fx, &x, 4);
    __builtin_memcpy(&fy, &y, 4);
    const float p = fx * fy;
    uint32_t bits;
    __builtin_memcpy(&bits, &p, 4);
    r |= (bits >> 16) << (16 * i);
  }
  return r;
#endif
}

// 0x80 in byte i of the result where code i of w is a NaN code, else 0.
MLA_FP8X2_FN uint32_t fp8x4_nan_bytes(uint32_t w, bool fnuz) {
  if (fnuz) {  // code 0x80: a zero byte of w ^ 0x80808080 (exact per byte, no carries)
    const uint32_t b = w ^ 0x80808080u;
    return ~(((b & 0x7f7f7f7fu) + 0x7f7f7f7fu) | b) & 0x80808080u;
  }
  return ((w & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u;  // em == 0x7f: + 1 reaches bit 7
}

// Four codes (code i in byte i of w) -> bf16 bits of codes 0-1 in *lo, 2-3 in *hi,
// equal to fp8x4_to_bf16x4 for every non-NaN code; NaN codes are left to
// fp8_fix_nan_bf16x2 (callers test fp8x4_nan_bytes first: NaN codes are rare).
MLA_FP8X2_FN void fp8x4_to_bf16x4_fast(uint32_t w, bool fnuz, uint32_t* lo, uint32_t* hi) {
  const uint32_t scale = fnuz ? 0x7B007B00u : 0x7B807B80u;  // bf16 2^119, 2^120
  const uint32_t em = w & 0x7f7f7f7fu;
  // byte_perm(x, 0, 0x1404): lanes x.byte0 << 8, x.byte1 << 8 (0x3424: bytes 2, 3).
  const uint32_t s0 = byte_perm(w, 0, 0x1404u) & 0x80008000u, s1 = byte_perm(w, 0, 0x3424u) & 0x80008000u;
  const uint32_t e0 = byte_perm(em, 0, 0x1404u) >> 4, e1 = byte_perm(em, 0, 0x3424u) >> 4;
  *lo = bf16x2_mul(e0 | s0, scale);
  *hi = bf16x2_mul(e1 | s1, scale);
}

// One output word of a fast form (two 16-bit lanes) with the lanes that came from a
// NaN code set to `nan_bits`: the ones equal to -0 (e4m3fnuz 0x80), or to +-`fn_nan_as`
// (e4m3fn 0x7f/0xff, which the fast forms turn into +-480).
MLA_FP8X2_FN uint32_t fp8_fix_nan_x2(uint32_t v, bool fnuz, uint32_t fn_nan_as, uint32_t nan_bits) {
  uint32_t r = 0;
  for (int i = 0; i < 2; ++i) {
    const uint32_t b = (v >> (16 * i)) & 0xffffu;
    const bool nan = fnuz ? b == 0x8000u : (b & 0x7fffu) == fn_nan_as;
    r |= (nan ? nan_bits : b) << (16 * i);
  }
  return r;
}

// fp8x4_to_bf16x4_fast's words: 480 is bf16 0x43f0, the NaN 0x7fc0.
MLA_FP8X2_FN uint32_t fp8_fix_nan_bf16x2(uint32_t v, bool fnuz) { return fp8_fix_nan_x2(v, fnuz, 0x43f0u, 0x7fc0u); }

// ---- fp16 operands (the transposed wgmma kernel when q is exact in fp16) --------
// Every e4m3 value of both flavours is a normal fp16 (|x| in [2^-10, 448]), so
// with fp16 MMA operands the KV needs no bf16 step. On the device e4m3fn goes
// through the hardware conversion cvt.rn.f16x2.e4m3x2 (two codes per instruction,
// NaN codes to NaN; as CUTLASS include/cutlass/numeric_conversion.h@v3.5.0
// converts float_e4m3_t x4 to half_t x4 on sm_89+); e4m3fnuz has no hardware
// form and takes this integer form: the code's byte b in the high byte of an
// fp16 lane, sign kept, e | m shifted into the exponent's low 4 bits and the
// mantissa's top 3 (bits 13..7), which is the fp16 2^(e - 15) (1 + m/8), or the
// subnormal m 2^-17 for e = 0, times 2^(15 - bias) in one f16x2 multiply: exact
// (results >= 2^-10, normal in fp16; f16x2 arithmetic keeps subnormal inputs).
// The NaN codes come out as values no other code gives (e4m3fn 0x7f/0xff ->
// +-480, e4m3fnuz 0x80 -> -0): fp8x4_nan_bytes finds them, fp8_fix_nan_f16x2
// sets them to 0x7e00.

// Two fp16 lanes times two fp16 lanes (both operands exact here: a power of two
// times a 4-bit significand, product normal, so no rounding).
MLA_FP8X2_FN uint32_t f16x2_mul_exact(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  auto to_float = [](uint32_t h) {  // fp16 bits -> float (normal and subnormal; no inf/NaN here)
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    const float mag = e == 0 ? float(m) * (1.0f / 16777216.0f)
                             : float(0x400u | m) * (1.0f / 1024.0f) * float(1u << (e > 15 ? e - 15 : 0)) /
                                   float(1u << (e < 15 ? 15 - e : 0));
    return (h & 0x8000u) ? -mag : mag;
  };
  uint32_t r = 0;
  for (int i = 0; i < 2; ++i) {
    const float p = to_float((a >> (16 * i)) & 0xffffu) * to_float((b >> (16 * i)) & 0xffffu);
    uint32_t bits;
    __builtin_memcpy(&bits, &p, 4);
    // The product is a normal fp16 (or zero): re-bias the exponent, keep 10 mantissa bits.
    const uint32_t e8 = (bits >> 23) & 0xffu;
    const uint32_t h = ((bits >> 16) & 0x8000u) | (e8 == 0 ? 0u : ((e8 - 127 + 15) << 10) | ((bits >> 13) & 0x3ffu));
    r |= h << (16 * i);
  }
  return r;
#endif
}

// Four codes (code i in byte i of w) -> fp16 bits of codes 0-1 in *lo, 2-3 in *hi,
// the decoded value for every non-NaN code (NaN codes: fp8_fix_nan_f16x2).
MLA_FP8X2_FN void fp8x4_to_f16x4_fast(uint32_t w, bool fnuz, uint32_t* lo, uint32_t* hi) {
  const uint32_t scale = fnuz ? 0x58005800u : 0x5C005C00u;  // fp16 2^7, 2^8
  const uint32_t x = byte_perm(w, 0, 0x3120u);               // bytes b0 b2 b1 b3: lane high bytes b2, b3
  const uint32_t y = x << 8;                                 // lane high bytes b0, b1
  const uint32_t h = (x & 0x80008000u) | ((x >> 1) & 0x3f803f80u);
  const uint32_t l = (y & 0x80008000u) | ((y >> 1) & 0x3f803f80u);
  *lo = f16x2_mul_exact(l, scale);
  *hi = f16x2_mul_exact(h, scale);
}

// fp8x4_to_f16x4_fast's words: 480 is fp16 0x5f80, the NaN 0x7e00.
MLA_FP8X2_FN uint32_t fp8_fix_nan_f16x2(uint32_t v, bool fnuz) { return fp8_fix_nan_x2(v, fnuz, 0x5f80u, 0x7e00u); }

}  // namespace mla
