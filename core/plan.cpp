#include "core/plan.hpp"

#include <algorithm>

namespace mlactl {

InvariantReport check_plan_invariants(const RoutePlan& plan, int64_t max_qo_len) {
  InvariantOptions io;
  if (plan.capacity) {
    io.capacity = &*plan.capacity;
    io.partial_row_capacity = plan.capacity->reduce_partial_map * std::max<int64_t>(1, max_qo_len);
  }
  return check_invariants(plan.work, plan.kernel_view, plan.expectations, io);
}

}  // namespace mlactl
