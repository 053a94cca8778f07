#include "core/stacks/sglang/stack.hpp"

#include <algorithm>

#include "core/draft_tree.hpp"
#include "core/stacks/sglang/builder.hpp"
#include "core/stacks/sglang/router.hpp"
#include "core/stacks/sglang/section.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

namespace mlactl {

namespace {

class SglangStack final : public Stack {
 public:
  StackId id() const override { return StackId::sglang; }
  std::string title() const override {
    return "SGLang MLA decode (fa3, flashmla, flashinfer, triton on sm90; aiter, triton on ROCm; sglang @888a8794)";
  }
  const std::vector<Route>& routes() const override {
    static const std::vector<Route> r = {Route::flash_attn_mla, Route::flashmla,       Route::flashinfer_mla, Route::triton_mla,
                                         Route::triton_extend,  Route::asm_persistent, Route::asm_nonpersistent};
    return r;
  }
  const std::vector<std::string>& defect_ids() const override {
    static const std::vector<std::string> ids = {"sglang-flashmla-kv-heads-from-config", "sglang-flashinfer-tree-mask-dropped",
                                                 "flashinfer-causal-negative-kv-end", "sglang-eagle-stale-qo-indptr",
                                                 "sglang-flashmla-draft-extend-graph-state"};
    return ids;
  }
  ServingStack serving() const override { return ServingStack::sglang; }
  const std::vector<Arch>& arches() const override {
    static const std::vector<Arch> a = {Arch::sm90, Arch::gfx942, Arch::gfx950};
    return a;
  }
  // SGLang reads no vLLM knob; the AITER rules version applies to its aiter backend too
  bool reads_field(const std::string& pointer) const override { return pointer == "/platform/aiter"; }
  // any positive count: aiter's own limit is its refusal (docs/stacks/sglang.md §S2 R7)
  std::optional<std::string> num_heads_error(int64_t) const override { return std::nullopt; }
  int default_block_size() const override { return 1; }  // --page-size default (server_args.py _handle_page_size)
  std::optional<std::string> section_key() const override { return std::string("sglang"); }
  void parse_section(const nlohmann::json* section, bool block_size_given, Batch& b) const override {
    sglang::parse_section(section, block_size_given, b);
  }
  nlohmann::ordered_json section_schema() const override { return sglang::section_schema(); }
  std::string backend_field() const override { return "/sglang/attention_backend"; }

  DecodeMetadata build_metadata(const Batch& b, bool) const override {
    const RouteDecision rd = sglang::route_sglang(b, std::nullopt);
    return sglang::build_sglang(b, rd.route == Route::refused ? std::nullopt : sglang::backend_from_string(rd.backend));
  }
  bool needs_flattened_metadata(Route) const override { return false; }
  RouteDecision route(const Batch& b, const DecodeMetadata&, std::optional<Route> forced) const override {
    return sglang::route_sglang(b, forced);
  }
  const std::vector<PlannerEntry>& planners() const override { return sglang::sglang_planner_registry(); }
  RoutePlan plan(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                 std::optional<PlannerId> planner) const override {
    return sglang::plan_sglang(b, md, rd, rows, planner);
  }
  Route route_for_planner(PlannerId p, const Batch&, int64_t) const override {
    for (const PlannerEntry& e : planners())
      if (e.id == p && !e.default_for.empty()) return e.default_for.front();
    return Route::refused;
  }
  std::string platform_text(const Batch& b) const override {
    const auto& s = sglang::section_of(b);
    return std::string(to_string(b.platform.arch)) + ", " + std::to_string(b.platform.num_cu) + (b.platform.arch == Arch::sm90 ? " SMs" : " CUs") +
           ", SGLang " + to_string(s.forward_mode) +
           (s.attention_backend ? std::string(", --attention-backend ") + sglang::to_string(*s.attention_backend) : "");
  }
  std::string planner_rules_text(const Batch&) const override { return {}; }
  bool builds_min_kv_seq_len() const override { return false; }
  // every SGLang kernel aligns a request's query rows to the end of its KV (§S9)
  // every SGLang kernel aligns a request's query rows to the end of its KV (§S9); a tree
  // row's metadata (the custom mask, FA3's expand-pass page table) gives it the prefix and
  // the drafts its tree allows: compared by count, as a set
  MetadataWindows metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows) const override {
    MetadataWindows mw = vllm_cuda::cuda_metadata_windows(b, md, route == Route::triton_mla ? Route::triton_mla : Route::flash_attn_mla, rows);
    if (!mw.available) return mw;
    for (size_t i = 0; i < rows.size(); ++i) {
      const Request& q = b.requests[(size_t)rows[i].request];
      if (q.draft_parents.empty()) continue;
      const auto cols = draft_allowed_columns(DraftTree{q.draft_parents});
      mw.begin[i] = 0;
      mw.end[i] = q.context_len + (int64_t)cols[(size_t)rows[i].token].size();
    }
    return mw;
  }
};

}  // namespace

const Stack& sglang_stack() {
  static const SglangStack stack;
  return stack;
}

}  // namespace mlactl
