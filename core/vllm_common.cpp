#include "core/vllm_common.hpp"

namespace mlactl::vllm {

bool num_heads_valid(int64_t n) { return n > 0 && (n <= 128 || n % 16 == 0); }

std::string num_heads_error(int64_t n) {
  // vLLM check_num_heads_validity (docs/stacks/vllm-rocm-aiter.md §V1 (d)).
  return "ROCM AITER MLA requires a positive multiple of 16 heads, or an unaligned head count up to 128 "
         "(padded to the next multiple of 16), but got " +
         std::to_string(n) + ". Try adjusting tensor_parallel_size value.";
}

int64_t uniform_padded_mtp_qo_len(const std::vector<int64_t>& qo_len, int64_t max_qo_len, int64_t num_decode_tokens) {
  // vLLM `_uniform_padded_mtp_qo_len` (docs/stacks/vllm-rocm-aiter.md §V2 step 2): a full-cudagraph
  // step whose padding slots carry the uniform MTP length u = N / R.
  const int64_t R = (int64_t)qo_len.size();
  const int64_t N = num_decode_tokens;
  if (R == 0 || N <= 0) return 0;
  int64_t sum = 0;
  for (int64_t q : qo_len) sum += q;
  if (N <= sum || N % R != 0) return 0;
  const int64_t u = N / R;
  if (u <= 1) return 0;
  bool any_positive = false, all_positive = true, seen_zero = false;
  for (int64_t q : qo_len) {
    if (q > 0) {
      any_positive = true;
      if (q != u) return 0;
      if (seen_zero) return 0;  // a positive length after the first zero
    } else {
      all_positive = false;
      seen_zero = true;
    }
  }
  if (all_positive) return 0;
  if (any_positive && max_qo_len != u) return 0;
  return u;
}

}  // namespace mlactl::vllm
