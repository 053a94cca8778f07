// Host-side check of kernels/gpu.hpp's bit-level codecs against core/dtype.hpp:
// every bf16/fp16/fp8 code decodes to the same fp32 bits, and output rounding
// (fp32 -> bf16/fp16, RNE) agrees on a sweep of fp32 values. Compiled by the GPU
// compiler (gpu.hpp needs it) but needs no device, so it runs in any GPU build.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/dtype.hpp"
#include "core/rng.hpp"
#include "kernels/gpu.hpp"

using namespace mlactl;

namespace {

bool same_value(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, 4) == 0;
}

}  // namespace

int main() {
  long failures = 0, checks = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    const uint16_t h = (uint16_t)c;
    checks += 2;
    failures += !same_value(mla::decode_bf16(h), bf16_bits_to_float(h));
    failures += !same_value(mla::decode_fp16(h), fp16_bits_to_float(h));
  }
  for (uint32_t c = 0; c < 256; ++c) {
    checks += 2;
    failures += !same_value(mla::decode_fp8((uint8_t)c, false), fp8_bits_to_float((uint8_t)c, Fp8Flavor::e4m3fn));
    failures += !same_value(mla::decode_fp8((uint8_t)c, true), fp8_bits_to_float((uint8_t)c, Fp8Flavor::e4m3fnuz));
  }
  // Rounding: every 16-bit code's neighbourhood (ties, halfway +- 1 ulp) and random fp32 bits.
  auto check_round = [&](float x) {
    checks += 2;
    const uint16_t b = mla::encode_bf16(x), want_b = float_to_bf16_bits(x);
    const uint16_t f = mla::encode_fp16(x), want_f = float_to_fp16_bits(x);
    failures += std::isnan(x) ? !(std::isnan(bf16_bits_to_float(b)) && std::isnan(bf16_bits_to_float(want_b))) : b != want_b;
    failures += std::isnan(x) ? !(std::isnan(fp16_bits_to_float(f)) && std::isnan(fp16_bits_to_float(want_f))) : f != want_f;
  };
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const uint32_t u = (hi << 16) | lo;
      float x;
      std::memcpy(&x, &u, 4);
      check_round(x);
    }
  for (uint32_t e = 0; e < 256; ++e)  // fp16 halfway points around each exponent
    for (uint32_t m = 0; m < 8192; m += 7) {
      const uint32_t u = (e << 23) | (m << 10) | (m & 0x3ffu) | 0x1000u;
      float x;
      std::memcpy(&x, &u, 4);
      check_round(x);
      check_round(-x);
    }
  Rng r(42);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = (uint32_t)r.next_u64();
    float x;
    std::memcpy(&x, &u, 4);
    check_round(x);
  }
  std::printf("gpu_codecs: %ld checks, %ld failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
