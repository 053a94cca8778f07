// The decode metadata a vLLM builder hands the attention kernel, in vLLM/AITER's names
// (docs/design.md §4 "Builder"): the fields every stack's builder fills, plus the R0
// verify flatten the AITER stack builds. Stacks fill it (their builder); the
// position audit, the captured-array diff and the printers read it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/heads.hpp"
#include "core/stack_arrays.hpp"

namespace mlactl {

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
  std::string builder = "vllm R1 _build_decode";  // which builder made it (`metadata` prints it)
  std::vector<StackArray> stack_arrays;           // the stack's own arrays (FlashMLA's schedule), printed by `metadata`
  // run --use-captured: the stack's own arrays as a real run captured them (FlashMLA's
  // tile_scheduler_metadata, num_splits, seq_lens); the stack executes them instead of
  // planning (docs/stacks/vllm-cuda.md §C12)
  std::vector<StackArray> captured_arrays;
};

// Token slot of KV position j of request r: block_table[r][j / Kb] * Kb + j % Kb, vLLM's
// block-table rule on every platform (docs/design.md §2 kv_cache.block_size).
int64_t token_slot(const Batch& b, int request, int64_t position);

}  // namespace mlactl
