// The map from a batch's query heads to the heads a kernel sees: the identity on
// raw-head routes, a stack's padding rule elsewhere (the vLLM ROCm AITER rule is
// core/stacks/vllm_rocm_aiter/head_padding.hpp).
#pragma once
#include <string>
#include <vector>

namespace mlactl {

struct HeadPadding {
  int num_heads = 0;      // n: heads per rank
  int padded_heads = 0;   // m: heads the kernel sees
  std::string method;     // "identity", "repeat_interleave", "tile_slice", or a defect's name
  // source[i] = original head feeding padded head i (size m)
  std::vector<int> source;
  // unpad[h] = padded head whose output is original head h's output (size n)
  std::vector<int> unpad;
};

// n heads, unpadded.
inline HeadPadding identity_heads(int n) {
  HeadPadding p;
  p.num_heads = p.padded_heads = n;
  p.method = "identity";
  for (int h = 0; h < n; ++h) {
    p.source.push_back(h);
    p.unpad.push_back(h);
  }
  return p;
}

}  // namespace mlactl
