#include "core/stacks/registry.hpp"

#include "core/stacks/vllm_cuda/stack.hpp"
#include "core/stacks/vllm_rocm_aiter/stack.hpp"

namespace mlactl {

const Stack& stack_for(const Batch& b) {
  switch (b.platform.arch) {
    case Arch::gfx942:
    case Arch::gfx950: return vllm_rocm_aiter_stack();
    case Arch::sm90: return vllm_cuda_stack();
  }
  return vllm_rocm_aiter_stack();
}

const std::vector<const Stack*>& all_stacks() {
  static const std::vector<const Stack*> stacks = {&vllm_rocm_aiter_stack(), &vllm_cuda_stack()};
  return stacks;
}

}  // namespace mlactl
