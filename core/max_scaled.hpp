// max over j of scale * s[j] for a softmax row of raw scores, in T: double for the
// reference (core/reference.cpp), float for the CPU executor (kernels/cpu_executor.cpp).
// Exactly what the sequential std::max loop gives (a NaN score is skipped, as
// std::max(m, NaN) keeps m); on AVX-512 W = 64 / sizeof(T) lanes at a time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace mlactl {

namespace max_scaled_detail {

template <class T>
inline T sequential(const float* s, int64_t n, T scale) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * (T)s[j]);
  return m;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MLACTL_MAX_SCALED_AVX512 1
template <class T>
__attribute__((target("avx512f"))) T lanes_avx512(const float* s, int64_t n, T scale) {
  constexpr int kLanes = 64 / sizeof(T);
  typedef T Lanes __attribute__((vector_size(64)));
  typedef float Scores __attribute__((vector_size(4 * kLanes)));
  Lanes mv = Lanes{} - std::numeric_limits<T>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    Scores x;
    std::memcpy(&x, s + j, sizeof x);
    const Lanes v = __builtin_convertvector(x, Lanes) * scale;
    mv = v > mv ? v : mv;  // a NaN v keeps mv, as std::max(m, NaN) keeps m
  }
  T m = -std::numeric_limits<T>::infinity();
  for (int l = 0; l < kLanes; ++l) m = std::max(m, mv[l]);
  for (; j < n; ++j) m = std::max(m, scale * (T)s[j]);
  return m;
}
#endif

}  // namespace max_scaled_detail

template <class T>
inline T max_scaled(const float* s, int64_t n, T scale) {
#ifdef MLACTL_MAX_SCALED_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    // max is exact and order-free but for the sign of a zero: a zero maximum is
    // taken from the sequential loop
    const T m = max_scaled_detail::lanes_avx512(s, n, scale);
    if (m != 0) return m;
  }
#endif
  return max_scaled_detail::sequential(s, n, scale);
}

}  // namespace mlactl
