// core/gemm: every Isa this CPU has, bit for bit Eigen's products (the reference's and
// the CPU executor's Q·Kᵀ and P·V), over shapes that reach every path: GEMV and
// coefficient-based shapes (Eigen itself), row counts of every residue mod 8 and 16
// (partial micro panels, Eigen's tail rows), several row blocks and depth panels,
// accumulate, and the executor's kept B' reused across calls.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "core/gemm.hpp"

namespace {

using namespace mlactl;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMatrix random_matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  RowMatrix m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = u(rng);
  return m;
}

bool same_bits(const RowMatrix& a, const RowMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

struct Shape {
  int64_t M, N, K;
};

struct IsaScope {
  explicit IsaScope(gemm::Isa isa) { gemm::set_isa_for_testing(isa); }
  ~IsaScope() { gemm::set_isa_for_testing(std::nullopt); }
};

}  // namespace

TEST_CASE("gemm: every available Isa bit for bit Eigen's products", "[gemm]") {
  const std::vector<Shape> shapes = {
      {1, 64, 576},    {64, 1, 576},   {2, 3, 4},       {16, 128, 576},  {128, 128, 576}, {37, 131, 576},
      {128, 512, 128}, {24, 512, 300}, {512, 512, 1030}, {300, 77, 576},  {17, 519, 33},   {1024, 128, 576},
      {256, 512, 4096}, {9, 1000, 513}, {48, 23, 7},      {800, 300, 2000}};
  std::vector<gemm::Isa> isas;
  for (gemm::Isa isa : {gemm::Isa::eigen, gemm::Isa::avx, gemm::Isa::avx512})
    if (gemm::isa_available(isa)) isas.push_back(isa);
  INFO("active: " << gemm::to_string(gemm::active_isa()));
  CHECK(gemm::isa_available(gemm::active_isa()));
  std::mt19937 rng(2026);
  for (const Shape& sh : shapes) {
    const RowMatrix A = random_matrix(sh.M, sh.K, rng);
    const RowMatrix Xt = random_matrix(sh.N, sh.K, rng);  // BT: B = Xtᵀ
    const RowMatrix X = random_matrix(sh.K, sh.N, rng);
    const RowMatrix C0 = random_matrix(sh.M, sh.N, rng);
    RowMatrix want_t(sh.M, sh.N), want(sh.M, sh.N), want_acc = C0;
    want_t.noalias() = A * Xt.transpose();
    want.noalias() = A * X;
    want_acc.noalias() += A * X;
    for (gemm::Isa isa : isas) {
      IsaScope scope(isa);
      INFO(gemm::to_string(isa) << " M " << sh.M << " N " << sh.N << " K " << sh.K);
      gemm::Scratch s;
      RowMatrix got(sh.M, sh.N);
      gemm::product<true>(A.data(), sh.K, Xt.data(), sh.K, got.data(), sh.N, sh.M, sh.N, sh.K, false, s);
      CHECK(same_bits(got, want_t));
      gemm::product<false>(A.data(), sh.K, X.data(), sh.N, got.data(), sh.N, sh.M, sh.N, sh.K, false, s);
      CHECK(same_bits(got, want));
      RowMatrix acc = C0;
      gemm::product<false>(A.data(), sh.K, X.data(), sh.N, acc.data(), sh.N, sh.M, sh.N, sh.K, true, s);
      CHECK(same_bits(acc, want_acc));
      // the executor's kept B' (its queries): a second call on the same left operand
      // with another right operand reuses the packing, and clearing b_valid repacks
      gemm::Scratch kept;
      kept.keep_b = true;
      const RowMatrix Xt2 = random_matrix(sh.N, sh.K, rng);
      RowMatrix want2(sh.M, sh.N);
      want2.noalias() = A * Xt2.transpose();
      gemm::product<true>(A.data(), sh.K, Xt.data(), sh.K, got.data(), sh.N, sh.M, sh.N, sh.K, false, kept);
      CHECK(same_bits(got, want_t));
      gemm::product<true>(A.data(), sh.K, Xt2.data(), sh.K, got.data(), sh.N, sh.M, sh.N, sh.K, false, kept);
      CHECK(same_bits(got, want2));
      RowMatrix A2 = A;
      A2(0, 0) += 1.0f;
      RowMatrix want3(sh.M, sh.N);
      want3.noalias() = A2 * Xt2.transpose();
      kept.b_valid = false;
      gemm::product<true>(A2.data(), sh.K, Xt2.data(), sh.K, got.data(), sh.N, sh.M, sh.N, sh.K, false, kept);
      CHECK(same_bits(got, want3));
    }
  }
}

TEST_CASE("gemm: an Isa the CPU lacks is not selected", "[gemm]") {
  CHECK(gemm::isa_available(gemm::Isa::eigen));
  for (gemm::Isa isa : {gemm::Isa::avx, gemm::Isa::avx512}) {
    gemm::set_isa_for_testing(isa);
    CHECK(gemm::isa_available(gemm::active_isa()));
    CHECK((gemm::active_isa() == isa) == gemm::isa_available(isa));
  }
  gemm::set_isa_for_testing(std::nullopt);
}

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// x with its mantissa cut to `keep` bits (bf16: 7, fp16: 10), rounding toward zero
float truncate_mantissa(float x, int keep) {
  return bits_to_float(float_bits(x) & ~((1u << (23 - keep)) - 1u));
}

gemm::OperandBits bits_of(std::initializer_list<float> xs) {
  std::vector<float> v(xs);
  return gemm::scan_operand(v.data(), v.size());
}

struct FmaScope {
  explicit FmaScope(bool allowed) { gemm::set_exact_fma_for_testing(allowed); }
  ~FmaScope() { gemm::set_exact_fma_for_testing(std::nullopt); }
};

struct Checked {
  int64_t fused = 0, unfused = 0;  // block counts of the last Isa with an FMA kernel
  bool some_inf = false, some_subnormal = false;  // in Eigen's A·Xtᵀ: the edge was reached
};

// A's and B's values from `make_a` / `make_b` (per element index), products checked
// bit for bit against Eigen for every Isa.
template <class MakeA, class MakeB>
Checked check_products(int64_t M, int64_t N, int64_t K, MakeA make_a, MakeB make_b) {
  RowMatrix A(M, K), Xt(N, K), X(K, N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) A(i, k) = make_a(i * K + k);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) Xt(j, k) = make_b(j * K + k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) X(k, j) = make_b(k * N + j);
  RowMatrix want_t(M, N), want(M, N);
  want_t.noalias() = A * Xt.transpose();
  want.noalias() = A * X;
  Checked blocks;
  for (int64_t i = 0; i < want_t.size(); ++i) {
    blocks.some_inf |= std::isinf(want_t.data()[i]);
    blocks.some_subnormal |= std::fpclassify(want_t.data()[i]) == FP_SUBNORMAL;
  }
  for (gemm::Isa isa : {gemm::Isa::avx, gemm::Isa::avx512}) {
    if (!gemm::isa_available(isa)) continue;
    IsaScope scope(isa);
    INFO(gemm::to_string(isa) << " M " << M << " N " << N << " K " << K);
    gemm::Scratch s;
    RowMatrix got(M, N);
    gemm::product<true>(A.data(), K, Xt.data(), K, got.data(), N, M, N, K, false, s);
    CHECK(same_bits(got, want_t));
    gemm::product<false>(A.data(), K, X.data(), N, got.data(), N, M, N, K, false, s);
    CHECK(same_bits(got, want));
    if (gemm::exact_fma_available()) {
      blocks.fused = s.fused_blocks;
      blocks.unfused = s.unfused_blocks;
    }
  }
  return blocks;
}

}  // namespace

TEST_CASE("gemm: products_exact admits exactly the operand pairs whose products round to themselves", "[gemm]") {
  const float one = 1.0f;
  // bf16 and fp16 values: widths 8 and 11, both pairs exact
  CHECK(gemm::products_exact(bits_of({1.5f, -0.375f, 3.0f}), bits_of({-1.0078125f, 2.0f})));
  CHECK(gemm::products_exact(bits_of({1.0f + 1.0f / 1024, 65504.0f}), bits_of({1.0f + 1.0f / 1024, -0.5f})));
  // 21 bits against bf16's 8: refused; 23 bits against powers of two: exact. (The test
  // bounds widths by their sum, one more than a product may need: 24 bits times a
  // power of two is exact but refused.)
  CHECK_FALSE(gemm::products_exact(bits_of({1.0f + 1.0f / (1 << 20)}), bits_of({1.0078125f})));
  CHECK(gemm::products_exact(bits_of({1.0f + 1.0f / (1 << 22)}), bits_of({0.25f, -4.0f})));
  CHECK(gemm::products_exact(bits_of({1.0f + 1.0f / (1 << 20)}), bits_of({1.5f})));
  // 12 + 13 bits: one too many
  CHECK_FALSE(gemm::products_exact(bits_of({1.0f + 1.0f / 2048}), bits_of({1.0f + 1.0f / 4096})));
  // Inf and NaN: never
  CHECK_FALSE(gemm::products_exact(bits_of({one, std::numeric_limits<float>::infinity()}), bits_of({one})));
  CHECK_FALSE(gemm::products_exact(bits_of({one}), bits_of({std::numeric_limits<float>::quiet_NaN()})));
  // zeros only: every product is ±0
  CHECK(gemm::products_exact(bits_of({0.0f, -0.0f}), bits_of({1.0f + 1.0f / (1 << 22), 3e38f})));
  // large: |a·b| < 2^128 iff the exponent fields sum to at most 380
  CHECK(gemm::products_exact(bits_of({std::ldexp(1.9921875f, 63)}), bits_of({std::ldexp(1.9921875f, 63)})));
  CHECK_FALSE(gemm::products_exact(bits_of({std::ldexp(1.0f, 64)}), bits_of({std::ldexp(1.0f, 63)})));
  // small: 2^-75 · 2^-74 = 2^-149 (the least subnormal) is exact; 2^-75 · 2^-75 is not
  CHECK(gemm::products_exact(bits_of({std::ldexp(1.0f, -75)}), bits_of({std::ldexp(1.0f, -74)})));
  CHECK_FALSE(gemm::products_exact(bits_of({std::ldexp(1.0f, -75)}), bits_of({std::ldexp(1.0f, -75)})));
  // a bf16 subnormal (lowest bit 2^-133) against 2^-16: lowest bit 2^-149; 1.5 · 2^-128
  // (lowest bit 2^-129, 2 bits) against 1.5 · 2^-22: 1.125 · 2^-149, not representable
  CHECK(gemm::products_exact(bits_of({std::ldexp(1.0f, -133), std::ldexp(1.5f, -128)}), bits_of({std::ldexp(1.0f, -16)})));
  CHECK_FALSE(gemm::products_exact(bits_of({std::ldexp(1.5f, -128)}), bits_of({std::ldexp(1.5f, -22)})));
}

TEST_CASE("gemm: products_exact never admits a pair whose FMA differs from mul + add", "[gemm]") {
  // random pairs over the whole exponent range and widths 1..24: where products_exact
  // says yes, the rounded product equals the exact one (so fma == mul + add)
  std::mt19937 rng(19);
  std::uniform_int_distribution<uint32_t> exp_field(0, 254), mant(0, (1u << 23) - 1), keep(0, 23), sign(0, 1);
  auto draw = [&] {
    const int k = (int)keep(rng);
    const uint32_t m = mant(rng) & ~((1u << (23 - k)) - 1u);
    return bits_to_float(sign(rng) << 31 | exp_field(rng) << 23 | m);
  };
  int64_t admitted = 0;
  for (int i = 0; i < 2000000; ++i) {
    const float a = draw(), b = draw();
    if (!gemm::products_exact(bits_of({a}), bits_of({b}))) continue;
    ++admitted;
    const double exact = (double)a * (double)b;  // 24 + 24 bits fit a double
    volatile float rounded = a * b;
    if ((double)rounded != exact || std::isinf(rounded)) {
      FAIL_CHECK("a " << a << " b " << b);
      break;
    }
    const float c = draw();
    volatile float p = a * b;
    const float sum = p + c;
    const float fused = std::fma(a, b, c);
    CHECK((float_bits(sum) == float_bits(fused) || (std::isnan(sum) && std::isnan(fused))));
  }
  CHECK(admitted > 10000);
}

TEST_CASE("gemm: the exact-FMA kernel bit for bit Eigen's products, and refused where products may round", "[gemm]") {
  std::mt19937 rng(2027);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> pool(1 << 20);
  auto draw_pool = [&](int keep, float scale) {
    for (float& x : pool) x = truncate_mantissa(normal(rng) * scale, keep);
  };
  const std::vector<Shape> shapes = {{128, 128, 576}, {37, 131, 576}, {128, 520, 100}, {300, 77, 576}, {16, 256, 1030}};
  SECTION("bf16 values: fused") {
    for (const Shape& sh : shapes) {
      draw_pool(7, 1.0f);
      const std::vector<float> pa = pool;
      draw_pool(7, 3.0f);
      const auto blocks = check_products(sh.M, sh.N, sh.K, [&](int64_t i) { return pa[i % pa.size()]; },
                                         [&](int64_t i) { return pool[(i * 7) % pool.size()]; });
      if (gemm::exact_fma_available()) CHECK(blocks.fused > 0);
    }
  }
  SECTION("fp16 values (11 bits): fused") {
    draw_pool(10, 1.0f);
    const std::vector<float> pa = pool;
    const auto blocks = check_products(128, 128, 576, [&](int64_t i) { return pa[i % pa.size()]; },
                                       [&](int64_t i) { return pool[(i * 3 + 1) % pool.size()]; });
    if (gemm::exact_fma_available()) CHECK(blocks.fused > 0);
  }
  SECTION("bf16 subnormals against bf16 values >= 2^-9 (lowest bits >= 2^-16): fused, sums through the subnormal range") {
    draw_pool(7, 1.0f);
    const std::vector<float> pa = pool;
    auto sub = [&](int64_t i) {
      const float x = pa[i % pa.size()];
      return truncate_mantissa(std::ldexp(x, i % 3 == 0 ? -128 : -118), 7);  // bf16 values, a third subnormal
    };
    auto big = [&](int64_t i) {
      const float x = pool[(i * 5) % pool.size()];
      return std::copysign(std::max(std::fabs(x), std::ldexp(1.0f, -9)), x);
    };
    const auto blocks = check_products(128, 128, 576, sub, big);
    CHECK(blocks.some_subnormal);
    if (gemm::exact_fma_available()) CHECK(blocks.fused > 0);
  }
  SECTION("large exponents: products up to 2^126, sums that overflow to Inf") {
    draw_pool(7, 1.0f);
    // |a|, |b| < 2^63 (exponent fields <= 189 each); A positive, so the rows of B that
    // are positive too sum past FLT_MAX
    auto huge = [&](int64_t i) { return std::ldexp(std::min(std::fabs(pool[i % pool.size()]), 7.9f), 60); };
    auto huge_signed = [&](int64_t i) { return (i / 576) % 3 == 0 ? -huge(i) : huge(i); };
    const auto blocks = check_products(128, 128, 576, huge, huge_signed);
    CHECK(blocks.some_inf);
    if (gemm::exact_fma_available()) CHECK(blocks.fused > 0);
  }
  SECTION("fp32 values: refused") {
    draw_pool(23, 1.0f);
    const std::vector<float> pa = pool;
    draw_pool(7, 1.0f);
    const auto blocks = check_products(128, 128, 576, [&](int64_t i) { return pa[i % pa.size()]; },
                                       [&](int64_t i) { return pool[i % pool.size()]; });
    CHECK(blocks.fused == 0);
    if (gemm::exact_fma_available()) CHECK(blocks.unfused > 0);
  }
  SECTION("bf16 values with a NaN and an Inf: refused, the same NaN bits") {
    draw_pool(7, 1.0f);
    const std::vector<float> pa = pool;
    auto with_nan = [&](int64_t i) {
      return i == 1000 ? std::numeric_limits<float>::quiet_NaN() : i == 5000 ? -std::numeric_limits<float>::infinity()
                                                                             : pa[i % pa.size()];
    };
    const auto blocks = check_products(128, 128, 576, with_nan, [&](int64_t i) { return pool[i % pool.size()]; });
    if (gemm::exact_fma_available()) CHECK(blocks.unfused > 0);
  }
  SECTION("bf16 values too small for exact products: refused") {
    draw_pool(7, 1.0f);
    auto tiny = [&](int64_t i) { return truncate_mantissa(std::ldexp(pool[i % pool.size()], -70), 7); };
    const auto blocks = check_products(128, 128, 576, tiny, tiny);
    CHECK(blocks.fused == 0);
  }
  SECTION("switched off for testing: the plain kernel, same bits") {
    FmaScope off(false);
    draw_pool(7, 1.0f);
    const auto blocks = check_products(128, 128, 576, [&](int64_t i) { return pool[i % pool.size()]; },
                                       [&](int64_t i) { return pool[(i * 11) % pool.size()]; });
    CHECK(blocks.fused == 0);
  }
}
