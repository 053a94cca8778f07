// Which modelled stack a batch runs on: the serving stack it names (platform.stack,
// vLLM when absent) on its hardware (platform.arch), docs/design.md §1.3. Adding a stack
// is one line of kStacks in registry.cpp.
#pragma once
#include <vector>

#include "core/batch.hpp"
#include "core/stack.hpp"

namespace mlactl {

// The stack modelling `serving` on `arch`; Error (exit 3, naming /platform/stack) when
// none does.
const Stack& stack_for_platform(ServingStack serving, Arch arch);
const Stack& stack_for(const Batch& b);
const std::vector<const Stack*>& all_stacks();
// Where a batch of the serving stack named `serving` ("vllm", "sglang") gives its attention
// backend (a JSON pointer, core/stack.hpp backend_field), "" when none of its stacks has one
// or the name is unknown (the parser then names /platform/stack).
std::string backend_field_of(const std::string& serving);

}  // namespace mlactl
