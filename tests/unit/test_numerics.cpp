// Inputs, layouts, the Eigen reference and compare (core/inputs, layout, reference, compare).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <Eigen/Dense>

#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "core/heads.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/reference.hpp"
#include "core/semantics.hpp"
#include "numerics_helpers.hpp"

using namespace mlactl;
using namespace mlactl::testing;

namespace {

// Straightforward double-precision attention for one (row, head), from the same
// decoded values: the yardstick for the Eigen reference.
void naive_attention(const Batch& b, const RowWindow& w, const Inputs& in, int h, std::vector<double>& out, double& lse) {
  const int64_t D = in.head_dim;
  std::vector<int64_t> positions = w.sparse_positions;
  if (w.kind != MaskKind::sparse)
    for (int64_t j = w.begin; j < w.end; ++j) positions.push_back(j);
  std::vector<double> q((size_t)D), scores;
  for (int64_t d = 0; d < D; ++d) q[d] = in.q.decode_one((w.row * in.num_heads + h) * D + d);
  for (int64_t pos : positions) {
    const int64_t slot = kv_slot_of(b, w.request, pos);
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += q[d] * in.kv.decode_one(slot * D + d);
    scores.push_back(b.model.softmax_scale * s);
  }
  double m = -INFINITY, sum = 0;
  for (double s : scores) m = std::max(m, s);
  for (double s : scores) sum += std::exp(s - m);
  out.assign((size_t)in.v_dim, 0.0);
  for (size_t j = 0; j < positions.size(); ++j) {
    const double p = std::exp(scores[j] - m) / sum;
    const int64_t slot = kv_slot_of(b, w.request, positions[j]);
    for (int d = 0; d < in.v_dim; ++d) out[d] += p * in.kv.decode_one(slot * D + d);
  }
  lse = m + std::log(sum);
}

// Max |reference - naive| over every computed (row, head, dim), and over LSE.
std::pair<double, double> reference_vs_naive(const Batch& b) {
  const auto rows = oracle_windows(b);
  const Inputs in = generate_inputs(b, rows);
  const ReferenceOutput ref = compute_reference(b, rows, in, 2);
  double max_out = 0, max_lse = 0;
  std::vector<double> out;
  double lse;
  for (const RowWindow& w : rows) {
    if (w.kind == MaskKind::padding) {
      CHECK(ref.computed[w.row] == 0);
      CHECK(std::isnan(ref.out[(w.row * in.num_heads) * in.v_dim]));
      continue;
    }
    REQUIRE(ref.computed[w.row] == 1);
    for (int h = 0; h < in.num_heads; ++h) {
      naive_attention(b, w, in, h, out, lse);
      for (int d = 0; d < in.v_dim; ++d)
        max_out = std::max(max_out, std::fabs(out[d] - ref.out[(w.row * in.num_heads + h) * in.v_dim + d]));
      max_lse = std::max(max_lse, std::fabs(lse - ref.lse[w.row * in.num_heads + h]));
    }
  }
  return {max_out, max_lse};
}

// The reference as it was first written: one Eigen GEMM per request chunk on
// RowMatrix operands, each exponential computed twice, one thread. The optimised
// reference must give exactly these bits (the reports built on it must not move).
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double eigen_softmax_row(const float* s, float* p, int64_t n, int64_t c0, int64_t c1, double scale) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = c0; j < c1; ++j) m = std::max(m, scale * (double)s[j]);
  double sum = 0;
  for (int64_t j = c0; j < c1; ++j) sum += std::exp(scale * (double)s[j] - m);
  const double inv = 1.0 / sum;
  std::fill(p, p + c0, 0.0f);
  for (int64_t j = c0; j < c1; ++j) p[j] = (float)(std::exp(scale * (double)s[j] - m) * inv);
  std::fill(p + c1, p + n, 0.0f);
  return m + std::log(sum);
}

void eigen_rows(const Batch& b, const Inputs& in, const RowMatrix& keys, int64_t r0, int64_t nr,
                const std::vector<std::pair<int64_t, int64_t>>& win, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim, n = keys.rows();
  RowMatrix q(nr * H, D), scores, probs(nr * H, n), values;
  in.q.decode(r0 * H * D, nr * H * D, q.data());
  scores.noalias() = q * keys.transpose();
  for (int64_t t = 0; t < nr; ++t)
    for (int h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      ref.lse[(r0 + t) * H + h] = (float)eigen_softmax_row(scores.row(i).data(), probs.row(i).data(), n, win[t].first,
                                                           win[t].second, b.model.softmax_scale);
    }
  values.noalias() = probs * keys.leftCols(in.v_dim);
  for (int64_t i = 0; i < nr * H; ++i)
    std::copy(values.row(i).data(), values.row(i).data() + in.v_dim, ref.out.data() + (r0 * H + i) * in.v_dim);
}

ReferenceOutput eigen_reference(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in) {
  ReferenceOutput ref;
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  ref.out.assign(rows.size() * H * in.v_dim, std::numeric_limits<float>::quiet_NaN());
  ref.lse.assign(rows.size() * H, std::numeric_limits<float>::quiet_NaN());
  auto empty = [](const RowWindow& w) { return w.kind == MaskKind::sparse ? w.sparse_positions.empty() : w.length() <= 0; };
  for (size_t i = 0; i < rows.size();) {
    const RowWindow& w = rows[i];
    if (w.kind == MaskKind::padding || empty(w)) {
      ++i;
      continue;
    }
    if (w.kind == MaskKind::sparse) {
      const int64_t n = (int64_t)w.sparse_positions.size();
      RowMatrix keys(n, D);
      for (int64_t j = 0; j < n; ++j) in.kv.decode(kv_slot_of(b, w.request, w.sparse_positions[j]) * D, D, keys.row(j).data());
      eigen_rows(b, in, keys, w.row, 1, {{0, n}}, ref);
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < rows.size() && rows[j].request == w.request && rows[j].kind != MaskKind::padding && !empty(rows[j])) ++j;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (size_t k = i; k < j; ++k) {
      lo = std::min(lo, rows[k].begin);
      hi = std::max(hi, rows[k].end);
    }
    RowMatrix keys(hi - lo, D);
    for (int64_t k = 0; k < hi - lo; ++k) in.kv.decode(kv_slot_of(b, w.request, lo + k) * D, D, keys.row(k).data());
    const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 24) / std::max<int64_t>(1, (hi - lo) * H));
    for (size_t r0 = i; r0 < j; r0 += chunk) {
      const int64_t nr = std::min<int64_t>(chunk, (int64_t)(j - r0));
      std::vector<std::pair<int64_t, int64_t>> win;
      for (int64_t t = 0; t < nr; ++t) win.push_back({rows[r0 + t].begin - lo, rows[r0 + t].end - lo});
      eigen_rows(b, in, keys, (int64_t)r0, nr, win, ref);
    }
    i = j;
  }
  return ref;
}

// encode_elements(fp8) against float_to_fp8_bits on `values` (bulk and unaligned tail)
int64_t fp8_bulk_mismatches(const std::vector<float>& values, Fp8Flavor fl) {
  std::vector<uint8_t> got(values.size());
  encode_elements(DType::fp8, fl, values.data(), (int64_t)values.size(), got.data(), 0);
  int64_t bad = 0;
  for (size_t i = 0; i < values.size(); ++i) bad += got[i] != float_to_fp8_bits(values[i], fl);
  return bad;
}

float float_of_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("inputs: deterministic per seed and thread count", "[inputs]") {
  BatchShape s;
  s.context_query = {{5, 2}, {40, 2}, {0, 2}};
  s.block_size = 4;
  s.spare_blocks = 3;
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const Inputs a = generate_inputs(b, rows, 1);
  const Inputs c = generate_inputs(b, rows, 3);
  CHECK(a.q.bytes == c.q.bytes);
  CHECK(a.kv.bytes == c.kv.bytes);
  BatchShape s2 = s;
  s2.seed = 2;
  const Batch b2 = make_batch(s2);
  const Inputs d = generate_inputs(b2, oracle_windows(b2));
  CHECK(a.q.bytes != d.q.bytes);
}

TEST_CASE("inputs: bit for bit the scalar generator (one Rng call per value)", "[inputs]") {
  // q and KV as first written: per chunk an Rng(seed ^ C*(chunk+1), stream), one
  // uniform_pm1() per value in order, KV slots of 256 and q rows of 64 per chunk
  auto chunk_rng = [](uint64_t seed, RngStream stream, int64_t chunk) {
    return Rng(seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(chunk + 1)), stream);
  };
  BatchShape s;
  s.context_query = {{5, 2}, {400, 2}, {0, 2}, {1000, 3}};
  s.block_size = 4;
  s.spare_blocks = 70;  // unused slots: NaN
  s.heads = 16;
  SECTION("bf16") {}
  SECTION("fp16") { s.model_dtype = s.kv_dtype = s.q_dtype = DType::fp16; }
  SECTION("fp8 KV e4m3fn") {
    s.kv_dtype = DType::fp8;
    s.kv_scale = 0.5;
  }
  SECTION("fp8 q and KV e4m3fnuz") {
    s.arch = Arch::gfx942;
    s.kv_dtype = s.q_dtype = DType::fp8;
    s.kv_scale = 0.25;
  }
  s.seed = 12345;
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const Inputs in = generate_inputs(b, rows, 2);
  const int64_t D = in.head_dim, H = in.num_heads, Q = in.num_rows * H * D;
  const Fp8Flavor fl = b.fp8_flavor();
  // q
  std::vector<float> qv((size_t)Q);
  for (int64_t c = 0; c * 64 < in.num_rows; ++c) {
    Rng rng = chunk_rng(b.seed, kStreamQ, c);
    for (int64_t e = c * 64 * H * D; e < std::min(Q, (c + 1) * 64 * H * D); ++e)
      qv[(size_t)e] = round_to_dtype(kQAmplitude * rng.uniform_pm1(), b.model.dtype);
  }
  StorageBytes qbytes((size_t)(Q * dtype_bytes(in.q.dtype)), 0);
  float qscale = 1.0f;
  if (in.q.dtype == DType::fp8) {
    float amax = 0;
    for (float v : qv) amax = std::max(amax, std::fabs(v));
    qscale = amax > 0 ? amax / fp8_max(fl) : 1.0f;
    for (int64_t e = 0; e < Q; ++e) qbytes[(size_t)e] = float_to_fp8_bits(qv[(size_t)e] * (1.0f / qscale), fl);
  } else {
    encode_elements(in.q.dtype, fl, qv.data(), Q, qbytes.data(), 0);
  }
  CHECK(in.q.scale == qscale);
  CHECK((in.q.bytes == qbytes));
  // KV
  std::vector<uint8_t> used((size_t)in.num_slots, 0);
  for (const RowWindow& w : rows)
    if (w.kind != MaskKind::padding)
      for (int64_t p = 0; p < b.requests[w.request].seq_len(); ++p) used[(size_t)kv_slot_of(b, w.request, p)] = 1;
  StorageBytes kvbytes((size_t)(in.num_slots * D * dtype_bytes(in.kv.dtype)), 0);
  std::vector<float> vals((size_t)D);
  for (int64_t c = 0; c * 256 < in.num_slots; ++c) {
    Rng rng = chunk_rng(b.seed, kStreamKv, c);
    for (int64_t slot = c * 256; slot < std::min(in.num_slots, (c + 1) * 256); ++slot) {
      for (float& v : vals) v = kKvAmplitude * rng.uniform_pm1();
      if (!used[(size_t)slot]) std::fill(vals.begin(), vals.end(), std::nanf(""));
      else if (in.kv.dtype == DType::fp8)
        for (float& v : vals) v *= 1.0f / (float)b.kv_cache.scale;
      encode_elements(in.kv.dtype, fl, vals.data(), D, kvbytes.data(), slot * D);
    }
  }
  CHECK((in.kv.bytes == kvbytes));
  // every generator path the CPU has gives the bytes just checked (in: the default path)
  for (const GeneratorIsa isa : {GeneratorIsa::scalar, GeneratorIsa::avx2, GeneratorIsa::avx512}) {
    if (!generator_isa_available(isa)) continue;
    INFO("generator isa " << static_cast<int>(isa));
    set_generator_isa_for_testing(isa);
    const Inputs other = generate_inputs(b, rows, 2);
    set_generator_isa_for_testing(std::nullopt);
    CHECK(other.q.scale == in.q.scale);
    CHECK((other.q.bytes == in.q.bytes));
    CHECK((other.kv.bytes == in.kv.bytes));
  }
}

TEST_CASE("inputs: bulk decode equals the scalar codecs for every bf16, fp16 and fp8 code", "[inputs]") {
  auto bits_of = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  };
  // every fp16 code, in bulk (the vector path) and at every misalignment of the tail
  std::vector<uint16_t> h(65536 + 40);
  for (size_t i = 0; i < h.size(); ++i) h[i] = (uint16_t)(i * 40503u);  // a permutation of the codes, then some
  for (uint32_t c = 0; c < 65536; ++c) h[c] = (uint16_t)c;
  std::vector<float> out(h.size());
  // the same codes as bf16: the bits shifted up
  for (int64_t first : {0, 1, 7}) {
    const int64_t n = (int64_t)h.size() - first;
    decode_elements(DType::bf16, Fp8Flavor::e4m3fn, h.data(), first, n, 1.0f, out.data());
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += bits_of(out[i]) != (uint32_t)h[first + i] << 16;
    CHECK(bad == 0);
  }
  for (int64_t first : {0, 1, 7}) {
    const int64_t n = (int64_t)h.size() - first;
    decode_elements(DType::fp16, Fp8Flavor::e4m3fn, h.data(), first, n, 1.0f, out.data());
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += bits_of(out[i]) != bits_of(fp16_bits_to_float(h[first + i]));
    CHECK(bad == 0);
  }
  // every fp8 code of both flavours, with scales including 1, a power of two and neither
  std::vector<uint8_t> q(256 * 3 + 13);
  for (size_t i = 0; i < q.size(); ++i) q[i] = (uint8_t)(i * 167u);
  for (Fp8Flavor fl : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz})
    for (float scale : {1.0f, 0.25f, 0.0123f, 3.0e30f})
      for (int64_t first : {0, 3}) {
        const int64_t n = (int64_t)q.size() - first;
        decode_elements(DType::fp8, fl, q.data(), first, n, scale, out.data());
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) bad += bits_of(out[i]) != bits_of(fp8_bits_to_float(q[first + i], fl) * scale);
        CHECK(bad == 0);
      }
}

TEST_CASE("inputs: bulk bf16 encode equals float_to_bf16_bits (a stride over every float, ties, specials)", "[inputs]") {
  std::vector<float> vals;
  auto push_bits = [&](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    vals.push_back(f);
  };
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) push_bits((uint32_t)u);
  for (uint32_t hi : {0x0000u, 0x3F80u, 0x3F81u, 0x7F7Fu, 0x7F80u, 0x7FC0u, 0x8000u, 0xBF80u, 0xFF7Fu, 0xFF80u, 0xFFC0u})
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) push_bits(hi << 16 | lo);
  std::vector<uint16_t> got(vals.size());
  encode_elements(DType::bf16, Fp8Flavor::e4m3fn, vals.data(), (int64_t)vals.size(), got.data(), 0);
  int64_t bad = 0;
  for (size_t i = 0; i < vals.size(); ++i) bad += got[i] != float_to_bf16_bits(vals[i]);
  CHECK(bad == 0);
}

TEST_CASE("inputs: bulk fp8 encode equals float_to_fp8_bits (every exponent, rounding boundaries, specials)", "[inputs]") {
  std::vector<float> v;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e) {
      // the 3 kept mantissa bits, the round bit and the sticky bits at every
      // position a subnormal shift can put them (shift 20 .. 31)
      for (uint32_t top = 0; top < 64; ++top)
        for (uint32_t low : {0u, 1u, 0x3FFFu, 0x4000u, 0x7FFFu, 0x8000u, 0xFFFFu, 0x1FFFFu, 0x20000u, 0x3FFFFu})
          v.push_back(float_of_bits(sign | (e << 23) | ((top << 17) & 0x7FFFFFu) | (low & 0x1FFFFu)));
      for (uint32_t k = 0; k < 23; ++k) {  // single bits and their neighbours
        const uint32_t m = 1u << k;
        for (uint32_t x : {m, m - 1, m + 1}) v.push_back(float_of_bits(sign | (e << 23) | (x & 0x7FFFFFu)));
      }
    }
  for (uint32_t u = 0; u < 0xFFFFFFFFu - 9973u; u += 9973u) v.push_back(float_of_bits(u));  // a sweep of all patterns
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(-std::numeric_limits<float>::quiet_NaN());
  v.push_back(float_of_bits(0x7F800001u));  // signalling NaN
  for (Fp8Flavor fl : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz}) {
    CHECK(fp8_bulk_mismatches(v, fl) == 0);
    std::vector<float> shifted(v.begin() + 5, v.end());  // another alignment of the 16-lane blocks
    CHECK(fp8_bulk_mismatches(shifted, fl) == 0);
  }
}

// Every float (2^32 patterns, both flavours): about a minute, so hidden; run with
// `unit_tests "[.exhaustive]"`.
TEST_CASE("inputs: bulk fp8 encode equals float_to_fp8_bits for every float", "[.exhaustive]") {
  for (Fp8Flavor fl : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz}) {
    int64_t bad = 0;
    std::vector<float> v(1u << 24);
    for (uint64_t base = 0; base < (uint64_t(1) << 32); base += v.size()) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = float_of_bits((uint32_t)(base + i));
      bad += fp8_bulk_mismatches(v, fl);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("inputs: shapes, row map, NaN in unused slots, poisoned block table", "[inputs]") {
  BatchShape s;
  s.context_query = {{5, 2}, {40, 2}, {0, 2}};
  s.num_padding = 1;
  s.heads = 8;
  s.block_size = 16;
  s.spare_blocks = 2;
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const Inputs in = generate_inputs(b, rows);
  REQUIRE(in.num_rows == (int64_t)rows.size());
  CHECK(in.num_rows == 8);  // 6 tokens + the padding request's K = 2 rows
  CHECK(in.q.num_elements() == in.num_rows * 8 * 576);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(in.rows[i].request == rows[i].request);
    CHECK(in.rows[i].token == rows[i].token);
    CHECK(in.rows[i].padding == (rows[i].kind == MaskKind::padding));
  }
  // q: finite, nonzero, within the documented amplitude, not constant
  double qmax = 0, qsum = 0;
  for (int64_t e = 0; e < in.q.num_elements(); ++e) {
    const float v = in.q.decode_one(e);
    REQUIRE(std::isfinite(v));
    qmax = std::max(qmax, (double)std::fabs(v));
    qsum += std::fabs(v);
  }
  CHECK(qmax <= kQAmplitude);
  CHECK(qsum / in.q.num_elements() > 0.5);
  // slots: used = Σ seq_len (no sharing), each used slot finite, others all NaN bits
  REQUIRE(in.num_slots == b.kv_cache.num_blocks * 16);
  CHECK(in.used_slots == 7 + 42 + 2);
  std::vector<char> used((size_t)in.num_slots, 0);
  for (size_t r = 0; r < b.requests.size(); ++r)
    for (int64_t j = 0; j < b.requests[r].seq_len(); ++j) used[kv_slot_of(b, (int)r, j)] = 1;
  const uint16_t* kv = static_cast<const uint16_t*>(in.kv.data());
  for (int64_t slot = 0; slot < in.num_slots; ++slot)
    for (int64_t d = 0; d < in.head_dim; d += 97) {
      if (used[slot])
        CHECK(std::isfinite(bf16_bits_to_float(kv[slot * in.head_dim + d])));
      else
        CHECK(kv[slot * in.head_dim + d] == 0x7FC0);
    }
  // dense block table: width = max list length; entries past ceil(seq/Kb) poisoned
  CHECK(in.block_table_width == 3);  // 42 tokens / 16 -> 3 blocks
  CHECK(in.padded_block_table[0 * 3 + 0] == b.kv_cache.block_table[0][0]);
  CHECK(in.padded_block_table[0 * 3 + 1] == kBlockTablePoison);
  CHECK(in.padded_block_table[1 * 3 + 2] == b.kv_cache.block_table[1][2]);
  CHECK(in.padded_block_table[3 * 3 + 0] == kBlockTablePoison);  // padding request
}

TEST_CASE("inputs: fp8 q quantized per tensor, fp8 KV with the flavour's NaN", "[inputs]") {
  for (Arch arch : {Arch::gfx942, Arch::gfx950}) {
    const Fp8Flavor f = fp8_flavor_for(arch);
    INFO(to_string(f));
    BatchShape s;
    s.context_query = {{9, 1}, {3, 1}};
    s.heads = 16;
    s.arch = arch;
    s.kv_dtype = DType::fp8;
    s.q_dtype = DType::fp8;
    s.kv_scale = 0.25;
    s.spare_blocks = 4;
    const Batch b = make_batch(s);
    const Inputs in = generate_inputs(b);
    CHECK(in.q.dtype == DType::fp8);
    CHECK(in.q.fp8_flavor == f);
    // q_scale = amax / fp8 max: the largest magnitude lands exactly on the max code
    const uint8_t max_code = f == Fp8Flavor::e4m3fn ? 0x7E : 0x7F;
    bool has_max = false;
    double qmax = 0;
    for (uint8_t c : in.q.bytes) has_max |= (c & 0x7F) == max_code;
    for (int64_t e = 0; e < in.q.num_elements(); ++e) qmax = std::max(qmax, (double)std::fabs(in.q.decode_one(e)));
    CHECK(has_max);
    CHECK(qmax == Approx(in.q.scale * fp8_max(f)));
    CHECK(qmax <= kQAmplitude * 1.0001);
    CHECK(qmax > 0.9 * kQAmplitude);
    // KV: scale·decoded within the generated range; unused slots carry the NaN code
    CHECK(in.kv.scale == 0.25f);
    int64_t nan_codes = 0;
    for (int64_t e = 0; e < in.kv.num_elements(); ++e) {
      const float v = in.kv.decode_one(e);
      if (std::isnan(v)) {
        ++nan_codes;
        CHECK(in.kv.bytes[e] == (f == Fp8Flavor::e4m3fn ? 0x7F : 0x80));
      } else {
        CHECK(std::fabs(v) <= kKvAmplitude * 1.07);  // one e4m3 rounding step
      }
    }
    CHECK(nan_codes == 4 * in.head_dim);
  }
}

TEST_CASE("reference equals a naive double implementation: causal", "[reference]") {
  BatchShape s;
  s.context_query = {{0, 3}, {1, 3}, {37, 3}, {130, 3}};
  s.heads = 4;
  s.num_padding = 1;
  s.block_size = 16;
  const auto [max_out, max_lse] = reference_vs_naive(make_batch(s));
  CHECK(max_out < 2e-6);
  CHECK(max_lse < 2e-5);
}

TEST_CASE("reference equals a naive double implementation: non-causal, fp16, fp8 KV", "[reference]") {
  BatchShape s;
  s.context_query = {{3, 4}, {60, 4}};
  s.heads = 2;
  s.causal = false;
  SECTION("fp16") {
    s.model_dtype = s.kv_dtype = s.q_dtype = DType::fp16;
  }
  SECTION("fp8 q and KV, gfx942") {
    s.arch = Arch::gfx942;
    s.kv_dtype = s.q_dtype = DType::fp8;
    s.kv_scale = 0.5;
  }
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  CHECK(rows[0].length() == 7);  // non-causal: the whole block
  const auto [max_out, max_lse] = reference_vs_naive(b);
  CHECK(max_out < 2e-6);
  CHECK(max_lse < 2e-5);
}

TEST_CASE("reference equals a naive double implementation: sparse, rope-free", "[reference]") {
  BatchShape s;
  s.context_query = {{10, 2}, {50, 1}};
  s.heads = 4;
  Batch b = make_batch(s);
  SparseSpec sp;
  sp.topk = 4;
  sp.geometry = SparseGeometry::rope_free;
  sp.random_indices = false;
  sp.indices = {{0, 3, 7, 10}, {1, 11}, {49, 0, 25, 50}};
  b.sparse = sp;
  const auto rows = oracle_windows(b);
  REQUIRE(rows[1].sparse_positions.size() == 2);
  const Inputs in = generate_inputs(b, rows);
  CHECK(in.head_dim == 512);
  const auto [max_out, max_lse] = reference_vs_naive(b);
  CHECK(max_out < 2e-6);
  CHECK(max_lse < 2e-5);
}

TEST_CASE("reference: bit for bit the plain Eigen formulation (GEMM tails, GEMV shapes, threads)", "[reference]") {
  struct Variant {
    const char* name;
    BatchShape s;
  };
  std::vector<Variant> vs;
  {
    BatchShape s;  // windows of 1 and a few keys (GEMV, small GEMMs), key counts of every residue mod 8
    s.context_query = {{0, 1}, {1, 1}, {2, 2}, {6, 3}, {9, 1}, {13, 4}, {21, 2}, {250, 8}, {517, 5}, {1003, 8}};
    s.heads = 16;
    s.num_padding = 2;
    s.block_size = 16;
    s.spare_blocks = 3;
    vs.push_back({"bf16 h16", s});
    s.heads = 1;
    vs.push_back({"one head", s});
    s.heads = 3;
    s.model_dtype = s.kv_dtype = s.q_dtype = DType::fp16;
    vs.push_back({"fp16 h3", s});
  }
  {
    BatchShape s;  // long windows: several row blocks of Eigen's blocking, depth panels in P·V
    s.context_query = {{2601, 8}, {3999, 3}, {700, 1}};
    s.heads = 16;
    s.kv_dtype = DType::fp8;
    s.arch = Arch::gfx942;
    s.kv_scale = 0.25;
    vs.push_back({"fp8 KV long", s});
    s.causal = false;
    s.q_dtype = DType::fp8;
    s.heads = 12;
    vs.push_back({"fp8 q+KV non-causal h12", s});
  }
  {
    BatchShape s;  // 128 heads: 1024 rows per GEMM; 20 heads: a row count not a multiple of 4
    s.context_query = {{300, 8}, {77, 2}};
    s.heads = 128;
    vs.push_back({"h128", s});
    s.heads = 20;
    s.context_query = {{95, 7}, {1500, 3}};
    vs.push_back({"h20", s});
  }
  for (const Variant& v : vs) {
    INFO(v.name);
    const Batch b = make_batch(v.s);
    const auto rows = oracle_windows(b);
    const Inputs in = generate_inputs(b, rows);
    const ReferenceOutput want = eigen_reference(b, rows, in);
    for (int threads : {1, 2}) {
      INFO("threads " << threads);
      const ReferenceOutput got = compute_reference(b, rows, in, threads);
      CHECK(same_bits(got.out, want.out));
      CHECK(same_bits(got.lse, want.lse));
    }
  }
}

TEST_CASE("reference: bit for bit the plain Eigen formulation, sparse rows", "[reference]") {
  BatchShape s;
  s.context_query = {{10, 2}, {50, 1}, {900, 1}};
  s.heads = 16;
  Batch b = make_batch(s);
  SparseSpec sp;
  sp.topk = 600;
  sp.random_indices = true;
  b.sparse = sp;
  const auto rows = oracle_windows(b);
  const Inputs in = generate_inputs(b, rows);
  const ReferenceOutput want = eigen_reference(b, rows, in);
  const ReferenceOutput got = compute_reference(b, rows, in, 2);
  CHECK(same_bits(got.out, want.out));
  CHECK(same_bits(got.lse, want.lse));
}

TEST_CASE("layout: head padding and head->batch fold round-trip", "[inputs]") {
  BatchShape s;
  s.context_query = {{4, 2}, {7, 2}};
  SECTION("12 heads, tile-and-slice to 16") { s.heads = 12; }
  SECTION("4 heads, repeat_interleave to 16") { s.heads = 4; }
  SECTION("32 heads folded 2x16") { s.heads = 32; }
  const Batch b = make_batch(s);
  const Inputs in = generate_inputs(b);
  const HeadPadding hp = head_padding(s.heads);
  KernelView view;
  view.fold_ratio = hp.padded_heads / 16;
  view.heads = 16;
  const ViewLayout l = make_view_layout(in.num_rows, view, hp, 2);
  const EncodedTensor kq = build_kernel_q(in, l, view);
  REQUIRE(kq.num_elements() == l.view_rows * 16 * 576);
  const uint16_t* src = static_cast<const uint16_t*>(in.q.data());
  const uint16_t* dst = static_cast<const uint16_t*>(kq.data());
  for (int64_t row = 0; row < in.num_rows; ++row)
    for (int p = 0; p < hp.padded_heads; ++p) {
      // fold (docs/stacks/vllm-rocm-aiter.md §A5.1): q row (b*k+g)*L+t holds padded heads [16g, 16g+16)
      const int64_t req = row / 2, t = row % 2, g = p / 16;
      const int64_t vrow = (req * view.fold_ratio + g) * 2 + t;
      for (int d = 0; d < 576; d += 115)
        REQUIRE(dst[(vrow * 16 + p % 16) * 576 + d] == src[(row * s.heads + hp.source[p]) * 576 + d]);
    }
  // outputs: write each view (row, head) a value naming the user (row, head) it must become
  std::vector<uint16_t> vout((size_t)(l.view_rows * 16 * 512), 0x7FC0);
  std::vector<float> vlse((size_t)(l.view_rows * 16), NAN);
  for (int64_t row = 0; row < in.num_rows; ++row)
    for (int h = 0; h < s.heads; ++h) {
      const int p = hp.unpad[h];
      const int64_t at = l.view_row(row, p) * 16 + l.view_head(p);
      vout[at * 512 + 5] = float_to_bf16_bits((float)(row * 32 + h));
      vlse[at] = (float)(row * 32 + h);
    }
  const auto uout = unlayout_out(l, DType::bf16, vout.data(), 512);
  const auto ulse = unlayout_lse(l, vlse.data());
  for (int64_t row = 0; row < in.num_rows; ++row)
    for (int h = 0; h < s.heads; ++h) {
      CHECK(uout[(row * s.heads + h) * 512 + 5] == (float)(row * 32 + h));
      CHECK(std::isnan(uout[(row * s.heads + h) * 512 + 6]));  // poison stays visible
      CHECK(ulse[row * s.heads + h] == (float)(row * 32 + h));
    }
}

TEST_CASE("layout: view inconsistent with the padding map is rejected", "[inputs]") {
  const HeadPadding hp = head_padding(32);
  KernelView view;
  view.heads = 16;
  view.fold_ratio = 1;
  CHECK_THROWS_AS(make_view_layout(4, view, hp, 1), std::invalid_argument);
  view.fold_ratio = 2;
  CHECK_THROWS_AS(make_view_layout(5, view, hp, 2), std::invalid_argument);  // rows not a multiple of L
  CHECK_NOTHROW(make_view_layout(4, view, hp, 2));
}

TEST_CASE("compare: tolerances, NaN positions, unwritten rows, cos diff, LSE", "[compare]") {
  BatchShape s;
  s.context_query = {{20, 2}, {33, 2}};  // + 1 padding request: uniform MTP gives it 2 rows
  s.heads = 2;
  s.num_padding = 1;
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const Inputs in = generate_inputs(b, rows);
  const ReferenceOutput ref = compute_reference(b, rows, in);
  CompareOptions opt;
  opt.tol = default_tolerance(DType::bf16, DType::bf16, DType::bf16);
  std::vector<float> out(ref.out.size()), lse = ref.lse;
  for (size_t i = 0; i < out.size(); ++i) out[i] = round_to_dtype(ref.out[i], DType::bf16);
  const int64_t H = 2, V = 512;

  SECTION("exact copy passes; padding rows (NaN) are skipped") {
    const CompareReport r = compare_outputs(rows, ref, out.data(), lse.data(), opt);
    CHECK(r.passed);
    CHECK(r.max_abs_err == 0);
    CHECK(r.skipped_padding_rows == 2);
    CHECK(r.compared_rows == 4);
    CHECK(r.lse_compared);
  }
  SECTION("element error beyond atol and rtol fails and is located") {
    const int64_t at = (1 * H + 1) * V + 7;  // row 1 (request 0, token 1), head 1, dim 7
    out[at] += 0.05f;
    const CompareReport r = compare_outputs(rows, ref, out.data(), lse.data(), opt);
    CHECK_FALSE(r.passed);
    CHECK(r.failing_elements == 1);
    CHECK(r.max_abs_at.request == 0);
    CHECK(r.max_abs_at.token == 1);
    CHECK(r.max_abs_at.head == 1);
    CHECK(r.max_abs_at.dim == 7);
    REQUIRE(r.failing.size() == 1);
    CHECK(r.failing[0].head == 1);
  }
  SECTION("error within atol passes") {
    out[3] += 5e-4f;
    CHECK(compare_outputs(rows, ref, out.data(), lse.data(), opt).passed);
  }
  SECTION("a uniform 1% scale passes per element but fails the cos diff") {
    for (float& x : out) x *= 1.01f;
    const CompareReport r = compare_outputs(rows, ref, out.data(), lse.data(), opt);
    CHECK(r.failing_elements == 0);
    CHECK(r.cos_diff > opt.tol.cos_tol);
    CHECK_FALSE(r.passed);
  }
  SECTION("NaN where the reference is finite fails; an all-NaN (row, head) is unwritten") {
    out[(2 * H + 0) * V + 3] = NAN;
    for (int64_t d = 0; d < V; ++d) out[(0 * H + 1) * V + d] = NAN;
    const CompareReport r = compare_outputs(rows, ref, out.data(), lse.data(), opt);
    CHECK_FALSE(r.passed);
    CHECK(r.nonfinite_mismatches == V + 1);
    CHECK(r.unwritten_row_heads == 1);
    REQUIRE(r.unwritten.size() == 1);
    CHECK(r.unwritten[0].request == 0);
    CHECK(r.unwritten[0].token == 0);
    CHECK(r.unwritten[0].head == 1);
    REQUIRE(r.failing.size() == 1);
    CHECK(r.failing[0].request == 1);
  }
  SECTION("LSE beyond tolerance fails") {
    lse[1] += 0.01f;
    const CompareReport r = compare_outputs(rows, ref, out.data(), lse.data(), opt);
    CHECK_FALSE(r.passed);
    CHECK(r.lse_failing == 1);
    CHECK(compare_outputs(rows, ref, out.data(), nullptr, opt).passed);  // no LSE from the kernel
  }
}

TEST_CASE("compare: default tolerance table (docs/design.md §6)", "[compare]") {
  Tolerance t = default_tolerance(DType::bf16, DType::bf16, DType::bf16);
  CHECK(t.atol == 8e-4);
  CHECK(t.rtol == 2.0 / 128);
  CHECK(t.cos_tol == 5e-6);
  t = default_tolerance(DType::fp16, DType::fp16, DType::fp16);
  CHECK(t.atol == 1e-3);
  CHECK(t.rtol == 2.0 / 1024);
  t = default_tolerance(DType::bf16, DType::fp8, DType::bf16);
  CHECK(t.atol == 1e-2);
  CHECK(t.rtol == 1.0 / 8);
  CHECK(t.cos_tol == 3e-2);
}

TEST_CASE("default LSE tolerance: fp32 reordering's, wider only for fp8 q with fp8 KV (fp8 MMA accumulation)",
          "[unit][compare]") {
  const LseTolerance plain = default_lse_tolerance(DType::bf16, DType::bf16);
  CHECK(plain.atol == 1e-5);
  CHECK(plain.rtol == 8.0 / 65536);
  const LseTolerance kv8 = default_lse_tolerance(DType::fp8, DType::bf16);  // bf16 q: converted operands, fp32 sums
  CHECK(kv8.atol == 1e-5);
  const LseTolerance both8 = default_lse_tolerance(DType::fp8, DType::fp8);
  CHECK(both8.atol == 2e-3);
  CHECK(both8.rtol == 2e-4);
}
