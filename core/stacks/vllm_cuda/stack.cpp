#include "core/stacks/vllm_cuda/stack.hpp"

#include <algorithm>

namespace mlactl {

namespace {

class VllmCudaStack final : public Stack {
 public:
  StackId id() const override { return StackId::vllm_cuda; }
  std::string title() const override { return "vLLM CUDA MLA on sm90 (FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA, FLASHMLA_SPARSE)"; }
  const std::vector<Route>& routes() const override {
    static const std::vector<Route> r = {Route::flash_attn_mla, Route::flashmla, Route::triton_mla, Route::flashmla_sparse};
    return r;
  }
  const std::vector<std::string>& defect_ids() const override {
    static const std::vector<std::string> ids = {"flashmla-qlen-planned-as-one", "flashmla-stale-schedule", "flashmla-fp8-zero-pad",
                                                  "flashmla-no-work-marker", "triton-causal-per-request"};
    return ids;
  }
  ServingStack serving() const override { return ServingStack::vllm; }
  const std::vector<Arch>& arches() const override {
    static const std::vector<Arch> a = {Arch::sm90};
    return a;
  }
  bool reads_field(const std::string& pointer) const override {
    static const std::vector<std::string> read = {"/decode/causal",       "/decode/mtp_qlen",
                                                  "/decode/num_decode_tokens", "/decode/max_num_seqs",
                                                  "/decode/attention_backend", "/decode/max_num_splits",
                                                  "/sparse",              "/captured/tile_scheduler_metadata",
                                                  "/captured/num_splits", "/captured/seq_lens"};
    return std::find(read.begin(), read.end(), pointer) != read.end();
  }
  // vLLM's CUDA MLA backends take any positive count (docs/stacks/vllm-cuda.md §C3)
  std::optional<std::string> num_heads_error(int64_t) const override { return std::nullopt; }
  // vLLM's CUDA platform runs MLA with kernel block size 64 unless told otherwise (FlashMLA
  // accepts only 64; FA3 MLA any multiple of 16), docs/stacks/vllm-cuda.md §C2
  int default_block_size() const override { return 64; }
  std::string backend_field() const override { return "/decode/attention_backend"; }
  // Pads for the backend the batch itself selects; plan() re-pads for a --kernel route.
  DecodeMetadata build_metadata(const Batch& b, bool) const override {
    const auto r = vllm_cuda::batch_route(b);
    return vllm_cuda::build_cuda_decode(b, vllm_cuda::pad_values(r.value_or(Route::refused), b), r);
  }
  bool needs_flattened_metadata(Route) const override { return false; }
  RouteDecision route(const Batch& b, const DecodeMetadata&, std::optional<Route> forced) const override {
    return vllm_cuda::route_cuda(b, forced);
  }
  const std::vector<PlannerEntry>& planners() const override { return vllm_cuda::cuda_planner_registry(); }
  RoutePlan plan(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                 std::optional<PlannerId> planner) const override {
    return vllm_cuda::plan_cuda(b, md, rd, rows, planner);
  }
  Route route_for_planner(PlannerId p, const Batch&, int64_t) const override {
    switch (p) {
      case PlannerId::flashmla: return Route::flashmla;
      case PlannerId::fa3: return Route::flash_attn_mla;
      case PlannerId::triton: return Route::triton_mla;
      default: return Route::refused;
    }
  }
  std::string platform_text(const Batch& b) const override {
    return std::string(to_string(b.platform.arch)) + ", " + std::to_string(b.platform.num_cu) + " SMs, vLLM CUDA" +
           (b.decode.attention_backend ? std::string(", --attention-backend ") + to_string(*b.decode.attention_backend) : "");
  }
  std::string planner_rules_text(const Batch&) const override { return {}; }
  bool builds_min_kv_seq_len() const override { return false; }  // vLLM's CUDA builders have none
  MetadataWindows metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows) const override {
    return vllm_cuda::cuda_metadata_windows(b, md, route, rows);
  }
};

}  // namespace

const Stack& vllm_cuda_stack() {
  static const VllmCudaStack stack;
  return stack;
}

}  // namespace mlactl
