#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"

#include <algorithm>

namespace mlactl {

HeadPadding head_padding(int n, bool native_h24, const PaddingDefects& defects) {
  HeadPadding p;
  p.num_heads = n;
  if (n <= 0) return p;
  // get_actual_mla_num_heads: 24 stays native only with AITER's H24 kernels.
  int m = (n == 24 && native_h24) ? 24 : ((n + 15) / 16) * 16;
  if (defects.repeat_noop && n < 16 && 16 % n != 0) {
    // pre-#50578: repeat_interleave(16 // n) — for 12 heads 16 // 12 == 1, a no-op (seed 003).
    m = n * (16 / n);
    p.method = "pad-repeat-noop";
  } else if (defects.append_only && n < 16 && 16 % n != 0) {
    // early padding appended heads once, cat([q, q[:, :16-n]]): 6 -> 12, not 16 (seed 003);
    // from 8 heads up that happens to reach 16
    m = n + std::min(n, 16 - n);
    p.method = "pad-append-only";
  }
  p.padded_heads = m;
  p.source.resize(m);
  p.unpad.resize(n);
  if (m == n) {
    if (p.method.empty()) p.method = "identity";
    for (int i = 0; i < m; ++i) p.source[i] = i;
    for (int h = 0; h < n; ++h) p.unpad[h] = h;
  } else if (m % n == 0) {
    // divisors (1, 2, 4, 8; also 32 -> 64 ...): repeat_interleave, unpad takes o[:, ::m/n]
    const int r = m / n;
    if (p.method.empty()) p.method = "repeat_interleave";
    for (int i = 0; i < m; ++i) p.source[i] = i / r;
    for (int h = 0; h < n; ++h) p.unpad[h] = h * r;
  } else {
    // tile-and-slice (#50578): padded head i = head i % n, unpad takes o[:, :n]
    if (p.method.empty()) p.method = "tile_slice";
    for (int i = 0; i < m; ++i) p.source[i] = i % n;
    for (int h = 0; h < n; ++h) p.unpad[h] = h;
  }
  return p;
}

}  // namespace mlactl
