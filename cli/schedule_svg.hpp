// `schedule --format svg`: the split-KV plan as a picture (docs/design.md §6). Plain SVG
// written here, no library: workgroups are lanes, each work a bar over its KV range
// [kv_start, kv_end) of the index list, coloured by request; split partials are dashed
// and labelled with their reduce group; each lane's load (KV entries it reads) is a bar
// on the right, red when the lane is overloaded.
#pragma once
#include <string>
#include <vector>

#include "core/invariants.hpp"
#include "core/plan.hpp"

namespace mlactl::cli {

struct SchedulePanel {
  const RoutePlan* plan;
  const InvariantReport* inv;
};

// A lane is overloaded when its load exceeds the mean by this factor.
constexpr double kOverloadFactor = 1.25;

// One SVG document with a panel per plan (several with `--planner a,b`).
std::string schedule_svg(const std::string& case_name, const std::vector<SchedulePanel>& panels);

}  // namespace mlactl::cli
