// Rules vLLM applies the same way on every platform it serves, in one place below
// the batch parser, the oracle, the builders, the routers and the planners (each of
// those asks here; none re-derives them). Plain values in, plain values out: this
// header depends on nothing else in core.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mlactl::vllm {

// check_num_heads_validity of the AITER MLA backend: n > 0 and (n <= 128 or n % 16 == 0)
// (docs/stacks/vllm-rocm-aiter.md §V1 (d)). The batch parser refuses the rest (exit 3)
// with num_heads_error's text, which is vLLM's.
bool num_heads_valid(int64_t n);
std::string num_heads_error(int64_t n);

// `_uniform_padded_mtp_qo_len` (docs/stacks/vllm-rocm-aiter.md §V2 step 2): the uniform
// MTP length u a full-cudagraph step pads to, or 0 when it does not apply. It is also how
// many query rows a cudagraph padding slot gets (each padding request: u rows, else none).
int64_t uniform_padded_mtp_qo_len(const std::vector<int64_t>& qo_len, int64_t max_qo_len, int64_t num_decode_tokens);

// KV entries that row t of a q block of `q_rows` tokens gets from a request of seq_len
// `s` under the causal diagonal: a prefix of length max(0, s - (q_rows-1) + t). The R0
// verify flatten, TRITON_MLA's flatten and the kernels' in-kernel bound all use it
// (docs/stacks/vllm-rocm-aiter.md §V1 (a), §V4). The oracle does not: it states the
// window as [0, c + t + 1) from the batch (docs/design.md §3).
inline int64_t causal_prefix_length(int64_t s, int64_t q_rows, int64_t t) {
  const int64_t n = s - (q_rows - 1) + t;
  return n > 0 ? n : 0;
}

}  // namespace mlactl::vllm
