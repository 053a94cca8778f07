// Helpers shared by the subcommands: the --kernel/--planner options and the
// routing step of the one pipeline (route -> plan -> execute -> compare).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/external_executor.hpp"
#include "cli/json_writer.hpp"
#include "core/batch.hpp"
#include "core/captured.hpp"
#include "core/decode_metadata.hpp"
#include "core/invariants.hpp"
#include "core/plan.hpp"
#include "core/route.hpp"

namespace mlactl::cli {

// --kernel ROUTE: forces a route (the ids of every modelled stack's routes).
void add_kernel_option(CLI::App* sub, std::string& kernel);

// --executor CMD, --executor-timeout S, --executor-keep DIR (run, check; docs/executor-protocol.md)
struct ExecutorArgs {
  std::string command, keep_dir;
  double timeout_s = kDefaultExecutorTimeoutS;
  std::optional<ExternalSpec> spec() const;  // unset without --executor
};
void add_executor_options(CLI::App* sub, ExecutorArgs& a);
// The --kernel value as a route (unset when not given; CLI11 has checked the id).
std::optional<Route> forced_route(const std::string& kernel);
// --planner NAME (one value) / NAME,NAME (several), checked against the planner ids.
std::optional<PlannerId> planner_option(const std::string& name);
nlohmann::ordered_json route_json(const RouteDecision& rd);
nlohmann::ordered_json view_json(const KernelView& v);
// The captured block's diff, the one shape `windows`, `schedule` and `run` print
// (`mlactl schema --output VERB`: #/$defs/captured_diff).
nlohmann::ordered_json captured_json(const CapturedDiff& c);
// The plan as `schedule --format json` prints it (expect.schedule in `check` is a subset):
// written member by member into an open object (the large arrays element by element),
// or as a DOM for `check` (built by the same writer).
void write_plan_members(JsonWriter& w, const RoutePlan& plan, const InvariantReport& inv);
nlohmann::ordered_json plan_json(const RoutePlan& plan, const InvariantReport& inv);
// A stack array: a scalar, a flat list, or rows of row_width.
void write_stack_array(JsonWriter& w, const StackArray& a);
// The metadata as `metadata --format json` prints it (after the envelope and "case").
void write_metadata_members(JsonWriter& w, const DecodeMetadata& md, bool with_flatten);
nlohmann::ordered_json metadata_json(const Batch& b, const DecodeMetadata& md, bool with_flatten);

// An option that takes one of an enum's names (as its to_string prints them): the
// value stored is the enum, the help shows {a,b,c}, and an unknown name is
// "--opt: NAME not in {a,b,c}" (as CLI::IsMember words it for string options).
template <typename Enum>
CLI::Validator enum_names(std::vector<std::pair<std::string, Enum>> names) {
  std::string set = "{";
  for (const auto& n : names) set += (set.size() > 1 ? "," : "") + n.first;
  set += "}";
  return CLI::Validator(
      [names, set](std::string& value) -> std::string {
        for (const auto& n : names)
          if (value == n.first) {
            value = std::to_string(static_cast<long long>(n.second));
            return std::string();
          }
        return value + " not in " + set;
      },
      set);
}

}  // namespace mlactl::cli
