#include "core/dtype.hpp"

#include <array>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace mlactl {

namespace {

uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Round-to-nearest-even right shift of an integer mantissa (shift >= 1).
uint32_t shift_rne(uint32_t mant, int shift) {
  if (shift >= 32) return 0;
  const uint32_t kept = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  return (rem > half || (rem == half && (kept & 1u))) ? kept + 1u : kept;
}

struct Fp8Params {
  int bias;
  uint8_t max_code;  // largest finite magnitude code
  uint8_t nan_code;
  bool has_negative_zero;
};
Fp8Params fp8_params(Fp8Flavor f) {
  // e4m3fn: 0x7F/0xFF are NaN, so 0x7E (1.75 * 2^8 = 448) is the max.
  // e4m3fnuz: every 0x00..0x7F magnitude is finite, 0x7F = 1.875 * 2^7 = 240; 0x80 is the NaN.
  return f == Fp8Flavor::e4m3fn ? Fp8Params{7, 0x7E, 0x7F, true} : Fp8Params{8, 0x7F, 0x80, false};
}

float fp8_decode_slow(uint8_t code, Fp8Flavor f) {
  const Fp8Params p = fp8_params(f);
  if (f == Fp8Flavor::e4m3fnuz && code == 0x80) return std::nanf("");
  if (f == Fp8Flavor::e4m3fn && (code & 0x7F) == 0x7F) return (code & 0x80) ? -std::nanf("") : std::nanf("");
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  // subnormal: m/8 * 2^(1-bias); normal: (1 + m/8) * 2^(e-bias)
  const float mag = e == 0 ? std::ldexp((float)m, 1 - p.bias - 3) : std::ldexp((float)(8 + m), e - p.bias - 3);
  return (code & 0x80) ? -mag : mag;
}

struct Fp8Tables {
  std::array<float, 256> fn{}, fnuz{};
  Fp8Tables() {
    for (int c = 0; c < 256; ++c) {
      fn[c] = fp8_decode_slow((uint8_t)c, Fp8Flavor::e4m3fn);
      fnuz[c] = fp8_decode_slow((uint8_t)c, Fp8Flavor::e4m3fnuz);
    }
  }
};
const Fp8Tables& fp8_tables() {
  static const Fp8Tables tables;
  return tables;
}

}  // namespace

uint16_t float_to_bf16_bits(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);  // NaN: keep sign/payload, quiet
  // RNE: add 0x7FFF plus the lsb of the kept half; carries into the exponent give inf.
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float bf16_bits_to_float(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

uint16_t float_to_fp16_bits(float x) {
  const uint32_t u = float_bits(x);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN, quiet
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // >= 65520 rounds to inf (RNE past 65504)
  if (a >= 0x38800000u) {                                   // >= 2^-14: normal half
    uint32_t r = a - ((uint32_t)(127 - 15) << 23);
    r += 0xFFFu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  const int e = (int)(a >> 23);
  if (e == 0) return sign;  // fp32 subnormal: far below half's 2^-24 quantum
  // half subnormal: m = RNE(value / 2^-24) = RNE(mant * 2^(e-126)); a result of 0x400
  // is the smallest normal, which the same bit pattern encodes.
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  return (uint16_t)(sign | shift_rne(mant, 126 - e));
}

float fp16_bits_to_float(uint16_t bits) {
  const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  const uint32_t e = (bits >> 10) & 0x1Fu;
  const uint32_t m = bits & 0x3FFu;
  if (e == 0) {
    const float mag = (float)m * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return bits_float(float_bits(mag) | sign);
  }
  if (e == 31) return bits_float(sign | 0x7F800000u | (m << 13));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

uint8_t float_to_fp8_bits(float x, Fp8Flavor flavor) {
  const Fp8Params p = fp8_params(flavor);
  const uint32_t u = float_bits(x);
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return flavor == Fp8Flavor::e4m3fn ? (uint8_t)(sign | p.nan_code) : p.nan_code;
  const int emin = 1 - p.bias;  // exponent of the smallest normal
  const int e = (int)(a >> 23);
  uint32_t code = 0;
  if (e != 0) {  // fp32 subnormals are far below the fp8 quantum: 0
    const int E = e - 127;
    const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
    if (E >= emin) {
      // 3 mantissa bits kept: r in [8, 16]; r == 16 carries into the next binade,
      // which the same formula encodes.
      const uint32_t r = shift_rne(mant, 20);
      code = (uint32_t)((E - emin + 1) << 3) + r - 8u;
    } else {
      code = shift_rne(mant, 20 + (emin - E));  // subnormal: quantum 2^(emin-3)
    }
    if (code > p.max_code) code = p.max_code;  // saturate (also inf and big finite values)
  }
  if (code == 0 && !p.has_negative_zero) return 0;
  return (uint8_t)(sign | code);
}

float fp8_bits_to_float(uint8_t bits, Fp8Flavor flavor) { return fp8_decode_table(flavor)[bits]; }

float fp8_max(Fp8Flavor flavor) { return flavor == Fp8Flavor::e4m3fn ? 448.0f : 240.0f; }
uint8_t fp8_nan_bits(Fp8Flavor flavor) { return fp8_params(flavor).nan_code; }

const float* fp8_decode_table(Fp8Flavor flavor) {
  return flavor == Fp8Flavor::e4m3fn ? fp8_tables().fn.data() : fp8_tables().fnuz.data();
}

uint16_t nan_bits16(DType dtype) { return dtype == DType::fp16 ? (uint16_t)0x7E00 : (uint16_t)0x7FC0; }

float round_to_dtype(float x, DType dtype, Fp8Flavor flavor) {
  switch (dtype) {
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(x));
    case DType::fp16: return fp16_bits_to_float(float_to_fp16_bits(x));
    case DType::fp8: return fp8_bits_to_float(float_to_fp8_bits(x, flavor), flavor);
  }
  return x;
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// Bulk fp16 / fp8 decodes in AVX-512, element for element the scalar codecs above
// (checked over every code in test_numerics.cpp). The cache is decoded row by row
// by the reference and the CPU executor: the scalar loops were a visible cost.
typedef int32_t I32x16 __attribute__((vector_size(64)));
typedef float F32x16 __attribute__((vector_size(64)));
typedef uint32_t U32x16 __attribute__((vector_size(64)));

// fp16_bits_to_float on 16 codes: subnormal m * 2^-24 with the sign or'ed in,
// e == 31 sign | inf exponent | m << 13, else rebias.
__attribute__((target("avx512f"))) int64_t decode_fp16_avx512(const uint16_t* s, int64_t count, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512i b = _mm512_maskz_cvtepu16_epi32((__mmask16)0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    U32x16 bits;
    std::memcpy(&bits, &b, sizeof bits);
    const U32x16 sign = (bits & 0x8000u) << 16, e = (bits >> 10) & 0x1Fu, m = bits & 0x3FFu;
    const F32x16 sub = __builtin_convertvector(m, F32x16) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    U32x16 sub_bits;
    std::memcpy(&sub_bits, &sub, sizeof sub_bits);
    const U32x16 normal = sign | ((e + 112u) << 23) | (m << 13);
    const U32x16 special = sign | 0x7F800000u | (m << 13);
    const U32x16 out = e == 0u ? (sub_bits | sign) : (e == 31u ? special : normal);
    std::memcpy(dst + i, &out, sizeof out);
  }
  return i;
}

// table[code] * scale on 16 codes (a gather from the same table, the same multiply).
__attribute__((target("avx512f"))) int64_t decode_fp8_avx512(const uint8_t* s, int64_t count, const float* table,
                                                              float scale, float* dst) {
  const __m512 sc = _mm512_set1_ps(scale);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512i idx = _mm512_maskz_cvtepu8_epi32((__mmask16)0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm512_storeu_ps(dst + i, _mm512_mul_ps(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)0xFFFF, idx, table, 4), sc));
  }
  return i;
}

typedef uint8_t U8x16 __attribute__((vector_size(16)));

// float_to_fp8_bits on 16 lanes: the same steps (NaN, saturation, the normal and
// subnormal round-to-nearest-even shifts, fnuz's -0), as lane masks.
__attribute__((target("avx512f,avx512bw"))) int64_t encode_fp8_avx512(const float* src, int64_t count, Fp8Flavor flavor,
                                                                       uint8_t* dst) {
  const Fp8Params p = fp8_params(flavor);
  const int32_t emin = 1 - p.bias;
  const bool fn = flavor == Fp8Flavor::e4m3fn;
  const U32x16 nan_code = U32x16{} + (uint32_t)p.nan_code, max_code = U32x16{} + (uint32_t)p.max_code;
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    U32x16 u;
    std::memcpy(&u, src + i, sizeof u);
    const U32x16 sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
    const I32x16 e = (I32x16)(a >> 23), E = e - 127;
    const U32x16 mant = (a & 0x7FFFFFu) | 0x800000u;
    const I32x16 normal = E >= emin;
    const I32x16 shift = normal ? I32x16{} + 20 : 20 + (emin - E);  // >= 20
    const I32x16 big = shift >= 32;                                   // shift_rne gives 0
    const U32x16 sh = (U32x16)(big ? I32x16{} + 31 : shift);
    const U32x16 kept = mant >> sh, rem = mant & (((U32x16{} + 1u) << sh) - 1u), half = (U32x16{} + 1u) << (sh - 1u);
    const I32x16 up = (I32x16)(rem > half) | ((I32x16)(rem == half) & (I32x16)((kept & 1u) != 0u));
    U32x16 r = kept + (U32x16)(up & 1);
    r = (U32x16)(big ? I32x16{} : (I32x16)r);
    U32x16 code = (U32x16)(normal ? (I32x16)(((U32x16)(E - emin + 1) << 3) + r - 8u) : (I32x16)r);
    code = (U32x16)(e == 0 ? I32x16{} : (I32x16)code);
    code = (U32x16)(code > max_code ? (I32x16)max_code : (I32x16)code);
    U32x16 out = sign | code;
    if (!p.has_negative_zero) out = (U32x16)(code == 0u ? I32x16{} : (I32x16)out);
    const U32x16 nan = fn ? (sign | nan_code) : nan_code;
    out = (U32x16)(a > 0x7F800000u ? (I32x16)nan : (I32x16)out);
    const U8x16 bytes = __builtin_convertvector(out, U8x16);
    std::memcpy(dst + i, &bytes, sizeof bytes);
  }
  return i;
}

// bf16 codecs on 16 lanes: the scalar loops' integer steps (decode: the bits shifted
// up; encode: round to nearest even, NaN quietened), so the same bits. (maskz_ and
// GCC vectors: the plain intrinsics trip GCC 12's -Wmaybe-uninitialized.)
typedef uint16_t U16x16 __attribute__((vector_size(32)));

__attribute__((target("avx512f"))) int64_t decode_bf16_avx512(const uint16_t* src, int64_t count, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512i w = _mm512_maskz_cvtepu16_epi32((__mmask16)0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    U32x16 bits;
    std::memcpy(&bits, &w, sizeof bits);
    bits <<= 16;
    std::memcpy(dst + i, &bits, sizeof bits);
  }
  return i;
}

__attribute__((target("avx512f"))) int64_t encode_bf16_avx512(const float* src, int64_t count, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    U32x16 u;
    std::memcpy(&u, src + i, sizeof u);
    const U32x16 quiet_nan = (u >> 16) | 0x0040u;
    const U32x16 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const U32x16 out = (u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded;
    const U16x16 narrow = __builtin_convertvector(out, U16x16);
    std::memcpy(dst + i, &narrow, sizeof narrow);
  }
  return i;
}

bool have_avx512f() {
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
}

bool have_avx512bw() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return ok;
}
#endif

}  // namespace

void decode_elements(DType dtype, Fp8Flavor flavor, const void* src, int64_t first, int64_t count,
                     float dequant_scale, float* dst) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (count >= 16 && dtype != DType::bf16 && have_avx512f()) {
    int64_t done;
    if (dtype == DType::fp16)
      done = decode_fp16_avx512(static_cast<const uint16_t*>(src) + first, count, dst);
    else
      done = decode_fp8_avx512(static_cast<const uint8_t*>(src) + first, count, fp8_decode_table(flavor), dequant_scale,
                               dst);
    first += done;
    count -= done;
    dst += done;
  }
#endif
#if defined(__x86_64__) && defined(__GNUC__)
  if (count >= 16 && dtype == DType::bf16 && have_avx512f()) {
    const int64_t done = decode_bf16_avx512(static_cast<const uint16_t*>(src) + first, count, dst);
    first += done;
    count -= done;
    dst += done;
  }
#endif
  switch (dtype) {
    case DType::bf16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + first;
      for (int64_t i = 0; i < count; ++i) dst[i] = bits_float((uint32_t)s[i] << 16);
      break;
    }
    case DType::fp16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + first;
      for (int64_t i = 0; i < count; ++i) dst[i] = fp16_bits_to_float(s[i]);
      break;
    }
    case DType::fp8: {
      const uint8_t* s = static_cast<const uint8_t*>(src) + first;
      const float* table = fp8_decode_table(flavor);
      for (int64_t i = 0; i < count; ++i) dst[i] = table[s[i]] * dequant_scale;
      break;
    }
  }
}

void encode_elements(DType dtype, Fp8Flavor flavor, const float* src, int64_t count, void* dst, int64_t first) {
  switch (dtype) {
    case DType::bf16: {
      // float_to_bf16_bits without its branch, so the loop vectorises (the generator
      // encodes the whole KV cache through here)
      uint16_t* d = static_cast<uint16_t*>(dst) + first;
      int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
      if (count >= 16 && have_avx512f()) i = encode_bf16_avx512(src, count, d);
#endif
      for (; i < count; ++i) {
        const uint32_t u = float_bits(src[i]);
        const uint32_t quiet_nan = (u >> 16) | 0x0040u;
        const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
        d[i] = (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
      }
      break;
    }
    case DType::fp16: {
      uint16_t* d = static_cast<uint16_t*>(dst) + first;
      for (int64_t i = 0; i < count; ++i) d[i] = float_to_fp16_bits(src[i]);
      break;
    }
    case DType::fp8: {
      uint8_t* d = static_cast<uint8_t*>(dst) + first;
      int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
      if (count >= 16 && have_avx512bw()) i = encode_fp8_avx512(src, count, flavor, d);
#endif
      for (; i < count; ++i) d[i] = float_to_fp8_bits(src[i], flavor);
      break;
    }
  }
}

}  // namespace mlactl
