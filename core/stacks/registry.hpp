// Which modelled stack a batch runs on: platform.arch gfx942/gfx950 select vLLM ROCm
// AITER, sm90 selects vLLM CUDA (docs/design.md §1.3).
#pragma once
#include <vector>

#include "core/batch.hpp"
#include "core/stack.hpp"

namespace mlactl {

const Stack& stack_for(const Batch& b);
const std::vector<const Stack*>& all_stacks();

}  // namespace mlactl
