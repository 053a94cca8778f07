#include "core/routed.hpp"

#include "core/stacks/registry.hpp"

namespace mlactl {

std::string known_fault_text(const KnownFaultWarning& w) { return "known kernel fault: " + w.warning + " (" + w.link + ")"; }

std::string refusal_text(const RouteDecision& d) {
  if (d.route != Route::refused) return "";
  return (d.error_type.empty() ? "" : d.error_type + ": ") + d.error;
}

RoutedBatch route_batch(const Batch& b, std::optional<Route> forced) {
  RoutedBatch rb;
  rb.stack = &stack_for(b);
  rb.metadata = rb.stack->build_metadata(b, false);
  rb.decision = rb.stack->route(b, rb.metadata, forced);
  if (!rb.refused() && rb.stack->needs_flattened_metadata(rb.decision.route)) rb.metadata = rb.stack->build_metadata(b, true);
  return rb;
}

RoutePlan plan_batch(const Batch& b, const RoutedBatch& rb, const std::vector<RowWindow>& rows, std::optional<PlannerId> planner) {
  return rb.stack->plan(b, rb.metadata, rb.decision, rows, planner);
}

}  // namespace mlactl
