// The SGLang MLA decode stack (docs/stacks/sglang.md): SGLang's backend choice over fa3,
// flashmla, flashinfer and triton on Hopper and aiter and triton on ROCm, each backend's
// metadata per forward mode, and the planners its kernels run, behind core/stack.hpp.
#pragma once
#include <optional>
#include <vector>

#include "core/stack.hpp"

namespace mlactl {

const Stack& sglang_stack();

namespace sglang {

RoutePlan plan_sglang(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                      std::optional<PlannerId> planner);
const std::vector<PlannerEntry>& sglang_planner_registry();

}  // namespace sglang
}  // namespace mlactl
