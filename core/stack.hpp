// A modelled serving stack (docs/design.md §1.3): everything that differs between, say,
// vLLM on ROCm with AITER and vLLM on CUDA with FlashMLA sits behind this interface, and
// every verb asks it (through route_batch in core/routed.hpp), never a stack's functions
// directly. Which stack a batch runs on is decided by the batch (core/stacks/registry.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/decode_metadata.hpp"
#include "core/kernel_windows.hpp"
#include "core/plan.hpp"
#include "core/planners/registry.hpp"
#include "core/route.hpp"
#include "core/semantics.hpp"

namespace mlactl {

enum class StackId { vllm_rocm_aiter, vllm_cuda };
const char* to_string(StackId s);  // "vllm-rocm-aiter", "vllm-cuda"
std::optional<StackId> stack_id_from_string(const std::string& s);

// One planner of a stack's registry: the routes whose own planner it is, and the
// routes `--planner` may run it on.
struct PlannerEntry {
  PlannerId id = PlannerId::aiter;
  std::vector<Route> default_for;
  std::vector<Route> serves;       // a route outside it makes `schedule --planner` plan with route_for_planner's
};

class Stack {
 public:
  virtual ~Stack() = default;
  virtual StackId id() const = 0;
  // e.g. "vLLM ROCm AITER MLA (aiter rules 2026.08 = e4048607)"
  virtual std::string title() const = 0;
  // Route ids this stack can answer with (what --kernel accepts for its batches).
  virtual const std::vector<Route>& routes() const = 0;
  // Defect ids (core/defects.hpp) this stack models.
  virtual const std::vector<std::string>& defect_ids() const = 0;

  // 1. The stack's builder: the metadata it hands the kernel. `with_flatten` adds the
  //    large per-row flattened lists (only needed when the route reads them).
  virtual DecodeMetadata build_metadata(const Batch& b, bool with_flatten) const = 0;
  virtual bool needs_flattened_metadata(Route r) const = 0;
  // 2. The router: a route and the predicate chain, or the refusal the stack raises.
  //    `forced` is --kernel (an id of routes()).
  virtual RouteDecision route(const Batch& b, const DecodeMetadata& md, std::optional<Route> forced) const = 0;
  // 3. The planners (a registry keyed by PlannerId), and the plan of a routed batch:
  //    index lists, the kernel's view, the planner's work list, the oracle's
  //    expectations. Throws Error(kExitUsage) for a planner that does not serve the route.
  virtual const std::vector<PlannerEntry>& planners() const = 0;
  virtual RoutePlan plan(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                         std::optional<PlannerId> planner) const = 0;
  // The route a planner runs with when `schedule --planner` asks for one that does not
  // serve the batch's own route.
  virtual Route route_for_planner(PlannerId p, const Batch& b, int64_t max_qo_len) const = 0;
  // What the verbs print of the batch's platform and planner, so that no verb tests the
  // arch to mean a stack: `validate`'s platform line ("sm90, 132 SMs, vLLM CUDA", ...),
  // what `schedule` adds after the planner's name (the AITER rules version, or nothing),
  // and whether the stack's builder computes min_kv_seq_len (`windows`).
  virtual std::string platform_text(const Batch& b) const = 0;
  virtual std::string planner_rules_text(const Batch& b) const = 0;
  virtual bool builds_min_kv_seq_len() const = 0;
  // The window each oracle row gets from the metadata the route's kernel reads (`windows`).
  virtual MetadataWindows metadata_windows(const Batch& b, const DecodeMetadata& md, Route route,
                                           const std::vector<RowWindow>& rows) const = 0;
};

// The registry entry of `p` in `s`, or nullptr when the stack has no such planner.
const PlannerEntry* find_planner(const Stack& s, PlannerId p);
// The planner whose own route `r` is (nullopt for refused).
std::optional<PlannerId> default_planner(const Stack& s, Route r);

}  // namespace mlactl
