// The vLLM CUDA MLA stack on Hopper (docs/stacks/vllm-cuda.md): vLLM's CUDA backend
// selection over FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA and FLASHMLA_SPARSE, the common MLA
// builder's decode rows, and FlashMLA's / Triton's schedules, behind core/stack.hpp.
// This header names the stack's entry points; the rest of the code reaches them through
// the Stack interface (tests call them directly).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/stack.hpp"

namespace mlactl {

const Stack& vllm_cuda_stack();

namespace vllm_cuda {

// cudagraph padding values a backend's builder asks for (tests/v1/attention/test_cg_padding.py):
// seq_len 0 and block id -1 by default, 1 and 0 for FlashMLA fp8.
struct PadValues {
  int64_t seq_len = 0;
  int32_t block_id = -1;
};
PadValues pad_values(Route r, const Batch& b);

// The common MLA builder's decode rows for the batch (every request is a decode row;
// padding slots get `pad`), plus FlashMLA's schedule when `route` is flashmla.
DecodeMetadata build_cuda_decode(const Batch& b, PadValues pad, std::optional<Route> route);

// vLLM's selection for the batch (--attention-backend / decode.attention_backend, or
// --kernel as `forced`), with the predicate chain; refusals carry vLLM's error.
RouteDecision route_cuda(const Batch& b, std::optional<Route> forced);

// The route the batch's own selection gives, refusals excluded (what the builder pads for).
std::optional<Route> batch_route(const Batch& b);

RoutePlan plan_cuda(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                    std::optional<PlannerId> planner);
// The route planners plan_cuda runs, for a stack that hands the same kernels its own
// metadata (SGLang, docs/stacks/sglang.md §S14): FlashMLA's get_mla_metadata and split
// walk, FA3's scheduler and tiles, over md's qo_indptr / paged_kv_indptr / seq_k.
KernelView cuda_base_view(const Batch& b);
// `planned_parts`: the num_sm_parts get_mla_metadata was asked for when the caller's stack
// computes it otherwise (the kernel runs the schedule's parts).
void plan_flashmla_route(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> planned_parts = std::nullopt);
// `num_splits`: what the caller's stack passes FA3 (0 = its heuristic) in place of decode.max_num_splits.
void plan_fa3_route(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> num_splits = std::nullopt);
// The ORACLE's expectations over per-request lists: q row qo_indptr[r] + t covers its
// window's entries of request r's list (the request's positions [0, seq_len) in order).
std::vector<RowExpectation> request_list_expectations(const DecodeMetadata& md, const std::vector<RowWindow>& rows);
MetadataWindows cuda_metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows);
const std::vector<PlannerEntry>& cuda_planner_registry();

}  // namespace vllm_cuda
}  // namespace mlactl
