// Captured FlashMLA arrays validated as a plan of this batch (docs/stacks/vllm-cuda.md §C12),
// before anything executes them: what the split kernel and the combine would index.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.hpp"
#include "core/stack_arrays.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"

namespace mlactl::vllm_cuda {

// `kernel_seqlens`: the seq_lens the kernel runs with (captured or the builder's, padding
// slots with their pad values); `parts`: the kernel's num_sm_parts. Any array may be null.
// Throws invalid_input (exit 3) naming /captured/<field>/<index> and the request or SM part
// it hurts.
// `encoding`: blocks (bf16/fp16 metadata) or token offsets (the fp8 metadata).
void validate_flashmla_captured(const Batch& b, const std::vector<int64_t>& kernel_seqlens, int parts, FlashMlaEncoding encoding,
                                const StackArray* tile_scheduler_metadata, const StackArray* num_splits, const StackArray* seq_lens);

}  // namespace mlactl::vllm_cuda
