// kernels/fp8x2.hpp (the warpgroup kernel's fp8 -> bf16 conversion) against the
// software decode the CPU reference uses: every pair of codes, both flavours.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "core/dtype.hpp"
#include "kernels/fp8x2.hpp"

namespace {
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

void check_flavor(mlactl::Fp8Flavor flavor) {
  const bool fnuz = flavor == mlactl::Fp8Flavor::e4m3fnuz;
  int mismatches = 0;
  for (uint32_t w = 0; w < 65536; ++w) {  // codes c0 = w & 0xff, c1 = w >> 8 (bytes 0 and 1 of a word)
    uint32_t lo = 0, hi = 0;
    mla::fp8x4_to_bf16x4(w | (w << 16), fnuz, &lo, &hi);
    const uint16_t got[4] = {uint16_t(lo), uint16_t(lo >> 16), uint16_t(hi), uint16_t(hi >> 16)};
    const uint8_t codes[4] = {uint8_t(w), uint8_t(w >> 8), uint8_t(w), uint8_t(w >> 8)};
    for (int i = 0; i < 4; ++i) {
      const float ref = mlactl::fp8_bits_to_float(codes[i], flavor);
      const uint16_t want = mlactl::float_to_bf16_bits(ref);
      const bool ok = std::isnan(ref) ? bf16_is_nan(got[i]) : got[i] == want;
      if (!ok && ++mismatches <= 5)
        FAIL_CHECK("flavor " << (fnuz ? "e4m3fnuz" : "e4m3fn") << " code 0x" << std::hex << int(codes[i]) << ": got 0x"
                             << got[i] << ", want 0x" << want);
    }
  }
  CHECK(mismatches == 0);
}
}  // namespace

TEST_CASE("fp8x2: e4m3fn codes convert to the reference's bf16 bits, pairwise", "[dtype][kernels]") {
  check_flavor(mlactl::Fp8Flavor::e4m3fn);
}

TEST_CASE("fp8x2: e4m3fnuz codes convert to the reference's bf16 bits, pairwise", "[dtype][kernels]") {
  check_flavor(mlactl::Fp8Flavor::e4m3fnuz);
}

TEST_CASE("fp8x2: byte_perm follows prmt's default mode", "[kernels]") {
  CHECK(mla::byte_perm(0x33221100u, 0x77665544u, 0x7531u) == 0x77553311u);
  CHECK(mla::byte_perm(0xddccbbaau, 0u, 0x4140u) == 0x00bb00aau);
  CHECK(mla::lanes_lt(0x00070008u, 0x00080008u) == 0xffff0000u);
  CHECK(mla::lanes_eq(0x007f0001u, 0x007f007fu) == 0xffff0000u);
  // bit 3 of a selector nibble: the selected byte's top bit replicated
  CHECK(mla::byte_perm(0x00800080u, 0u, 0x9988u) == 0x0000ffffu);
  CHECK(mla::byte_perm(0x80000000u, 0u, 0xbbaau) == 0xffff0000u);
}

// The fast form followed by fp8_fix_nan_bf16x2 gives the exact form's bits for every
// pair of codes, at every byte position (the kernel applies the fix to every word of
// a half tile once fp8x4_nan_bytes finds a NaN code in any of them).
TEST_CASE("fp8x2: the fast form equals the exact form for every code pair, both flavours", "[dtype][kernels]") {
  for (const bool fnuz : {false, true}) {
    int mismatches = 0;
    for (uint32_t w = 0; w < 65536; ++w) {
      for (const uint32_t word : {w | (w << 16), (w << 8) | (w >> 8 << 24), w << 16}) {
        uint32_t lo = 0, hi = 0, want_lo = 0, want_hi = 0;
        mla::fp8x4_to_bf16x4(word, fnuz, &want_lo, &want_hi);
        mla::fp8x4_to_bf16x4_fast(word, fnuz, &lo, &hi);
        lo = mla::fp8_fix_nan_bf16x2(lo, fnuz);
        hi = mla::fp8_fix_nan_bf16x2(hi, fnuz);
        if ((lo != want_lo || hi != want_hi) && ++mismatches <= 5)
          FAIL_CHECK("flavor " << (fnuz ? "e4m3fnuz" : "e4m3fn") << " word 0x" << std::hex << word << ": got 0x" << hi
                               << "'" << lo << ", want 0x" << want_hi << "'" << want_lo);
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("fp8x2: without the NaN fix the fast form differs only at NaN codes", "[kernels]") {
  for (const bool fnuz : {false, true})
    for (uint32_t c = 0; c < 256; ++c) {
      uint32_t lo = 0, hi = 0, want_lo = 0, want_hi = 0;
      mla::fp8x4_to_bf16x4(c, fnuz, &want_lo, &want_hi);
      mla::fp8x4_to_bf16x4_fast(c, fnuz, &lo, &hi);
      const bool nan = fnuz ? c == 0x80 : (c & 0x7f) == 0x7f;
      CHECK(((lo & 0xffffu) == (want_lo & 0xffffu)) == !nan);
    }
}

TEST_CASE("fp8x2: fp8x4_nan_bytes marks exactly the NaN codes", "[kernels]") {
  for (const bool fnuz : {false, true})
    for (uint32_t c = 0; c < 256; ++c) {
      const bool nan = fnuz ? c == 0x80 : (c & 0x7f) == 0x7f;
      for (int i = 0; i < 4; ++i) {
        const uint32_t word = (c << (8 * i)) | (0x01010101u & ~(0xffu << (8 * i)));  // other bytes: code 1
        CHECK(mla::fp8x4_nan_bytes(word, fnuz) == (nan ? 0x80u << (8 * i) : 0u));
      }
    }
}

// The fp16 form (the transposed kernel's producer when q is exact in fp16; e4m3fnuz
// there, e4m3fn on the host only: the device uses cvt.rn.f16x2.e4m3x2 for it) with
// fp8_fix_nan_f16x2 gives the reference's fp16 bits for every code pair, at every
// byte position; NaN codes give an fp16 NaN.
TEST_CASE("fp8x2: the fp16 form decodes every code pair, both flavours", "[dtype][kernels]") {
  for (const bool fnuz : {false, true}) {
    const mlactl::Fp8Flavor flavor = fnuz ? mlactl::Fp8Flavor::e4m3fnuz : mlactl::Fp8Flavor::e4m3fn;
    int mismatches = 0;
    for (uint32_t w = 0; w < 65536; ++w) {
      for (const uint32_t word : {w | (w << 16), (w << 8) | (w >> 8 << 24), w << 16}) {
        uint32_t lo = 0, hi = 0;
        mla::fp8x4_to_f16x4_fast(word, fnuz, &lo, &hi);
        if (mla::fp8x4_nan_bytes(word, fnuz)) {
          lo = mla::fp8_fix_nan_f16x2(lo, fnuz);
          hi = mla::fp8_fix_nan_f16x2(hi, fnuz);
        }
        const uint16_t got[4] = {uint16_t(lo), uint16_t(lo >> 16), uint16_t(hi), uint16_t(hi >> 16)};
        for (int i = 0; i < 4; ++i) {
          const float ref = mlactl::fp8_bits_to_float(uint8_t(word >> (8 * i)), flavor);
          const bool ok = std::isnan(ref) ? (got[i] & 0x7c00u) == 0x7c00u && (got[i] & 0x3ffu) != 0
                                          : got[i] == mlactl::float_to_fp16_bits(ref);
          if (!ok && ++mismatches <= 5)
            FAIL_CHECK("flavor " << (fnuz ? "e4m3fnuz" : "e4m3fn") << " word 0x" << std::hex << word << " byte " << i
                                 << ": got 0x" << got[i] << ", want 0x" << mlactl::float_to_fp16_bits(ref));
        }
      }
    }
    CHECK(mismatches == 0);
  }
}
