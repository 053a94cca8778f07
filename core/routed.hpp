// The one orchestration every verb uses (docs/design.md §1.3): pick the batch's stack,
// build its metadata, route, and rebuild the large flattened metadata when the route
// reads it. A refused batch comes back refused, with the text every verb prints.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/decode_metadata.hpp"
#include "core/plan.hpp"
#include "core/route.hpp"
#include "core/semantics.hpp"
#include "core/stack.hpp"

namespace mlactl {

struct RoutedBatch {
  const Stack* stack = nullptr;
  DecodeMetadata metadata;  // includes the flattened lists when the route needs them
  RouteDecision decision;
  bool refused() const { return decision.route == Route::refused; }
  std::string refusal() const { return refusal_text(decision); }  // "ErrorType: error"
};

// `forced` is --kernel. Throws only for input the stack cannot build metadata for.
RoutedBatch route_batch(const Batch& b, std::optional<Route> forced = std::nullopt);

// The routed batch's plan (Stack::plan); `planner` unset = the route's own. Throws
// Error(kExitRefused) on a refused batch, Error(kExitUsage) on a planner that cannot plan it.
RoutePlan plan_batch(const Batch& b, const RoutedBatch& rb, const std::vector<RowWindow>& rows,
                     std::optional<PlannerId> planner = std::nullopt);

}  // namespace mlactl
