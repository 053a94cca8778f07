#include "cli/common.hpp"

#include <algorithm>

#include "core/stacks/registry.hpp"

namespace mlactl::cli {

void add_kernel_option(CLI::App* sub, std::string& kernel) {
  std::vector<std::string> ids;
  for (const Stack* s : all_stacks())
    for (Route r : s->routes())
      if (std::find(ids.begin(), ids.end(), to_string(r)) == ids.end()) ids.push_back(to_string(r));
  sub->add_option("--kernel", kernel, "force a route")->check(CLI::IsMember(ids));
}

std::optional<Route> forced_route(const std::string& kernel) {
  if (kernel.empty()) return std::nullopt;
  return route_from_string(kernel);
}

std::optional<PlannerId> planner_option(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return planner_from_string(name);
}

nlohmann::ordered_json view_json(const KernelView& v) {
  return {{"heads", v.heads}, {"fold_ratio", v.fold_ratio}, {"q_layout", to_string(v.q_layout)}, {"q_tokens_per_tile", v.q_tokens_per_tile},
          {"causal", v.causal}, {"head_dim", v.head_dim}, {"v_dim", v.v_dim}, {"page_size", v.page_size},
          {"q_dtype", to_string(v.q_dtype)}, {"kv_dtype", to_string(v.kv_dtype)}};
}

// The plan as `schedule --format json` prints it; `check`'s expect.schedule is a subset of it.
nlohmann::ordered_json plan_json(const RoutePlan& plan, const InvariantReport& inv) {
  const WorkList& w = plan.work;
  nlohmann::ordered_json o;
  o["planner"] = to_string(plan.planner);
  o["work_planner"] = w.planner;
  o["kernel_route"] = to_string(plan.route);
  o["planned_view"] = view_json(w.planned_view);
  o["kernel_view"] = view_json(plan.kernel_view);
  o["num_workgroups"] = w.num_workgroups;
  o["work_indptr"] = w.work_indptr;
  auto wi = nlohmann::ordered_json::array();
  for (const auto& x : w.work_info) wi.push_back(x.as_array());
  o["work_info_set"] = wi;
  o["reduce_indptr"] = w.reduce_indptr;
  o["reduce_final_map"] = w.reduce_final_map;
  o["reduce_partial_map"] = w.reduce_partial_map;
  o["num_partial_rows"] = w.num_partial_rows;
  if (plan.capacity) {
    const auto& m = *plan.capacity;
    o["buffers"] = {{"work_indptr", {{"used", w.work_indptr.size()}, {"capacity", m.work_indptr}}},
                    {"work_info_set", {{"used", w.work_info.size()}, {"capacity", m.work_info_set}}},
                    {"reduce_indptr", {{"used", w.reduce_indptr.size()}, {"capacity", m.reduce_indptr}}},
                    {"reduce_final_map", {{"used", w.reduce_final_map.size()}, {"capacity", m.reduce_final_map}}},
                    {"reduce_partial_map", {{"used", w.reduce_partial_map.size()}, {"capacity", m.reduce_partial_map}}}};
  }
  const auto& bal = inv.balance;
  o["balance"] = {{"workgroups", bal.workgroups}, {"works", bal.works}, {"split_tiles", bal.split_tiles},
                  {"max_load", bal.max_load}, {"mean_load", bal.mean_load}, {"efficiency", bal.efficiency}};
  auto viol = nlohmann::ordered_json::array();
  for (const auto& v : inv.violations)
    viol.push_back({{"kind", v.kind}, {"q_row", v.q_row}, {"kv_begin", v.kv_begin}, {"kv_end", v.kv_end}, {"work", v.work}, {"message", v.message}});
  o["invariants"] = {{"ok", inv.ok}, {"total_violations", inv.total_violations}, {"violations", viol}};
  o["notes"] = plan.notes;
  // the stack's own arrays under their upstream names (vllm-cuda FlashMLA: num_sm_parts,
  // tile_scheduler_metadata rows of 8, num_splits); absent for AITER plans
  for (const auto& a : plan.stack_arrays) o[a.name] = stack_array_json(a);
  if (!plan.schedule_words.empty()) o["schedule_words"] = plan.schedule_words;
  return o;
}

nlohmann::ordered_json stack_array_json(const StackArray& a) {
  if (a.scalar && a.values.size() == 1) return a.values.front();
  if (a.row_width <= 0) return a.values;
  auto rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i + a.row_width <= a.values.size(); i += a.row_width)
    rows.push_back(std::vector<int64_t>(a.values.begin() + i, a.values.begin() + i + a.row_width));
  return rows;
}

std::optional<ExternalSpec> ExecutorArgs::spec() const {
  if (command.empty()) return std::nullopt;
  ExternalSpec e;
  e.command = command;
  e.timeout_s = timeout_s;
  e.keep_dir = keep_dir;
  return e;
}

void add_executor_options(CLI::App* sub, ExecutorArgs& a) {
  sub->add_option("--executor", a.command,
                  "run the case through this command instead of mlactl's executors: it gets a case directory as its last argument "
                  "and writes out.npy (and lse.npy) there (docs/executor-protocol.md)");
  sub->add_option("--executor-timeout", a.timeout_s, "seconds the --executor command may run before it is killed (exit 4)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--executor-keep", a.keep_dir, "write the case directory under this folder and keep it (default: a temporary one, removed)");
}

}  // namespace mlactl::cli
