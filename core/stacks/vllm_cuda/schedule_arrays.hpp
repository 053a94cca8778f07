// FlashMLA's schedule as StackArrays (the JSON fields `metadata`/`schedule` print) and in
// words, one line per tile row (docs/stacks/vllm-cuda.md §C4).
#pragma once
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/stack_arrays.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"

namespace mlactl::vllm_cuda {

// the no-work marker the modelled FlashMLA writes: -1 (vLLM's fork)
NoWorkMarker schedule_marker(const Batch& b);
std::vector<StackArray> flashmla_arrays(const FlashMlaSchedule& s);
// "SM part 7: request 3 blocks [12, 24), split 1 of 4"
std::vector<std::string> flashmla_words(const FlashMlaSchedule& s, const std::vector<int64_t>& seqlens_k);

}  // namespace mlactl::vllm_cuda
