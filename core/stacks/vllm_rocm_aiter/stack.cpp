#include "core/stacks/vllm_rocm_aiter/stack.hpp"

#include <algorithm>

#include "core/vllm_common.hpp"

#include "core/stacks/vllm_rocm_aiter/builder.hpp"
#include "core/stacks/vllm_rocm_aiter/route_input.hpp"
#include "core/stacks/vllm_rocm_aiter/router.hpp"

namespace mlactl {

namespace {

class VllmRocmAiterStack final : public Stack {
 public:
  StackId id() const override { return StackId::vllm_rocm_aiter; }
  std::string title() const override { return "vLLM ROCm AITER MLA (rocm_aiter_mla.py R1, aiter rules: platform.aiter, default 2026.08+4899)"; }
  const std::vector<Route>& routes() const override {
    static const std::vector<Route> r = {Route::gluon_decode, Route::gluon_verify, Route::asm_persistent, Route::asm_nonpersistent,
                                         Route::triton_mla,   Route::sparse_triton, Route::aiter_sparse};
    return r;
  }
  const std::vector<std::string>& defect_ids() const override {
    static const std::vector<std::string> ids = {"verify-window-broadcast", "causal-flag-dropped", "noncausal-probe-silent",
                                                 "sparse-route-legacy",     "pad-repeat-noop",     "pad-append-only",
                                                 "gluon-arch-ungated",      "metadata-dtype-omitted",
                                                 "metadata-sized-qlen1"};
    return ids;
  }
  ServingStack serving() const override { return ServingStack::vllm; }
  const std::vector<Arch>& arches() const override {
    static const std::vector<Arch> a = {Arch::gfx950, Arch::gfx942};  // gfx950 first: the default arch
    return a;
  }
  bool reads_field(const std::string& pointer) const override {
    static const std::vector<std::string> read = {"/platform/aiter",       "/platform/vllm", "/platform/aiter_has_causal_arg", "/decode/causal",
                                                  "/decode/small_head_mode", "/decode/mtp_qlen",            "/decode/num_decode_tokens",
                                                  "/decode/max_num_seqs",  "/sparse"};
    return std::find(read.begin(), read.end(), pointer) != read.end();
  }
  // rocm_aiter_mla.py's head-count rule (docs/stacks/vllm-rocm-aiter.md)
  std::optional<std::string> num_heads_error(int64_t n) const override {
    if (vllm::num_heads_valid(n)) return std::nullopt;
    return vllm::num_heads_error(n);
  }
  int default_block_size() const override { return 1; }
  DecodeMetadata build_metadata(const Batch& b, bool with_flatten) const override { return build_decode(b, with_flatten); }
  // Only the R0 verify flatten is large enough to build on demand.
  bool needs_flattened_metadata(Route r) const override { return r == Route::gluon_verify; }
  RouteDecision route(const Batch& b, const DecodeMetadata& md, std::optional<Route> forced) const override {
    RouteInput in = route_input_from_batch(b, md);
    if (forced) in.forced_route = to_string(*forced);
    return route_decode(in);
  }
  const std::vector<PlannerEntry>& planners() const override { return aiter_planner_registry(); }
  RoutePlan plan(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                 std::optional<PlannerId> planner) const override {
    return plan_route(b, md, rd, rows, planner);
  }
  Route route_for_planner(PlannerId p, const Batch& b, int64_t max_qo_len) const override {
    return aiter_route_for_planner(p, b.sparse.has_value(), max_qo_len);
  }
  std::string platform_text(const Batch& b) const override {
    return std::string(to_string(b.platform.arch)) + ", " + std::to_string(b.platform.num_cu) + " CUs, aiter " +
           to_string(b.platform.aiter) + (b.platform.aiter_has_causal_arg ? "" : " (no causal= argument)");
  }
  std::string planner_rules_text(const Batch& b) const override { return std::string("aiter rules ") + to_string(b.platform.aiter); }
  bool builds_min_kv_seq_len() const override { return true; }  // R1 and R0 (docs/stacks/vllm-rocm-aiter.md)
  MetadataWindows metadata_windows(const Batch& b, const DecodeMetadata& md, Route route,
                                   const std::vector<RowWindow>& rows) const override {
    return aiter_metadata_windows(b, md, route, rows);
  }
};

}  // namespace

const Stack& vllm_rocm_aiter_stack() {
  static const VllmRocmAiterStack stack;
  return stack;
}

}  // namespace mlactl
