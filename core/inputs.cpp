#include "core/inputs.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "core/dtype.hpp"
#include "core/gemm.hpp"  // GrowBuffer
#include "core/parallel.hpp"
#include "core/rng.hpp"


namespace mlactl {

namespace {

// From this size on storage goes on huge pages (the KV cache of a large batch; q and
// small caches stay on the heap)
constexpr size_t kHugeStorageBytes = size_t(32) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

size_t huge_rounded(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

}  // namespace

void* allocate_storage(size_t bytes) {
  if (bytes < kHugeStorageBytes) return ::operator new(bytes);
  void* p = std::aligned_alloc(kHugePage, huge_rounded(bytes));
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, huge_rounded(bytes), MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
#endif
  return p;
}

void free_storage(void* p, size_t bytes) noexcept {
  if (bytes < kHugeStorageBytes) ::operator delete(p);
  else std::free(p);
}

namespace {

// Fixed-size chunks, each with its own generator, so the values do not depend on
// the thread count (docs/design.md §2: a seed gives the same inputs everywhere).
constexpr int64_t kQRowsPerChunk = 64;
constexpr int64_t kKvSlotsPerChunk = 256;

// Each chunk's generator: Rng(chunk_seed(seed, chunk), stream).
uint64_t chunk_seed(uint64_t seed, int64_t chunk) { return seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(chunk + 1)); }

// Rng(seed, stream).uniform_pm1() `count` times into dst, the same values (checked
// against Rng in test_numerics.cpp): SplitMix64's i-th output depends only on the
// start state plus i steps, so eight lanes run eight calls at once (AVX-512, or
// AVX2 in two registers of four).
// This mirrors core/rng.hpp (state seed ^ golden*(stream+1), += golden per call).
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

std::atomic<int> g_forced_generator{-1};  // set_generator_isa_for_testing; -1: the default

#if defined(__x86_64__) && defined(__GNUC__)
typedef uint64_t U64x8 __attribute__((vector_size(64)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef float F32x8 __attribute__((vector_size(32)));

__attribute__((target("avx512f,avx512dq"))) void uniform_pm1_avx512(uint64_t seed, RngStream stream, int64_t count,
                                                                      float* dst) {
  const uint64_t s0 = seed ^ (kGolden * ((uint64_t)stream + 1));
  U64x8 state;
  for (int l = 0; l < 8; ++l) state[l] = s0 + kGolden * (uint64_t)(l + 1);
  for (int64_t i = 0; i < count; i += 8) {
    U64x8 z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    const I32x8 top = __builtin_convertvector(z >> 40, I32x8) - (1 << 23);  // 24 bits, centred
    // (x - 2^23) / 2^23: exact in float, as uniform_pm1's division
    const F32x8 v = __builtin_convertvector(top, F32x8) * (1.0f / (float)(1 << 23));
    if (i + 8 <= count)
      std::memcpy(dst + i, &v, sizeof v);
    else
      for (int64_t l = 0; l < count - i; ++l) dst[i + l] = v[l];
    state += kGolden * 8;
  }
}

// AVX2 has no 64-bit multiply (vpmullq is AVX-512DQ), and GCC 12 lowers the 64-byte
// vectors' one to scalar code (slower than the plain Rng loop): the low 64 bits of
// z * c from three 32 x 32 -> 64 multiplies instead, four lanes per register.
__attribute__((target("avx2"))) inline __m256i mul_lo64_avx2(__m256i z, uint64_t c) {
  const __m256i c_lo = _mm256_set1_epi64x((int64_t)(c & 0xFFFFFFFFu));
  const __m256i c_hi = _mm256_set1_epi64x((int64_t)(c >> 32));
  const __m256i lo_lo = _mm256_mul_epu32(z, c_lo);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), c_lo), _mm256_mul_epu32(z, c_hi));
  return _mm256_add_epi64(lo_lo, _mm256_slli_epi64(cross, 32));
}

__attribute__((target("avx2"))) inline __m256i splitmix_mix_avx2(__m256i z) {
  z = mul_lo64_avx2(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ull);
  z = mul_lo64_avx2(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBull);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

__attribute__((target("avx2"))) void uniform_pm1_avx2(uint64_t seed, RngStream stream, int64_t count, float* dst) {
  const uint64_t s0 = seed ^ (kGolden * ((uint64_t)stream + 1));
  // calls 1-4 and 5-8 of each group of eight
  __m256i state_a = _mm256_set_epi64x((int64_t)(s0 + kGolden * 4), (int64_t)(s0 + kGolden * 3),
                                      (int64_t)(s0 + kGolden * 2), (int64_t)(s0 + kGolden * 1));
  __m256i state_b = _mm256_add_epi64(state_a, _mm256_set1_epi64x((int64_t)(kGolden * 4)));
  const __m256i step = _mm256_set1_epi64x((int64_t)(kGolden * 8));
  const __m256i even_words = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256i centre = _mm256_set1_epi32(1 << 23);
  const __m256 inv = _mm256_set1_ps(1.0f / (float)(1 << 23));
  for (int64_t i = 0; i < count; i += 8) {
    // top 24 bits of each output (< 2^24: the low word of each lane holds it)
    const __m256i a = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(splitmix_mix_avx2(state_a), 40), even_words);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(splitmix_mix_avx2(state_b), 40), even_words);
    const __m256i top = _mm256_sub_epi32(_mm256_permute2x128_si256(a, b, 0x20), centre);
    // (x - 2^23) / 2^23: exact in float, as uniform_pm1's division
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(top), inv);
    if (i + 8 <= count) {
      _mm256_storeu_ps(dst + i, v);
    } else {
      float lanes[8];
      _mm256_storeu_ps(lanes, v);
      for (int64_t l = 0; l < count - i; ++l) dst[i + l] = lanes[l];
    }
    state_a = _mm256_add_epi64(state_a, step);
    state_b = _mm256_add_epi64(state_b, step);
  }
}
#endif

bool cpu_has(GeneratorIsa isa) {
  switch (isa) {
    case GeneratorIsa::scalar: return true;
#if defined(__x86_64__) && defined(__GNUC__)
    case GeneratorIsa::avx2: return __builtin_cpu_supports("avx2");
    case GeneratorIsa::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
    default: return false;
#endif
  }
  return false;
}

GeneratorIsa active_generator_isa() {
  const int forced = g_forced_generator.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<GeneratorIsa>(forced);
  static const GeneratorIsa best = cpu_has(GeneratorIsa::avx512) ? GeneratorIsa::avx512
                                   : cpu_has(GeneratorIsa::avx2) ? GeneratorIsa::avx2
                                                                 : GeneratorIsa::scalar;
  return best;
}

void uniform_pm1_fill(uint64_t seed, RngStream stream, int64_t count, float* dst) {
  switch (active_generator_isa()) {
#if defined(__x86_64__) && defined(__GNUC__)
    case GeneratorIsa::avx512: return uniform_pm1_avx512(seed, stream, count, dst);
    case GeneratorIsa::avx2: return uniform_pm1_avx2(seed, stream, count, dst);
#endif
    default: break;
  }
  Rng rng(seed, stream);
  for (int64_t i = 0; i < count; ++i) dst[i] = rng.uniform_pm1();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

bool generator_isa_available(GeneratorIsa isa) { return cpu_has(isa); }

void set_generator_isa_for_testing(std::optional<GeneratorIsa> isa) {
  g_forced_generator.store(isa && cpu_has(*isa) ? static_cast<int>(*isa) : -1);
}

void EncodedTensor::decode(int64_t first, int64_t count, float* dst) const {
  decode_elements(dtype, fp8_flavor, bytes.data(), first, count, dtype == DType::fp8 ? scale : 1.0f, dst);
}

float EncodedTensor::decode_one(int64_t index) const {
  float v;
  decode(index, 1, &v);
  return v;
}

int64_t kv_slot_of(const Batch& b, int request, int64_t position) {
  const int64_t Kb = b.kv_cache.block_size;
  return (int64_t)b.kv_cache.block_table[request][position / Kb] * Kb + position % Kb;
}

int64_t estimated_input_bytes(const Batch& b, int64_t num_rows) {
  const int64_t D = b.head_dim();
  const int64_t q_elems = num_rows * b.model.num_heads * D;
  const int64_t q_bytes = q_elems * dtype_bytes(b.decode.q_dtype) + (b.decode.q_dtype == DType::fp8 ? q_elems * 4 : 0);
  const int64_t slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
  return q_bytes + slots * D * dtype_bytes(b.kv_cache.dtype) + slots;
}

Inputs generate_inputs(const Batch& b) { return generate_inputs(b, oracle_windows(b)); }

namespace {

// Everything of Inputs but the tensors' bytes (and fp8 q's scale, which comes from
// its values): dims, rows, dtypes, the KV scale, the padded block table, and which
// slots hold a request's KV (docs/design.md §2 placement) in slot_used.
Inputs input_layout(const Batch& b, const std::vector<RowWindow>& windows, std::vector<uint8_t>& slot_used) {
  Inputs in;
  in.num_rows = (int64_t)windows.size();
  in.num_heads = b.model.num_heads;
  in.head_dim = b.head_dim();
  in.v_dim = b.model.kv_lora_rank;
  in.softmax_scale = (float)b.model.softmax_scale;
  in.block_size = b.kv_cache.block_size;
  in.num_slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
  const Fp8Flavor flavor = b.fp8_flavor();
  in.rows.resize(windows.size());
  for (size_t i = 0; i < windows.size(); ++i)
    in.rows[i] = QueryRowInfo{windows[i].request, windows[i].token, windows[i].kind == MaskKind::padding};
  in.q.dtype = b.decode.q_dtype;
  in.q.fp8_flavor = flavor;
  in.kv.dtype = b.kv_cache.dtype;
  in.kv.fp8_flavor = flavor;
  in.kv.scale = in.kv.dtype == DType::fp8 ? (float)b.kv_cache.scale : 1.0f;

  slot_used.assign((size_t)in.num_slots, 0);
  const int64_t Kb = in.block_size;
  in.block_table_width = 1;
  for (const auto& row : b.kv_cache.block_table) in.block_table_width = std::max<int64_t>(in.block_table_width, (int64_t)row.size());
  const int64_t R = (int64_t)b.requests.size();
  in.padded_block_table.assign((size_t)(R * in.block_table_width), kBlockTablePoison);
  for (int64_t r = 0; r < R; ++r) {
    const Request& req = b.requests[r];
    if (req.padding || req.seq_len() == 0) continue;
    const std::string where = "/kv_cache/block_table/" + std::to_string(r);
    const int64_t blocks_needed = ceil_div(req.seq_len(), Kb);
    if ((int64_t)b.kv_cache.block_table.size() <= r || (int64_t)b.kv_cache.block_table[r].size() < blocks_needed)
      throw invalid_input(where, "needs " + std::to_string(blocks_needed) + " blocks for seq_len " +
                                     std::to_string(req.seq_len()));
    for (int64_t j = 0; j < blocks_needed; ++j) {
      const int32_t block = b.kv_cache.block_table[r][j];
      if (block < 0 || (int64_t)block >= b.kv_cache.num_blocks)
        throw invalid_input(where + "/" + std::to_string(j), "block " + std::to_string(block) + " outside [0, " +
                                                                 std::to_string(b.kv_cache.num_blocks) + ")");
      in.padded_block_table[r * in.block_table_width + j] = block;
    }
    for (int64_t j = 0; j < req.seq_len(); ++j) slot_used[kv_slot_of(b, (int)r, j)] = 1;
  }
  for (uint8_t u : slot_used) in.used_slots += u;
  return in;
}

int64_t kv_row_bytes(const Inputs& in) { return (int64_t)in.head_dim * dtype_bytes(in.kv.dtype); }

}  // namespace

Inputs generate_inputs(const Batch& b, const std::vector<RowWindow>& windows, int threads) {
  std::vector<uint8_t> slot_used;
  Inputs in = input_layout(b, windows, slot_used);
  const int64_t D = in.head_dim;
  const int64_t H = in.num_heads;
  const Fp8Flavor flavor = b.fp8_flavor();

  // ---- q: generated in the model dtype; fp8 q is then quantized per tensor, as
  // vLLM R1 does for decode q (docs/design.md §2 decode.q_dtype).
  const int64_t q_row_elems = H * D;
  const int64_t q_elems = in.num_rows * q_row_elems;
  in.q.bytes.resize((size_t)(q_elems * dtype_bytes(in.q.dtype)));  // every byte written below
  const bool q_is_fp8 = in.q.dtype == DType::fp8;
  std::vector<float> q_model;  // model-dtype values, kept only for fp8 quantization
  if (q_is_fp8) q_model.resize((size_t)q_elems);
  const int64_t q_chunks = ceil_div(in.num_rows, kQRowsPerChunk);
  parallel_for(q_chunks, threads, [&](int64_t chunk) {
    const int64_t r0 = chunk * kQRowsPerChunk, r1 = std::min(in.num_rows, r0 + kQRowsPerChunk);
    std::vector<float> vals((size_t)((r1 - r0) * q_row_elems));
    uniform_pm1_fill(chunk_seed(b.seed, chunk), kStreamQ, (int64_t)vals.size(), vals.data());
    // round_to_dtype(kQAmplitude * v, model dtype) for every value: encode + decode
    // in bulk is the same rounding without two calls per value
    for (float& v : vals) v = kQAmplitude * v;
    std::vector<uint16_t> bits(vals.size());  // fp8 codes would use the low bytes
    encode_elements(b.model.dtype, Fp8Flavor::e4m3fn, vals.data(), (int64_t)vals.size(), bits.data(), 0);
    decode_elements(b.model.dtype, Fp8Flavor::e4m3fn, bits.data(), 0, (int64_t)vals.size(), 1.0f, vals.data());
    if (q_is_fp8)
      std::copy(vals.begin(), vals.end(), q_model.begin() + r0 * q_row_elems);
    else
      encode_elements(in.q.dtype, flavor, vals.data(), (int64_t)vals.size(), in.q.data(), r0 * q_row_elems);
  });
  if (q_is_fp8) {
    float amax = 0;
    for (float v : q_model) amax = std::max(amax, std::fabs(v));
    in.q.scale = amax > 0 ? amax / fp8_max(flavor) : 1.0f;
    const float inv = 1.0f / in.q.scale;
    parallel_for(q_chunks, threads, [&](int64_t chunk) {
      const int64_t e0 = chunk * kQRowsPerChunk * q_row_elems;
      const int64_t e1 = std::min(q_elems, e0 + kQRowsPerChunk * q_row_elems);
      uint8_t* dst = static_cast<uint8_t*>(in.q.data());
      for (int64_t e = e0; e < e1; ++e) dst[e] = float_to_fp8_bits(q_model[e] * inv, flavor);
    });
  }

  // ---- KV: every slot gets its own values (so a slot's content does not depend on
  // which slots are used); unused slots are then overwritten with NaN.
  in.kv.bytes.resize((size_t)(in.num_slots * kv_row_bytes(in)));  // every slot written below
  const float kv_inv_scale = 1.0f / in.kv.scale;
  // per worker, reused (and not zeroed) across its chunks: every value is generated
  parallel_for_with_state<GrowBuffer<float>>(ceil_div(in.num_slots, kKvSlotsPerChunk), threads, [&](GrowBuffer<float>& buf, int64_t chunk) {
    const int64_t s0 = chunk * kKvSlotsPerChunk, s1 = std::min(in.num_slots, s0 + kKvSlotsPerChunk);
    // the chunk's generator runs through every slot, used or not, D values each
    const int64_t count = (s1 - s0) * D;
    float* const all = buf.get((size_t)count);
    uniform_pm1_fill(chunk_seed(b.seed, chunk), kStreamKv, count, all);
    for (int64_t s = s0; s < s1; ++s) {
      float* vals = all + (s - s0) * D;
      for (int64_t d = 0; d < D; ++d) vals[d] = kKvAmplitude * vals[d];
      if (!slot_used[s]) {
        std::fill(vals, vals + D, std::nanf(""));
      } else if (in.kv.dtype == DType::fp8) {
        for (int64_t d = 0; d < D; ++d) vals[d] *= kv_inv_scale;
      }
    }
    encode_elements(in.kv.dtype, flavor, all, count, in.kv.data(), s0 * D);
  });
  return in;
}

Inputs allocate_inputs(const Batch& b, const std::vector<RowWindow>& windows) {
  std::vector<uint8_t> slot_used;
  Inputs in = input_layout(b, windows, slot_used);
  in.q.bytes.resize((size_t)(in.num_rows * in.num_heads * in.head_dim * dtype_bytes(in.q.dtype)));
  const int64_t row_bytes = kv_row_bytes(in);
  in.kv.bytes.resize((size_t)(in.num_slots * row_bytes));
  // the poison generate_inputs encodes into an unused slot
  const std::vector<float> nan_row((size_t)in.head_dim, std::nanf(""));
  std::vector<uint8_t> poison((size_t)row_bytes);
  encode_elements(in.kv.dtype, in.kv.fp8_flavor, nan_row.data(), in.head_dim, poison.data(), 0);
  for (int64_t s = 0; s < in.num_slots; ++s)
    if (!slot_used[s]) std::memcpy(in.kv.bytes.data() + s * row_bytes, poison.data(), (size_t)row_bytes);
  return in;
}

void place_kv_blocks(const Batch& b, const std::unordered_map<int64_t, int64_t>& index_of_block, const void* blocks,
                     const std::string& where, Inputs& in) {
  const int64_t row_bytes = kv_row_bytes(in);
  const uint8_t* const block_bytes = static_cast<const uint8_t*>(blocks);
  const int kb = b.kv_cache.block_size;
  for (size_t r = 0; r < b.requests.size(); ++r) {
    const int64_t len = b.requests[r].padding ? 0 : b.requests[r].seq_len();
    for (int64_t j = 0; j < len; ++j) {
      const int64_t slot = kv_slot_of(b, int(r), j);
      const auto it = index_of_block.find(slot / kb);
      if (it == index_of_block.end())
        throw invalid_input(where, "lacks block " + std::to_string(slot / kb) + ", which request " + std::to_string(r) +
                                       " reads at KV position " + std::to_string(j) + " (kv_cache.block_table)");
      std::memcpy(in.kv.bytes.data() + slot * row_bytes, block_bytes + (it->second * kb + slot % kb) * row_bytes, (size_t)row_bytes);
    }
  }
}

double max_abs_v(const Inputs& in) {
  std::vector<float> row((size_t)in.head_dim);
  double m = 0;
  for (int64_t slot = 0; slot < in.num_slots; ++slot) {
    in.kv.decode(slot * in.head_dim, in.head_dim, row.data());
    for (int c = 0; c < in.v_dim && c < in.head_dim; ++c)
      if (std::isfinite(row[(size_t)c])) m = std::max(m, (double)std::fabs(row[(size_t)c]));
  }
  return m;
}

}  // namespace mlactl
