#include "core/plan.hpp"

#include <algorithm>
#include <limits>
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

void gather_caller_rows(const std::vector<std::optional<int64_t>>& caller_rows, int64_t heads, int64_t v_dim, std::vector<float>& out,
                        std::vector<float>& lse) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto gather = [&](std::vector<float>& v, int64_t per_row) {
    if (v.empty()) return;
    const int64_t kernel_rows = (int64_t)v.size() / per_row;
    std::vector<float> g(caller_rows.size() * (size_t)per_row, nan);
    for (size_t r = 0; r < caller_rows.size(); ++r) {
      const std::optional<int64_t>& from = caller_rows[r];
      if (!from || *from < 0 || *from >= kernel_rows) continue;
      std::copy_n(v.begin() + *from * per_row, per_row, g.begin() + (int64_t)r * per_row);
    }
    v.swap(g);
  };
  gather(out, heads * v_dim);
  gather(lse, heads);
}

}  // namespace mlactl
