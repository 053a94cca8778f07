// core/gemm: every Isa this CPU has, bit for bit Eigen's products (the reference's and
// the CPU executor's Q·Kᵀ and P·V), over shapes that reach every path: GEMV and
// coefficient-based shapes (Eigen itself), row counts of every residue mod 8 and 16
// (partial micro panels, Eigen's tail rows), several row blocks and depth panels,
// accumulate, and the executor's kept B' reused across calls.
#include <catch2/catch.hpp>

#include <cstring>
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
