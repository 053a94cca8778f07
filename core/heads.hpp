// Head padding for AITER MLA (docs/stacks/vllm-rocm-aiter.md §V1 (d), seed 003).
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

struct PaddingDefects {
  bool repeat_noop = false;   // pad-repeat-noop: non-divisors use repeat_interleave(16 // n)
  bool append_only = false;   // pad-append-only: append the heads once (6 -> 12)
};

// get_actual_mla_num_heads + get_mla_padded_q / get_mla_unpadded_o, R1 semantics.
// `target` overrides m (e.g. fp8 prefill); throws nothing: the caller validates n first.
HeadPadding head_padding(int n, bool native_h24 = false, const PaddingDefects& defects = {});

}  // namespace mlactl
