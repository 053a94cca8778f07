// Helpers shared by the subcommands: the --kernel/--planner options and the
// routing step of the one pipeline (route -> plan -> execute -> compare).
#pragma once
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/batch.hpp"
#include "core/builder.hpp"
#include "core/invariants.hpp"
#include "core/route_plan.hpp"
#include "core/router.hpp"

namespace mlactl::cli {

void add_kernel_option(CLI::App* sub, std::string& kernel);
// route_decode on the batch, with --kernel forcing a route when given.
RouteDecision decide_route(const Batch& b, const DecodeMetadata& md, const std::string& forced_kernel);
nlohmann::ordered_json route_json(const RouteDecision& rd);
nlohmann::ordered_json view_json(const KernelView& v);
// The plan as `schedule --format json` prints it (expect.schedule in `check` is a subset).
nlohmann::ordered_json plan_json(const RoutePlan& plan, const InvariantReport& inv);
nlohmann::ordered_json metadata_json(const Batch& b, const DecodeMetadata& md, bool with_flatten);

}  // namespace mlactl::cli
