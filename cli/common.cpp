#include "cli/common.hpp"

#include <cmath>

#include <algorithm>

#include "cli/json_writer.hpp"
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

nlohmann::ordered_json captured_json(const CapturedDiff& c) {
  return {{"matches", c.same}, {"field", c.field}, {"index", c.index}, {"expected", c.expected}, {"got", c.got},
          {"rows", c.rows}, {"message", c.message}, {"compared", c.compared}};
}

void write_view(JsonWriter& w, const KernelView& v) { w.value(view_json(v)); }

// The plan as `schedule --format json` prints it, written member by member: its work list
// is the large part (a work_info_set row of 8 per work), never built as a DOM.
void write_plan_members(JsonWriter& w, const RoutePlan& plan, const InvariantReport& inv) {
  const WorkList& wl = plan.work;
  w.field("planner", to_string(plan.planner));
  w.field("work_planner", wl.planner);
  w.field("kernel_route", to_string(plan.route));
  w.key("planned_view"), write_view(w, wl.planned_view);
  w.key("kernel_view"), write_view(w, plan.kernel_view);
  w.field("num_workgroups", wl.num_workgroups);
  w.key("work_indptr").int_array(wl.work_indptr);
  w.key("work_info_set").begin_array();
  for (const auto& x : wl.work_info) w.int_array(x.as_array());
  w.end_array();
  w.key("reduce_indptr").int_array(wl.reduce_indptr);
  w.key("reduce_final_map").begin_array();
  for (const auto& x : wl.reduce_final_map) w.int_array(x);
  w.end_array();
  w.key("reduce_partial_map").int_array(wl.reduce_partial_map);
  w.field("num_partial_rows", wl.num_partial_rows);
  if (plan.capacity) {
    const auto& m = *plan.capacity;
    w.key("buffers").value(nlohmann::ordered_json{
        {"work_indptr", {{"used", wl.work_indptr.size()}, {"capacity", m.work_indptr}}},
        {"work_info_set", {{"used", wl.work_info.size()}, {"capacity", m.work_info_set}}},
        {"reduce_indptr", {{"used", wl.reduce_indptr.size()}, {"capacity", m.reduce_indptr}}},
        {"reduce_final_map", {{"used", wl.reduce_final_map.size()}, {"capacity", m.reduce_final_map}}},
        {"reduce_partial_map", {{"used", wl.reduce_partial_map.size()}, {"capacity", m.reduce_partial_map}}}});
  }
  const auto& bal = inv.balance;
  w.key("balance").value(nlohmann::ordered_json{{"workgroups", bal.workgroups}, {"works", bal.works}, {"split_tiles", bal.split_tiles},
                                                {"max_load", bal.max_load}, {"mean_load", bal.mean_load}, {"efficiency", bal.efficiency}});
  // violations are capped (InvariantOptions::max_violations_listed): a small DOM
  auto viol = nlohmann::ordered_json::array();
  for (const auto& v : inv.violations)
    viol.push_back({{"kind", v.kind}, {"q_row", v.q_row}, {"kv_begin", v.kv_begin}, {"kv_end", v.kv_end}, {"work", v.work}, {"message", v.message}});
  w.key("invariants").value(nlohmann::ordered_json{{"ok", inv.ok}, {"total_violations", inv.total_violations}, {"violations", viol}});
  w.key("notes").value(nlohmann::ordered_json(plan.notes));
  // the stack's own arrays under their upstream names (vllm-cuda FlashMLA: num_sm_parts,
  // tile_scheduler_metadata rows of 8, num_splits); absent for AITER plans
  for (const auto& a : plan.stack_arrays) w.key(a.name), write_stack_array(w, a);
  if (!plan.schedule_words.empty()) w.key("schedule_words").value(nlohmann::ordered_json(plan.schedule_words));
}

nlohmann::ordered_json plan_json(const RoutePlan& plan, const InvariantReport& inv) {
  return json_from_writer([&](JsonWriter& w) {
    w.begin_object();
    write_plan_members(w, plan, inv);
    w.end_object();
  });
}

void write_stack_array(JsonWriter& w, const StackArray& a) {
  if (a.scalar && a.values.size() == 1) {
    w.value(a.values.front());
    return;
  }
  if (a.row_width <= 0) {
    w.int_array(a.values);
    return;
  }
  w.begin_array();
  for (size_t i = 0; i + a.row_width <= a.values.size(); i += a.row_width) {
    w.begin_array();
    for (size_t k = i; k < i + a.row_width; ++k) w.value(a.values[k]);
    w.end_array();
  }
  w.end_array();
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
      ->check(CLI::Validator(
          [](std::string& v) {
            // inf and nan pass PositiveNumber: only a finite time ends a hung executor (issue 39)
            try {
              return std::isfinite(std::stod(v)) ? std::string() : std::string("must be a finite number of seconds, got " + v);
            } catch (const std::exception&) {
              return std::string("must be a number of seconds, got " + v);
            }
          },
          "FINITE"))
      ->capture_default_str();
  sub->add_option("--executor-keep", a.keep_dir, "write the case directory under this folder and keep it (default: a temporary one, removed)");
}

std::string head_padding_text(const HeadPadding& hp, const RouteDecision& rd) {
  std::string t = std::to_string(hp.num_heads) + " -> " + std::to_string(hp.padded_heads) + " (" + hp.method + ")";
  if (rd.route != Route::refused && rd.padded_heads != hp.padded_heads)
    t += "; the routed kernel " + std::string(to_string(rd.route)) + " runs " + std::to_string(rd.padded_heads) + " heads, not the builder's map";
  return t;
}

}  // namespace mlactl::cli
