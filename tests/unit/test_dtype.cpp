// Host codecs (core/dtype): exhaustive over every code of each format, plus the
// rounding ties between every pair of neighbouring codes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"

using namespace mlactl;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Exact midpoint of two floats whose ulp grid is much coarser than fp32's.
float midpoint(float a, float b) { return (float)(((double)a + (double)b) / 2.0); }

}  // namespace

TEST_CASE("fp8 e4m3fn: known codes and all 256 decodes", "[dtype]") {
  const Fp8Flavor f = Fp8Flavor::e4m3fn;
  CHECK(fp8_bits_to_float(0x7E, f) == 448.0f);
  CHECK(fp8_bits_to_float(0xFE, f) == -448.0f);
  CHECK(fp8_bits_to_float(0x08, f) == std::ldexp(1.0f, -6));
  CHECK(fp8_bits_to_float(0x01, f) == std::ldexp(1.0f, -9));
  CHECK(fp8_bits_to_float(0x07, f) == 7 * std::ldexp(1.0f, -9));
  CHECK(fp8_bits_to_float(0x38, f) == 1.0f);  // e = 7 = bias
  CHECK(fp8_bits_to_float(0x00, f) == 0.0f);
  CHECK(std::signbit(fp8_bits_to_float(0x80, f)));  // OCP has -0
  CHECK(std::isnan(fp8_bits_to_float(0x7F, f)));
  CHECK(std::isnan(fp8_bits_to_float(0xFF, f)));
  CHECK(fp8_max(f) == 448.0f);
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float v = fp8_bits_to_float((uint8_t)c, f);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    CHECK(std::isfinite(v));
    // every finite code round-trips exactly (sign of zero included)
    CHECK(float_to_fp8_bits(v, f) == c);
  }
  CHECK(nans == 2);
}

TEST_CASE("fp8 e4m3fnuz: known codes and all 256 decodes", "[dtype]") {
  const Fp8Flavor f = Fp8Flavor::e4m3fnuz;
  CHECK(fp8_bits_to_float(0x7F, f) == 240.0f);
  CHECK(fp8_bits_to_float(0xFF, f) == -240.0f);
  CHECK(std::isnan(fp8_bits_to_float(0x80, f)));
  CHECK(fp8_bits_to_float(0x08, f) == std::ldexp(1.0f, -7));
  CHECK(fp8_bits_to_float(0x01, f) == std::ldexp(1.0f, -10));
  CHECK(fp8_bits_to_float(0x40, f) == 1.0f);  // e = 8 = bias
  CHECK(fp8_max(f) == 240.0f);
  CHECK(fp8_nan_bits(f) == 0x80);
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float v = fp8_bits_to_float((uint8_t)c, f);
    if (std::isnan(v)) {
      ++nans;
      CHECK(c == 0x80);
      continue;
    }
    CHECK(float_to_fp8_bits(v, f) == c);
  }
  CHECK(nans == 1);
  // no negative zero: -0 and negatives that round to zero encode as 0x00
  CHECK(float_to_fp8_bits(-0.0f, f) == 0x00);
  CHECK(float_to_fp8_bits(-std::ldexp(1.0f, -12), f) == 0x00);
}

TEST_CASE("fp8: ties round to even, neighbours round to nearest, saturation, NaN", "[dtype]") {
  for (Fp8Flavor f : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz}) {
    INFO(to_string(f));
    const int max_code = f == Fp8Flavor::e4m3fn ? 0x7E : 0x7F;
    for (int c = 0; c < max_code; ++c) {
      for (int sign : {0x00, 0x80}) {
        // fnuz has no -0 (0x80 is its NaN): the negative neighbour of 0x81 is 0x00
        const bool fnuz_zero = f == Fp8Flavor::e4m3fnuz && c == 0 && sign;
        const uint8_t lo = fnuz_zero ? (uint8_t)0x00 : (uint8_t)(c | sign), hi = (uint8_t)((c + 1) | sign);
        const float a = fp8_bits_to_float(lo, f), b = fp8_bits_to_float(hi, f);
        const float mid = midpoint(a, b);
        const uint8_t even = (c % 2 == 0) ? lo : hi;
        INFO("codes " << (int)lo << "," << (int)hi);
        CHECK((int)float_to_fp8_bits(mid, f) == (int)even);
        CHECK((int)float_to_fp8_bits(std::nextafter(mid, a), f) == (int)lo);
        CHECK((int)float_to_fp8_bits(std::nextafter(mid, b), f) == (int)hi);
      }
    }
    const float mx = fp8_max(f);
    const uint8_t max_pos = (uint8_t)max_code, max_neg = (uint8_t)(max_code | 0x80);
    CHECK(float_to_fp8_bits(mx * 1.03f, f) == max_pos);  // between max and the next binade step
    CHECK(float_to_fp8_bits(1e6f, f) == max_pos);
    CHECK(float_to_fp8_bits(-1e6f, f) == max_neg);
    CHECK(float_to_fp8_bits(std::numeric_limits<float>::infinity(), f) == max_pos);
    CHECK(float_to_fp8_bits(-std::numeric_limits<float>::infinity(), f) == max_neg);
    CHECK(std::isnan(fp8_bits_to_float(float_to_fp8_bits(std::nanf(""), f), f)));
    CHECK(float_to_fp8_bits(std::nanf(""), f) == fp8_nan_bits(f));
    CHECK(float_to_fp8_bits(1e-30f, f) == 0x00);
    CHECK(float_to_fp8_bits(from_bits(0x00000001u), f) == 0x00);  // fp32 subnormal
  }
}

TEST_CASE("bf16: every code round-trips, ties to even, NaN preserved", "[dtype]") {
  CHECK(float_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(float_to_bf16_bits(-2.0f) == 0xC000);
  CHECK(bf16_bits_to_float(0x3F80) == 1.0f);
  for (uint32_t c = 0; c < 0x10000u; ++c) {
    const float v = bf16_bits_to_float((uint16_t)c);
    if (std::isnan(v)) {
      const uint16_t back = float_to_bf16_bits(v);
      CHECK(std::isnan(bf16_bits_to_float(back)));
      CHECK((back & 0x8000) == (c & 0x8000));
      continue;
    }
    CHECK(float_to_bf16_bits(v) == c);
    // ties between c and c+1 within a binade (same sign, finite neighbour)
    const uint32_t mag = c & 0x7FFFu;
    if (mag < 0x7F7Fu) {
      const float b = bf16_bits_to_float((uint16_t)(c + 1));
      const float mid = midpoint(v, b);
      CHECK(float_to_bf16_bits(mid) == ((c % 2 == 0) ? c : c + 1));
      CHECK(float_to_bf16_bits(std::nextafter(mid, b)) == c + 1);
      CHECK(float_to_bf16_bits(std::nextafter(mid, v)) == c);
    }
  }
  // the largest finite bf16 plus half an ulp rounds (to even) to inf
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(float_to_bf16_bits(-std::numeric_limits<float>::infinity()) == 0xFF80);
  // signalling NaN with only low payload bits must not become inf
  CHECK(float_to_bf16_bits(from_bits(0x7F800001u)) == 0x7FC0);
  CHECK(float_to_bf16_bits(from_bits(0xFFC12345u)) == 0xFFC1);
}

TEST_CASE("fp16: every code round-trips, ties to even, subnormals, inf", "[dtype]") {
  CHECK(float_to_fp16_bits(1.0f) == 0x3C00);
  CHECK(float_to_fp16_bits(-2.0f) == 0xC000);
  CHECK(float_to_fp16_bits(0.1f) == 0x2E66);
  CHECK(float_to_fp16_bits(65504.0f) == 0x7BFF);
  CHECK(float_to_fp16_bits(65519.996f) == 0x7BFF);
  CHECK(float_to_fp16_bits(65520.0f) == 0x7C00);
  CHECK(float_to_fp16_bits(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_fp16_bits(std::ldexp(1.0f, -25)) == 0x0000);         // tie to even (0)
  CHECK(float_to_fp16_bits(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_fp16_bits(std::ldexp(3.0f, -25)) == 0x0002);         // tie 1.5 ulp -> even 2
  CHECK(float_to_fp16_bits(-std::ldexp(1.0f, -14)) == 0x8400);        // smallest normal
  CHECK(float_to_fp16_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_fp16_bits(std::nanf("")) == 0x7E00);
  CHECK(fp16_bits_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(fp16_bits_to_float(0x03FF) == 1023 * std::ldexp(1.0f, -24));
  CHECK(std::isinf(fp16_bits_to_float(0xFC00)));
  for (uint32_t c = 0; c < 0x10000u; ++c) {
    const float v = fp16_bits_to_float((uint16_t)c);
    const uint32_t e = (c >> 10) & 0x1F, m = c & 0x3FF;
    if (e == 31 && m != 0) {
      CHECK(std::isnan(v));
      CHECK(std::isnan(fp16_bits_to_float(float_to_fp16_bits(v))));
      continue;
    }
    // independent decode: value = m * 2^-24 (subnormal) or (1024 + m) * 2^(e-25)
    if (e < 31) {
      const double want = e == 0 ? std::ldexp((double)m, -24) : std::ldexp(1024.0 + m, (int)e - 25);
      CHECK((double)std::fabs(v) == want);
    }
    CHECK(float_to_fp16_bits(v) == c);
    const uint32_t mag = c & 0x7FFFu;
    if (mag < 0x7BFFu) {
      const float b = fp16_bits_to_float((uint16_t)(c + 1));
      const float mid = midpoint(v, b);
      CHECK(float_to_fp16_bits(mid) == ((c % 2 == 0) ? c : c + 1));
      CHECK(float_to_fp16_bits(std::nextafter(mid, b)) == c + 1);
      CHECK(float_to_fp16_bits(std::nextafter(mid, v)) == c);
    }
  }
}

TEST_CASE("bulk decode applies the per-tensor scale to fp8 only", "[dtype]") {
  const uint16_t bf[2] = {0x3F80, 0xC000};
  float out[2];
  decode_elements(DType::bf16, Fp8Flavor::e4m3fn, bf, 0, 2, 4.0f, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
  const uint8_t f8[3] = {0x38, 0x7E, 0x7F};
  float o8[3];
  decode_elements(DType::fp8, Fp8Flavor::e4m3fn, f8, 0, 3, 0.5f, o8);
  CHECK(o8[0] == 0.5f);
  CHECK(o8[1] == 224.0f);
  CHECK(std::isnan(o8[2]));
  float src[2] = {1.0f, 448.0f};
  uint8_t enc[4] = {0, 0, 0, 0};
  encode_elements(DType::fp8, Fp8Flavor::e4m3fn, src, 2, enc, 1);
  CHECK(enc[1] == 0x38);
  CHECK(enc[2] == 0x7E);
  CHECK(round_to_dtype(1.00390625f, DType::bf16) == 1.0f);  // 1 + 2^-8: tie to even
}
