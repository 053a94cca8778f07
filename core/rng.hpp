// The project's own generator and distributions (docs/design.md §2 data.seed): no std::
// distributions, so a seed gives the same inputs on every platform.
#pragma once
#include <cstdint>

namespace mlactl {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, good enough for test data.
class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0) : s_(seed ^ (0x9E3779B97F4A7C15ull * (stream + 1))) {}
  uint64_t next_u64() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // uniform in [0, n) without modulo bias worth caring about for n << 2^64
  uint64_t below(uint64_t n) { return n == 0 ? 0 : (uint64_t)(((unsigned __int128)next_u64() * n) >> 64); }
  // uniform float in [-1, 1) with 24 bits
  float uniform_pm1() { return (float)((int64_t)(next_u64() >> 40) - (1 << 23)) / (float)(1 << 23); }
  // uniform double in [0, 1)
  double uniform01() { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t s_;
};

// Stream ids so q, KV, placement and sparse indices never share a sequence.
enum RngStream : uint64_t { kStreamPlacement = 1, kStreamQ = 2, kStreamKv = 3, kStreamSparse = 4 };

}  // namespace mlactl
