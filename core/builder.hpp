// vLLM R1 `_build_decode` and the R0 small-head verify flatten
// (docs/stacks/vllm-rocm-aiter.md §V1 (a), §V2; docs/design.md §4 "Builder").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/heads.hpp"

namespace mlactl {

// vLLM `_uniform_padded_mtp_qo_len` (docs/stacks/vllm-rocm-aiter.md §V2 step 2).
int64_t uniform_padded_mtp_qo_len(const std::vector<int64_t>& qo_len, int64_t max_qo_len, int64_t num_decode_tokens);

struct DecodeMetadata {
  int64_t num_requests = 0;
  std::vector<int64_t> qo_len;          // per request, after uniform-MTP padding
  int64_t max_qo_len = 0;               // Q
  int64_t uniform_pad = 0;              // P (0 = not applied)
  std::vector<int32_t> qo_indptr;       // [R+1]
  std::vector<int64_t> seq_k;           // per request KV length the kernel gets
  std::vector<int32_t> paged_kv_indptr; // [R+1]
  std::vector<int32_t> paged_kv_indices;// token slots, indptr[R] entries
  std::vector<int32_t> paged_kv_last_page_len;  // ones[R]
  int64_t min_kv_seq_len_r0 = 0;        // R0: minimum causal flatten row length (0 with padding)
  int64_t min_kv_seq_len_r1 = 1;        // R1: minimum per-request length (over active rows when padded)
  bool uni_seqlen = false;              // uni_seqlen_qo = Q (pad or all qo_len == Q)
  // R0 small-head verify flatten: one row per (request, token)
  std::vector<int32_t> flat_indptr;     // [R*Q+1]
  std::vector<int32_t> flat_indices;
  HeadPadding heads;
  std::vector<std::string> notes;
};

// Token slot of KV position j of request r: block_table[r][j / Kb] * Kb + j % Kb.
int64_t token_slot(const Batch& b, int request, int64_t position);

// Builds everything above. `with_flatten` computes the R0 flatten (it doubles the
// index memory, so `metadata` on huge batches can skip it when not routed there).
DecodeMetadata build_decode(const Batch& b, bool with_flatten = true);

}  // namespace mlactl
