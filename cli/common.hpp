// Helpers shared by the subcommands: the --kernel/--planner options and the
// routing step of the one pipeline (route -> plan -> execute -> compare).
#pragma once
#include <optional>
#include <string>
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
// The "head padding" line `metadata` and `route` print alike: the builder's map
// (`12 -> 16 (tile_slice)`) and, where the routed kernel runs another head count (Gluon
// runs the model's 12), that too: one batch reads the same in both verbs.
std::string head_padding_text(const HeadPadding& builder, const RouteDecision& rd);
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

// An option that takes one of an enum's names: `values` (their to_string names) in the
// help as {a,b,c}, parsed by the enum's own from_name; the value stored is the enum,
// and an unknown name is "--opt: NAME not in {a,b,c}" (as CLI::IsMember words it).
template <typename Enum, size_t N>
CLI::Validator enum_names(const Enum (&values)[N], std::optional<Enum> (*from_name)(const std::string&)) {
  std::string set = "{";
  for (Enum v : values) set += (set.size() > 1 ? "," : "") + std::string(to_string(v));
  set += "}";
  return CLI::Validator(
      [from_name, set](std::string& value) -> std::string {
        const std::optional<Enum> e = from_name(value);
        if (!e) return value + " not in " + set;
        value = std::to_string(static_cast<long long>(*e));
        return std::string();
      },
      set);
}

}  // namespace mlactl::cli
