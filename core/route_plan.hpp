// Route -> planner and kernel view (docs/design.md §4 table): the one place that turns a
// batch, its decode metadata and a routing decision into a work list, the index
// list its KV ranges point into, and the view the route's kernel runs with.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/builder.hpp"
#include "core/invariants.hpp"
#include "core/router.hpp"
#include "core/semantics.hpp"
#include "core/worklist.hpp"

namespace mlactl {

// Planner names accepted by --planner.
const std::vector<std::string>& planner_names();  // aiter, gluon, gluon-split, triton, nonpersistent, sparse-rows
// The route whose own planner is `planner` (the inverse of the route -> planner
// table; gluon and gluon-split give the gluon route for the batch's max q_len).
Route route_for_planner(const std::string& planner, bool sparse, int64_t max_qo_len);

struct RoutePlan {
  Route route = Route::refused;
  std::string planner;               // planner that produced `work`
  WorkList work;
  KernelView kernel_view;            // what the route's kernel runs with
  std::vector<int32_t> kv_indices;   // token slots the works' kv ranges index
  std::vector<int32_t> row_indptr;   // flattened/sparse layouts: per view row [begin, end) into kv_indices
  HeadPadding heads;                 // raw -> kernel heads (identity on raw-head routes)
  int64_t uniform_qlen = 1;          // L for the fold layout
  int64_t user_rows = 0;             // oracle rows (incl. padding)
  // What each kernel q row must cover, derived from the ORACLE (not the metadata)
  // and expressed in index-list space; padding rows are not required.
  std::vector<RowExpectation> expectations;
  std::optional<MetadataInfo> capacity;  // get_mla_metadata_info_v1 sizes (aiter planner)
  std::vector<std::string> notes;
  double planner_ms = 0;             // the planner call alone (what AITER's host/GPU planner would cost)
};

// check_invariants over the plan's works under its kernel view, with the
// get_mla_metadata_info_v1 capacities (partial rows: reduce_partial_map x q_len, as
// mla.py sizes them) when the planner has them.
InvariantReport check_plan_invariants(const RoutePlan& plan, int64_t max_qo_len);

// Builds the plan. `planner` empty = the route's own planner (docs/design.md §4 table).
// Throws Error(kExitRefused) when the route is refused, Error(kExitUsage) for an
// unknown or inapplicable planner.
RoutePlan plan_route(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                     const std::string& planner = "");

}  // namespace mlactl
