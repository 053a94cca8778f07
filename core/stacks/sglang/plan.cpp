// Route -> planner -> kernel view for the SGLang stack (docs/stacks/sglang.md §S12-§S14):
// FA3's and FlashMLA's planners with SGLang's arguments, FlashInfer's MLAPlan, SGLang's
// Triton splits and its extend kernel, each turned into mlactl's one work-list format with
// the oracle's expectations.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/planners/planner_util.hpp"
#include "core/stacks/sglang/planners/flashinfer_mla.hpp"
#include "core/stacks/sglang/planners/flashinfer_mla_works.hpp"
#include "core/stacks/sglang/planners/triton_splits.hpp"
#include "core/stacks/sglang/router.hpp"
#include "core/stacks/sglang/section.hpp"
#include "core/stacks/sglang/stack.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

namespace mlactl::sglang {

const std::vector<PlannerEntry>& sglang_planner_registry() {
  static const std::vector<PlannerEntry> registry = {
      {PlannerId::fa3, {Route::flash_attn_mla}, {Route::flash_attn_mla}},
      {PlannerId::flashmla, {Route::flashmla}, {Route::flashmla}},
      {PlannerId::flashinfer_mla, {Route::flashinfer_mla}, {Route::flashinfer_mla}},
      {PlannerId::sglang_triton, {Route::triton_mla}, {Route::triton_mla}},
      {PlannerId::triton_extend, {Route::triton_extend}, {Route::triton_extend}},
  };
  return registry;
}

namespace {

// SGLang's Triton extend kernel (triton_ops/extend_attention.py@888a8794, §S7): one program
// per (request, q block, head) reads the request's prefix from the cache and its extend
// tokens, causal within the extend part, no KV split. As works: one per request over its
// whole list, causal from the end (row t sees the prefix and extend tokens <= t).
void plan_triton_extend(const DecodeMetadata& md, RoutePlan& p) {
  WorkList& wl = p.work;
  wl.planner = "triton_extend";
  wl.num_workgroups = (int)md.num_requests;
  wl.work_indptr.assign(1, 0);
  for (int64_t r = 0; r < md.num_requests; ++r) {
    WorkInfo w;
    w.batch_idx = (int32_t)r;
    w.qo_start = md.qo_indptr[(size_t)r];
    w.qo_end = md.qo_indptr[(size_t)r + 1];
    w.kv_start = md.paged_kv_indptr[(size_t)r];
    w.kv_end = md.paged_kv_indptr[(size_t)r + 1];
    wl.work_info.push_back(w);
    wl.work_indptr.push_back((int32_t)wl.work_info.size());
    planner_util::add_unsplit_tile(wl);
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_q_rows = md.qo_indptr.back();
  wl.planned_view = p.kernel_view;
  p.kv_indices = md.paged_kv_indices;
  p.uniform_qlen = md.uni_seqlen ? md.max_qo_len : 0;
}

// SGLang's Triton decode (§S7, §S13): num_kv_splits from get_num_kv_splits_triton, each
// request's one q row cut into splits of cdiv(cdiv(seq, splits), 32) * 32 tokens, empty
// splits dropped; the stage-2 kernel merges a row's splits. Programs are dealt to the SMs.
void plan_sglang_triton(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  const Section& s = section_of(b);
  SglangTritonSplitsInput in;
  in.seq_lens = md.seq_k;
  in.num_group = 1;
  in.num_head = b.model.num_heads;
  in.num_kv_head = (int)s.kv_heads_per_rank;
  const int base = b.platform.arch == Arch::sm90 ? kSglangTritonBaseKvSplits : kSglangTritonBaseKvSplitsHip;
  in.enable_deterministic = s.deterministic;
  in.max_kv_splits = sglang_triton_backend_max_kv_splits(base, true, b.platform.num_cu, s.max_context_len,
                                                         s.deterministic ? kSglangTritonDeterministicTile : 0);
  in.device_core_count = b.platform.num_cu;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> splits = sglang_triton_num_kv_splits(in);
  WorkList& wl = p.work;
  wl.planner = "sglang_triton";
  int64_t next_partial = 0;
  for (int64_t r = 0; r < md.num_requests; ++r) {
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (const SglangTritonKvRange& k : sglang_triton_split_kv_ranges(md.seq_k[(size_t)r], splits[(size_t)r], in.max_kv_splits))
      if (!k.empty()) chunks.emplace_back(k.start, k.end);
    planner_util::emit_row_chunks(wl, r, md.paged_kv_indptr[(size_t)r], md.seq_k[(size_t)r], chunks, next_partial);
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  planner_util::deal_works_evenly(wl, b.platform.num_cu);
  wl.num_partial_rows = next_partial;
  wl.num_q_rows = md.num_requests;
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.stack_arrays = {StackArray{"max_kv_splits", 0, true, {in.max_kv_splits}}, StackArray{"num_kv_splits", 0, false, {splits.begin(), splits.end()}}};
  p.notes.push_back("get_num_kv_splits_triton: max_kv_splits " + std::to_string(in.max_kv_splits) + " (base " + std::to_string(base) +
                    ", MLA cap over " + std::to_string(b.platform.num_cu) + " SMs and a " + std::to_string(s.max_context_len) + "-token context)");
  p.kv_indices = md.paged_kv_indices;
  p.row_indptr = md.paged_kv_indptr;
  p.kernel_view.q_layout = QLayout::flattened_rows;
  p.kernel_view.q_tokens_per_tile = 1;
  p.kernel_view.causal = false;  // a decode row sees its whole request
  wl.planned_view = p.kernel_view;
}

// BatchMLAPagedAttentionWrapper.plan -> MLAPlan over the builder's lists (§S4, §S12):
// page size 1, kv_len_arr = the KV each request attends, causal except in decode.
void plan_flashinfer(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  const Section& s = section_of(b);
  MlaPlanInput in;
  in.qo_indptr = md.qo_indptr;
  in.kv_indptr = md.paged_kv_indptr;
  for (int64_t len : md.seq_k) in.kv_len.push_back((int32_t)len);
  in.num_heads = b.model.num_heads;
  in.num_sm = b.platform.num_cu;
  in.causal = s.forward_mode != ForwardMode::decode;
  const auto t0 = std::chrono::steady_clock::now();
  const MlaPlan plan = flashinfer_mla_plan(in);
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  FlashinferMlaWorkInput wi;
  wi.qo_indptr = md.qo_indptr;
  wi.kv_list_indptr = md.paged_kv_indptr;
  wi.num_heads = b.model.num_heads;
  wi.causal = in.causal;
  p.work = flashinfer_mla_work_list(plan, wi);
  p.schedule_words = flashinfer_mla_words(plan, b.model.num_heads);
  auto flat = [](const std::string& name, const std::vector<int32_t>& v) { return StackArray{name, 0, false, {v.begin(), v.end()}}; };
  auto merge_prefix = [&](const std::vector<int32_t>& v) { return std::vector<int32_t>(v.begin(), v.begin() + plan.merge_cta_counter); };
  p.stack_arrays = {StackArray{"cluster_size", 0, true, {plan.cluster_size}},
                    StackArray{"kv_len_limit", 0, true, {plan.kv_len_limit}},
                    flat("cluster_work_indptr", plan.work_indptr),  // MLAPlan's work_indptr (mlactl's own is the work list's)
                    flat("q_indptr", plan.q_indptr),
                    flat("kv_indptr", plan.kv_indptr),
                    flat("partial_indptr", plan.partial_indptr),
                    flat("q_len", plan.q_len),
                    flat("kv_len", plan.kv_len),
                    flat("q_start", plan.q_start),
                    flat("kv_start", plan.kv_start),
                    flat("kv_end", plan.kv_end),
                    flat("merge_packed_offset_start", merge_prefix(plan.merge_packed_offset_start)),
                    flat("merge_packed_offset_end", merge_prefix(plan.merge_packed_offset_end)),
                    flat("merge_partial_packed_offset_start", merge_prefix(plan.merge_partial_packed_offset_start)),
                    flat("merge_partial_packed_offset_end", merge_prefix(plan.merge_partial_packed_offset_end)),
                    flat("merge_partial_stride", merge_prefix(plan.merge_partial_stride))};
  p.notes.push_back("MLAPlan: " + std::to_string(plan.num_clusters) + " clusters of " + std::to_string(plan.cluster_size) + " CTAs, tiles of " +
                    std::to_string(plan.cluster_tile_q) + " packed rows, KV chunks of " + std::to_string(plan.kv_len_limit) + ", " +
                    std::to_string(plan.total_num_works) + " works, " + std::to_string(plan.merge_cta_counter) + " merge CTAs" +
                    (in.causal ? "" : "; causal off (decode)"));
  p.kv_indices = md.paged_kv_indices;
  p.kernel_view.q_layout = QLayout::per_request;
  p.kernel_view.q_tokens_per_tile = p.work.planned_view.q_tokens_per_tile;
  p.kernel_view.causal = in.causal;
  p.uniform_qlen = md.uni_seqlen ? md.max_qo_len : 0;
}

}  // namespace

RoutePlan plan_sglang(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                      std::optional<PlannerId> planner) {
  const Stack& stack = sglang_stack();
  if (planner && !find_planner(stack, *planner)) {
    std::string names;
    for (const PlannerEntry& e : stack.planners()) names += std::string(names.empty() ? "" : ", ") + to_string(e.id);
    throw Error(kExitUsage, "", std::string("--planner ") + to_string(*planner) + " is not a planner of the sglang stack: " + names);
  }
  if (rd.route == Route::refused) throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + refusal_text(rd));
  const auto own = default_planner(stack, rd.route);
  if (!own)
    throw Error(kExitRefused, "", std::string("route ") + to_string(rd.route) + " (SGLang " + rd.backend +
                                      "): its planner is not modelled yet (docs/stacks/sglang.md lists what is)");
  if (planner && *planner != *own)
    throw Error(kExitUsage, "", std::string("--planner ") + to_string(*planner) + " does not plan route " + to_string(rd.route) +
                                    " of the sglang stack (its planner is " + to_string(*own) + ")");
  RoutePlan p;
  p.route = rd.route;
  p.planner = *own;
  p.user_rows = (int64_t)rows.size();
  p.heads = md.heads;
  p.kernel_view = vllm_cuda::cuda_base_view(b);
  const auto t0 = std::chrono::steady_clock::now();
  switch (rd.route) {
    case Route::flash_attn_mla: vllm_cuda::plan_fa3_route(b, md, p); break;
    case Route::flashmla: {
      // sglang-flashmla-kv-heads-from-config (sglang #5154, fixed by PR #5272): the backend
      // called get_mla_metadata(seq_lens, Q_LEN * H // num_kv_heads, num_kv_heads) with the
      // config's 16 KV heads, while FlashMLA's MLA kernel has one; it runs the parts planned
      std::optional<int> parts;
      if (b.has_defect("sglang-flashmla-kv-heads-from-config")) {
        constexpr int kConfigKvHeads = 16;
        const int64_t s_q = std::max<int64_t>(1, md.max_qo_len);
        parts = vllm_cuda::flashmla_num_sm_parts(b.platform.num_cu, kConfigKvHeads, s_q * b.model.num_heads / kConfigKvHeads);
        const int intended = vllm_cuda::flashmla_num_sm_parts(b.platform.num_cu, 1, s_q * b.model.num_heads);
        p.notes.push_back("get_mla_metadata given num_heads_k = 16 (kv heads read from the model config; FlashMLA's MLA has one): " +
                          std::to_string(*parts) + " SM parts where " + std::to_string(intended) + " fill the " + std::to_string(b.platform.num_cu) +
                          " SMs; the split kernel runs the parts planned (sglang #5154)");
      }
      vllm_cuda::plan_flashmla_route(b, md, p, parts);
      break;
    }
    case Route::flashinfer_mla: plan_flashinfer(b, md, p); break;
    case Route::triton_mla: plan_sglang_triton(b, md, p); break;
    case Route::triton_extend:
      p.kernel_view.q_layout = QLayout::per_request;
      p.kernel_view.causal = true;
      p.kernel_view.q_tokens_per_tile = (int)std::max<int64_t>(1, md.max_qo_len);
      plan_triton_extend(md, p);
      p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      break;
    default: break;
  }
  p.work.planned_view.head_dim = p.kernel_view.head_dim;
  p.work.planned_view.v_dim = p.kernel_view.v_dim;
  p.work.planned_view.q_dtype = p.kernel_view.q_dtype;
  p.work.planned_view.kv_dtype = p.kernel_view.kv_dtype;
  p.work.planned_view.page_size = 1;
  p.expectations = vllm_cuda::request_list_expectations(md, rows);
  for (const auto& n : p.work.notes) p.notes.push_back(n);
  return p;
}

}  // namespace mlactl::sglang
