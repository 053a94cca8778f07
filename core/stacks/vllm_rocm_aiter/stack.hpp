// The vLLM ROCm AITER MLA stack (docs/stacks/vllm-rocm-aiter.md): vLLM's
// rocm_aiter_mla.py builder and router over AITER's planners and kernels, behind
// core/stack.hpp. This header names the stack's own entry points; the rest of the
// code reaches them through the Stack interface (tests call them directly).
#pragma once
#include <optional>
#include <vector>

#include "core/stack.hpp"

namespace mlactl {

const Stack& vllm_rocm_aiter_stack();

// The planner registry (aiter, gluon, gluon-split, triton, nonpersistent, sparse-rows).
const std::vector<PlannerEntry>& aiter_planner_registry();
// The route whose own planner `p` is (gluon-split, which no route defaults to, answers
// as gluon does: the gluon route for the batch's max q_len).
Route aiter_route_for_planner(PlannerId p, bool sparse, int64_t max_qo_len);

// The plan of a routed batch in three steps (core/stacks/vllm_rocm_aiter/plan.cpp):
// 1. lay out the rows (index lists and the kernel view), 2. run the planner, 3. derive
// the oracle's expectations. `planner` unset = the route's own. Throws
// Error(kExitRefused) when the route is refused, Error(kExitUsage) for a planner that
// cannot plan this route.
RoutePlan plan_route(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                     std::optional<PlannerId> planner = std::nullopt);

// Stack::metadata_windows for this stack's routes.
MetadataWindows aiter_metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows);

}  // namespace mlactl
