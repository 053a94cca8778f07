#include "core/stack.hpp"

#include <algorithm>

namespace mlactl {

const char* to_string(StackId s) {
  switch (s) {
    case StackId::vllm_rocm_aiter: return "vllm-rocm-aiter";
    case StackId::vllm_cuda: return "vllm-cuda";
    case StackId::sglang: return "sglang";
  }
  return "?";
}

std::optional<StackId> stack_id_from_string(const std::string& s) {
  for (StackId id : {StackId::vllm_rocm_aiter, StackId::vllm_cuda, StackId::sglang})
    if (s == to_string(id)) return id;
  return std::nullopt;
}

const PlannerEntry* find_planner(const Stack& s, PlannerId p) {
  for (const PlannerEntry& e : s.planners())
    if (e.id == p) return &e;
  return nullptr;
}

std::optional<PlannerId> default_planner(const Stack& s, Route r) {
  for (const PlannerEntry& e : s.planners())
    if (std::find(e.default_for.begin(), e.default_for.end(), r) != e.default_for.end()) return e.id;
  return std::nullopt;
}

}  // namespace mlactl
