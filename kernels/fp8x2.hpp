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
// the 8-byte pool {a (bytes 0-3), b (bytes 4-7)}.
MLA_FP8X2_FN uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(a, b, sel);
#else
  const uint64_t pool = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t((pool >> (8 * ((sel >> (4 * i)) & 7))) & 0xffu) << (8 * i);
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

}  // namespace mla
