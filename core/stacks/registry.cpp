#include "core/stacks/registry.hpp"

#include <algorithm>

#include "core/stacks/sglang/stack.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"
#include "core/stacks/vllm_rocm_aiter/stack.hpp"

namespace mlactl {

const std::vector<const Stack*>& all_stacks() {
  static const std::vector<const Stack*> stacks = {&vllm_rocm_aiter_stack(), &vllm_cuda_stack(), &sglang_stack()};
  return stacks;
}

const Stack& stack_for_platform(ServingStack serving, Arch arch) {
  std::string modelled;
  for (const Stack* s : all_stacks()) {
    if (s->serving() != serving) continue;
    const auto& a = s->arches();
    if (std::find(a.begin(), a.end(), arch) != a.end()) return *s;
    for (Arch x : a) modelled += std::string(modelled.empty() ? "" : ", ") + to_string(x);
  }
  throw invalid_input("/platform/stack", std::string(to_string(serving)) + " is modelled on " + (modelled.empty() ? "no arch" : modelled) +
                                             ", not on platform.arch \"" + to_string(arch) + "\"");
}

std::string backend_field_of(const std::string& serving) {
  for (const Stack* s : all_stacks())
    if (serving == to_string(s->serving()) && !s->backend_field().empty()) return s->backend_field();
  return {};
}

const Stack& stack_for(const Batch& b) { return stack_for_platform(b.platform.stack, b.platform.arch); }

}  // namespace mlactl
