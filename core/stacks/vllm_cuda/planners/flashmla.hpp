// FlashMLA's scheduler, get_mla_metadata (docs/stacks/vllm-cuda.md §C4), and the walk its
// split-KV kernel makes over the schedule, turned into mlactl's one work-list format
// (docs/design.md §4.3). Plain index arrays in, so a captured schedule replays exactly.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl::vllm_cuda {

constexpr int kFlashMlaBlockN = 64;          // block_size_n: KV tokens per block
constexpr int kFlashMlaFixedOverhead = 5;    // fixed_overhead_num_blocks
constexpr int kFlashMlaBlockM = 64;          // q rows per tile (num_sm_parts' divisor)
constexpr int kFlashMlaCombineMaxSplits = 160;

// max(sm_count / h_kv / ceil(num_q_tokens_per_head_k / 64), 1), integer division.
int flashmla_num_sm_parts(int sm_count, int h_kv, int64_t num_q_tokens_per_head_k);

// How a part with no work left is marked: deepseek-ai/FlashMLA writes begin_req = b,
// vLLM's fork (vllm-project/FlashMLA PR #3) writes -1.
enum class NoWorkMarker { batch_size, minus_one };

// How a row gives its KV range. The dense bf16/fp16 metadata (csrc/smxx/get_mla_metadata.cu)
// writes blocks and counts a zero-length request as one block; the fork's fp8 metadata
// (vllm-project/FlashMLA csrc/extension/sm90/dense_fp8/flash_fwd_mla_metadata.cu@46d64a8,
// get_mla_decoding_metadata_dense_fp8) writes token offsets (begin block·64; end block·64,
// or the request's seq_len where the part finishes it), counts ceil(s / 64) blocks (zero
// for s = 0) and always marks a part with no work begin_req = b.
enum class FlashMlaEncoding { blocks, fp8_tokens };

struct FlashMlaSchedule {
  int num_sm_parts = 0;
  FlashMlaEncoding encoding = FlashMlaEncoding::blocks;
  // [num_sm_parts][8]: begin_req, begin_block, end_req (inclusive), end_block (exclusive),
  // begin_split, 0, 0, 0
  std::vector<std::array<int32_t, 8>> tile_scheduler_metadata;
  std::vector<int32_t> num_splits;  // [b+1] prefix sum of per-request split counts
};

// get_mla_metadata_kernel over seqlens_k (the decode rows' seq_lens, padding rows included).
FlashMlaSchedule flashmla_get_mla_metadata(const std::vector<int64_t>& seqlens_k, int num_sm_parts,
                                           NoWorkMarker marker = NoWorkMarker::minus_one,
                                           FlashMlaEncoding encoding = FlashMlaEncoding::blocks);

// A row's KV blocks of request r as the split kernel reads them: [first, end) with the row's
// begin for its first request and end for its last (fp8 rows: begin_seqlen / 64 and
// ceil(end_seqlen / 64), the fp8 kernel's n_block_min / n_block_max).
int64_t flashmla_row_begin_block(const FlashMlaSchedule& s, int64_t value);
int64_t flashmla_row_end_block(const FlashMlaSchedule& s, int64_t value);

// The split kernel's walk, as works: SM part i = workgroup i, one work per (part, request)
// segment over KV index entries [kv_indptr[r] + 64·begin, kv_indptr[r] + min(64·end, s_r)).
// `kernel_seqlens` are the seq_lens the kernel is called with (they differ from the
// planner's only under a defect); `kernel_parts` how many rows the kernel's grid runs
// (its own num_sm_parts). q rows are per request: [qo_indptr[r], qo_indptr[r] + s_q).
// A request with one split writes the output directly; a split one writes partial rows
// (num_splits[r] + split)·s_q, merged by the combine; begin_req outside [0, b) is a
// part with no work (the fork's early return).
struct FlashMlaWorkInput {
  std::vector<int64_t> kernel_seqlens;
  std::vector<int32_t> kv_indptr;
  std::vector<int32_t> qo_indptr;
  int s_q = 1;
  int heads = 16;
  int kernel_parts = 0;
};
WorkList flashmla_work_list(const FlashMlaSchedule& s, const FlashMlaWorkInput& in);

}  // namespace mlactl::vllm_cuda
