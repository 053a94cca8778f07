// A modelled serving stack (docs/design.md §1.3): everything that differs between, say,
// vLLM on ROCm with AITER and vLLM on CUDA with FlashMLA sits behind this interface, and
// every verb asks it (through route_batch in core/routed.hpp), never a stack's functions
// directly. Which stack a batch runs on is decided by the batch: platform.stack and
// platform.arch, through the registry (core/stacks/registry.hpp).
#pragma once
#include <memory>
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

enum class StackId { vllm_rocm_aiter, vllm_cuda, sglang };
const char* to_string(StackId s);  // "vllm-rocm-aiter", "vllm-cuda", "sglang"
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

  // 0. The batch as this stack reads it. The registry's key: the serving stack modelled
  //    and the archs it is modelled on.
  virtual ServingStack serving() const = 0;
  virtual const std::vector<Arch>& arches() const = 0;
  //    Which of the stack-owned fields outside any stack section (core/batch.cpp
  //    kStackOwnedFields: vLLM's knobs, kept where batch files have always had them) this
  //    stack reads; a batch giving one its stack does not read is refused naming it.
  virtual bool reads_field(const std::string& pointer) const = 0;
  //    The head counts the stack's builder accepts at all (a route's own limits are its
  //    router's refusals): the error, or nullopt.
  virtual std::optional<std::string> num_heads_error(int64_t num_heads) const = 0;
  //    kv_cache.block_size when the batch gives none (the stack's default page size).
  virtual int default_block_size() const = 0;
  //    The stack's own section of the batch (`/sglang`), or nullopt; parse_section reads
  //    it (null when absent) once the rest of the batch but the block table is parsed,
  //    sets Batch::stack_section and may resolve generic fields the stack derives (its
  //    causal flag from the forward mode, the page size its backend forces unless
  //    `block_size_given`). section_schema is its JSON Schema for `mlactl schema`.
  virtual std::optional<std::string> section_key() const { return std::nullopt; }
  virtual void parse_section(const nlohmann::json* section, bool block_size_given, Batch& b) const {
    (void)section, (void)block_size_given, (void)b;
  }
  virtual nlohmann::ordered_json section_schema() const { return nullptr; }
  //    Where `--attention-backend` writes its value (a JSON pointer such as
  //    "/decode/attention_backend"), and the names it takes; empty when the stack has no
  //    backend switch.
  virtual std::string backend_field() const { return {}; }

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
// `--planner P` on stack s: P must be one of the stack's planners (a usage error naming them
// otherwise). For a stack that runs each route's own planner only, also P == the route's
// own (route_planner: the planner to run, or nullopt when the route has none).
void require_stack_planner(const Stack& s, std::optional<PlannerId> p);
std::optional<PlannerId> route_planner(const Stack& s, Route r, std::optional<PlannerId> p);

}  // namespace mlactl
