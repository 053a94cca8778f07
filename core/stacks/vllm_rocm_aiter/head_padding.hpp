// Head padding for AITER MLA: vLLM's get_actual_mla_num_heads, get_mla_padded_q and
// get_mla_unpadded_o, R1 semantics (docs/stacks/vllm-rocm-aiter.md §V1 (d), seed 003).
#pragma once
#include "core/heads.hpp"

namespace mlactl {

struct PaddingDefects {
  bool repeat_noop = false;   // pad-repeat-noop: non-divisors use repeat_interleave(16 // n)
  bool append_only = false;   // pad-append-only: append the heads once (6 -> 12)
};

// Throws nothing: the caller validates n first (vllm_common.hpp's head-count rule).
HeadPadding head_padding(int n, bool native_h24 = false, const PaddingDefects& defects = {});

}  // namespace mlactl
