// Bit-exact host codecs for the storage dtypes (docs/design.md §2 "kv_cache.dtype", §5):
// bf16, IEEE fp16 and the two fp8 e4m3 flavours. Decoding is done in software so
// every executor (CPU, GPU, reference) sees the same values from the same bits
// (docs/design.md §10: the same bits decode differently per flavour).
#pragma once
#include <cstdint>

#include "core/types.hpp"

namespace mlactl {

// bf16: the top half of an fp32. Encode rounds to nearest even; NaN stays NaN
// (sign and top payload bits kept, forced quiet); overflow rounds to +-inf.
uint16_t float_to_bf16_bits(float x);
float bf16_bits_to_float(uint16_t bits);

// IEEE 754 binary16: round to nearest even, subnormals, +-inf, NaN kept quiet
// with its sign. Values >= 65520 in magnitude round to inf.
uint16_t float_to_fp16_bits(float x);
float fp16_bits_to_float(uint16_t bits);

// fp8 e4m3, both flavours (docs/design.md §10):
//  e4m3fn (OCP, gfx950/NVIDIA): bias 7, max 448, NaN 0x7F/0xFF, no inf, has -0.
//  e4m3fnuz (gfx942):           bias 8, max 240, single NaN 0x80, no inf, no -0.
// Encode rounds to nearest even and saturates: |x| beyond max (inf included)
// becomes +-max; NaN becomes the flavour's NaN; -0 becomes 0x00 on fnuz.
uint8_t float_to_fp8_bits(float x, Fp8Flavor flavor);
float fp8_bits_to_float(uint8_t bits, Fp8Flavor flavor);
float fp8_max(Fp8Flavor flavor);
uint8_t fp8_nan_bits(Fp8Flavor flavor);  // 0x7F (e4m3fn) or 0x80 (e4m3fnuz)
// 256-entry decode table (static storage), indexed by the code.
const float* fp8_decode_table(Fp8Flavor flavor);

// Generic element access for a storage dtype. Elements are uint16 bits for
// bf16/fp16 and uint8 codes for fp8. `dequant_scale` is the per-tensor scale and
// applies to fp8 only (bf16/fp16 caches carry no scale, as in vLLM).
uint16_t nan_bits16(DType dtype);  // quiet NaN of bf16 or fp16
float round_to_dtype(float x, DType dtype, Fp8Flavor flavor = Fp8Flavor::e4m3fn);
// Decode `count` elements starting at element `first` of `src` into dst.
void decode_elements(DType dtype, Fp8Flavor flavor, const void* src, int64_t first, int64_t count,
                     float dequant_scale, float* dst);
// Encode floats (already divided by any fp8 scale) into `dst` at element `first`.
void encode_elements(DType dtype, Fp8Flavor flavor, const float* src, int64_t count, void* dst, int64_t first);

}  // namespace mlactl
