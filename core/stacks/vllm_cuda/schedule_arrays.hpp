// FlashMLA's schedule as StackArrays (the JSON fields `metadata`/`schedule` print) and in
// words, one line per tile row (docs/stacks/vllm-cuda.md §C4).
#pragma once
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/stack_arrays.hpp"
#include "core/decode_metadata.hpp"
#include "core/stacks/vllm_cuda/planners/fa3.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"

namespace mlactl::vllm_cuda {

// the no-work marker the modelled FlashMLA writes: -1 (vLLM's fork)
NoWorkMarker schedule_marker(const Batch& b);
// the row encoding of the metadata FLASHMLA calls for this batch's cache dtype
FlashMlaEncoding flashmla_encoding(const Batch& b);
// The requests get_mla_metadata is called for: all of them (padding slots included, padded
// before the build since vLLM PR #28579), or under flashmla-no-work-marker the ones before
// the cudagraph padding (exit 5 when a request follows a padding slot)
int64_t metadata_batch_size(const Batch& b);
// get_mla_metadata as vLLM's FLASHMLA builder calls it for these seq_lens: num_splits has
// seqlens.size() + 1 entries (a smaller metadata batch's tail filled with its last value)
FlashMlaSchedule flashmla_vllm_schedule(const Batch& b, const std::vector<int64_t>& seqlens, int parts);
std::vector<StackArray> flashmla_arrays(const FlashMlaSchedule& s);
// "SM part 7: request 3 blocks [12, 24), split 1 of 4"
std::vector<std::string> flashmla_words(const FlashMlaSchedule& s, const std::vector<int64_t>& seqlens_k);

// FLASH_ATTN_MLA's get_scheduler_metadata arguments from the decode rows (flashattn_mla.py:
// num_reqs, max_query_len, max_seq_len, num_heads, cache_seqlens = seq_lens,
// num_splits = max_num_splits), docs/stacks/vllm-cuda.md §C5
Fa3SchedulerInput fa3_scheduler_input(const Batch& b, const DecodeMetadata& md);
// num_splits (static), num_splits_dynamic (per batch, the splits the kernel runs) and the
// scheduler_metadata tensor
std::vector<StackArray> fa3_arrays(const Fa3Schedule& s);

}  // namespace mlactl::vllm_cuda
