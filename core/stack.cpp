#include "core/stack.hpp"

#include <algorithm>
#include <string>

#include "core/types.hpp"

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

void require_stack_planner(const Stack& s, std::optional<PlannerId> p) {
  if (!p || find_planner(s, *p)) return;
  std::string names;
  for (const PlannerEntry& e : s.planners()) names += std::string(names.empty() ? "" : ", ") + to_string(e.id);
  throw Error(kExitUsage, "", std::string("--planner ") + to_string(*p) + " is not a planner of the " + to_string(s.id()) + " stack: " + names);
}

std::optional<PlannerId> route_planner(const Stack& s, Route r, std::optional<PlannerId> p) {
  const auto own = default_planner(s, r);
  if (own && p && *p != *own)
    throw Error(kExitUsage, "", std::string("--planner ") + to_string(*p) + " does not plan route " + to_string(r) + " of the " +
                                    to_string(s.id()) + " stack (its planner is " + to_string(*own) + ")");
  return own;
}

}  // namespace mlactl
