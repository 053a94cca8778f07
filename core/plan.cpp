#include "core/plan.hpp"

#include <algorithm>
#include <string>

namespace mlactl {

InvariantReport check_plan_invariants(const RoutePlan& plan, int64_t max_qo_len) {
  InvariantOptions io;
  if (plan.capacity) {
    io.capacity = &*plan.capacity;
    io.partial_row_capacity = plan.capacity->reduce_partial_map * std::max<int64_t>(1, max_qo_len);
  }
  return check_invariants(plan.work, plan.kernel_view, plan.expectations, io);
}

std::string captured_plan_message(const InvariantReport& rep) {
  if (rep.ok || rep.violations.empty()) return "captured plan: ok";
  const Violation& v = rep.violations.front();
  std::string where;
  if (v.work >= 0) where += "work " + std::to_string(v.work);
  if (v.q_row >= 0) where += (where.empty() ? "" : ", ") + std::string("q row ") + std::to_string(v.q_row);
  std::string s = "captured plan breaks the plan invariants (" + std::to_string(rep.total_violations) + " violation" +
                  (rep.total_violations == 1 ? "" : "s") + "): " + (where.empty() ? "" : where + ": ") + to_string(v.rule) + " (" + v.kind + "): " + v.message;
  return s;
}

}  // namespace mlactl
