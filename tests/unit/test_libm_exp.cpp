// core/libm_exp: every path this CPU has and its libm matches, bit for bit std::exp
// (double and float) over the softmax arguments (scale·q·k − max, in [-60, 0]), all of
// [-745, 710], every exponent, the main path's edges (|x| = 2^-54 and 512) and the
// specials; lengths of every residue mod 8 (the scalar tail).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/libm_exp.hpp"

namespace {

using namespace mlactl;

std::vector<double> arguments() {
  std::vector<double> v;
  std::mt19937_64 gen(20261202);
  std::uniform_real_distribution<double> softmax(-60.0, 0.0), wide(-745.5, 710.0);
  for (int i = 0; i < 2000000; ++i) v.push_back(softmax(gen));
  for (int i = 0; i < 200000; ++i) v.push_back(wide(gen));
  for (int e = -1074; e <= 1023; ++e)
    for (double s : {1.0, -1.0, 1.5, -1.75}) v.push_back(s * std::ldexp(1.0, e));
  for (double edge : {0x1p-54, 512.0, 709.78, 709.79, -708.39, -745.13, -745.14})
    for (double s : {1.0, -1.0}) {
      v.push_back(s * edge);
      v.push_back(std::nextafter(s * edge, 0.0));
      v.push_back(std::nextafter(s * edge, s * HUGE_VAL));
    }
  for (double x : {0.0, -0.0, HUGE_VAL, -HUGE_VAL, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::max()})
    v.push_back(x);
  return v;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

}  // namespace

TEST_CASE("libm_exp: every available path bit for bit std::exp", "[reference]") {
  const std::vector<double> args = arguments();
  for (const ExpIsa isa : {ExpIsa::scalar, ExpIsa::avx2_fma, ExpIsa::avx512}) {
    if (!exp_isa_available(isa)) continue;
    INFO("exp isa " << static_cast<int>(isa));
    set_exp_isa_for_testing(isa);
    std::vector<double> got = args;
    exp_in_place(got.data(), (int64_t)got.size());
    int64_t mismatches = 0;
    for (size_t i = 0; i < args.size(); ++i)
      if (!same_bits(got[i], std::exp(args[i]))) {
        if (mismatches++ < 5) UNSCOPED_INFO("exp(" << args[i] << ") gave " << got[i] << ", std::exp " << std::exp(args[i]));
      }
    CHECK(mismatches == 0);
    for (int64_t n = 0; n <= 17; ++n) {  // the scalar tail after the vector lanes
      std::vector<double> part(args.begin() + 1000, args.begin() + 1000 + n);
      exp_in_place(part.data(), n);
      for (int64_t i = 0; i < n; ++i) CHECK(same_bits(part[(size_t)i], std::exp(args[(size_t)(1000 + i)])));
    }
    set_exp_isa_for_testing(std::nullopt);
  }
}

TEST_CASE("libm_exp: every available float path bit for bit std::exp(float)", "[executor]") {
  std::vector<float> args;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 997) {  // a stride over every float
    float f;
    const uint32_t w = (uint32_t)u;
    std::memcpy(&f, &w, 4);
    args.push_back(f);
  }
  std::mt19937 gen(20261202);
  std::uniform_real_distribution<float> softmax(-40.0f, 0.0f);
  for (int i = 0; i < 2000000; ++i) args.push_back(softmax(gen));
  for (float edge : {88.0f, 88.72f, 87.33f, 103.97f, 104.0f})
    for (float s : {1.0f, -1.0f}) {
      args.push_back(s * edge);
      args.push_back(std::nextafter(s * edge, 0.0f));
      args.push_back(std::nextafter(s * edge, s * HUGE_VALF));
    }
  for (float x : {0.0f, -0.0f, HUGE_VALF, -HUGE_VALF, std::numeric_limits<float>::quiet_NaN()}) args.push_back(x);
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); };
  for (const ExpIsa isa : {ExpIsa::scalar, ExpIsa::avx2_fma, ExpIsa::avx512}) {
    if (!exp_isa_available(isa)) continue;
    INFO("exp isa " << static_cast<int>(isa));
    set_exp_isa_for_testing(isa);
    std::vector<float> got = args;
    exp_in_place(got.data(), (int64_t)got.size());
    int64_t mismatches = 0;
    for (size_t i = 0; i < args.size(); ++i)
      if (!same(got[i], std::exp(args[i]))) {
        if (mismatches++ < 5) UNSCOPED_INFO("exp(" << args[i] << ") gave " << got[i] << ", std::exp " << std::exp(args[i]));
      }
    CHECK(mismatches == 0);
    for (int64_t n = 0; n <= 9; ++n) {  // the scalar tail
      std::vector<float> part(args.end() - 20, args.end() - 20 + n);
      exp_in_place(part.data(), n);
      for (int64_t i = 0; i < n; ++i) CHECK(same(part[(size_t)i], std::exp(args[args.size() - 20 + (size_t)i])));
    }
    set_exp_isa_for_testing(std::nullopt);
  }
}
