// Which modelled stack a batch runs on. Today every platform.arch is an AMD gfx one and
// selects vLLM ROCm AITER; a second stack adds its arches here and nowhere else.
#pragma once
#include <vector>

#include "core/batch.hpp"
#include "core/stack.hpp"

namespace mlactl {

const Stack& stack_for(const Batch& b);
const std::vector<const Stack*>& all_stacks();

}  // namespace mlactl
