// Route -> planner -> kernel view for the vLLM CUDA stack (docs/stacks/vllm-cuda.md §C4-§C6):
// FlashMLA's get_mla_metadata over the decode rows' seq_lens, walked the way its split
// kernel walks it; TRITON_MLA's fixed split over one row per request. Every plan comes out
// in mlactl's one work-list format with the oracle's expectations.
#include <algorithm>
#include <chrono>

#include "core/planners/row_plan.hpp"
#include "core/stacks/vllm_cuda/backends.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/schedule_arrays.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"
#include "core/vllm_common.hpp"

namespace mlactl::vllm_cuda {

const std::vector<PlannerEntry>& cuda_planner_registry() {
  static const std::vector<PlannerEntry> registry = {
      {PlannerId::flashmla, {Route::flashmla}, {Route::flashmla}},
      {PlannerId::fa3, {Route::flash_attn_mla}, {Route::flash_attn_mla}},
      {PlannerId::triton, {Route::triton_mla}, {Route::triton_mla}},
  };
  return registry;
}

namespace {

// vLLM CUDA TRITON_MLA: num_kv_splits = 4 (1 under batch invariance), triton_mla.py@0155494
constexpr int kTritonKvSplits = 4;

KernelView base_view(const Batch& b) {
  KernelView kv;
  kv.heads = b.model.num_heads;
  kv.fold_ratio = 1;
  kv.head_dim = b.head_dim();
  kv.v_dim = b.model.kv_lora_rank;
  kv.q_dtype = b.decode.q_dtype;
  kv.kv_dtype = b.kv_cache.dtype;
  kv.page_size = 1;
  return kv;
}

void plan_flashmla(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  const int s_q = (int)std::max<int64_t>(1, md.max_qo_len);
  // flashmla-qlen-planned-as-one (vLLM PR #27368): get_mla_metadata given the q_len-1 token
  // count while the kernel runs s_q > 1. The kernel takes num_sm_parts from the schedule's
  // shape (tile_scheduler_metadata.size(0)), so it runs every planned part: the output is
  // right, the grid is num_sm_parts x q tiles CTAs, more than the SMs.
  const bool qlen_one = b.has_defect("flashmla-qlen-planned-as-one");
  const int64_t tokens = (int64_t)s_q * b.model.num_heads;  // num_q_tokens_per_head_k (h_kv 1)
  const int parts = flashmla_num_sm_parts(b.platform.num_cu, 1, qlen_one ? b.model.num_heads : tokens);
  const int intended = flashmla_num_sm_parts(b.platform.num_cu, 1, tokens);
  const auto t0 = std::chrono::steady_clock::now();
  // flashmla-stale-schedule (vLLM PR #35175): the replay executes the schedule captured for
  // other seq_lens; modelled as the previous decode step's (every request q_len shorter)
  const bool stale = b.has_defect("flashmla-stale-schedule");
  std::vector<int64_t> planned_lens = md.seq_k;
  if (stale)
    for (int64_t r = 0; r < md.num_requests; ++r)
      if (!b.requests[r].padding) planned_lens[r] = std::max<int64_t>(0, md.seq_k[r] - md.qo_len[r]);
  FlashMlaSchedule s = flashmla_get_mla_metadata(planned_lens, parts, schedule_marker(b));
  // run --use-captured: the kernel runs the captured schedule (and seq_lens) instead
  const StackArray* cap_tsm = nullptr;
  const StackArray* cap_ns = nullptr;
  const StackArray* cap_sl = nullptr;
  for (const auto& a : md.captured_arrays) {
    if (a.name == "tile_scheduler_metadata") cap_tsm = &a;
    if (a.name == "num_splits") cap_ns = &a;
    if (a.name == "seq_lens") cap_sl = &a;
  }
  std::vector<int64_t> kernel_lens = md.seq_k;
  if (cap_tsm || cap_ns || cap_sl) {
    const size_t R = (size_t)md.num_requests;
    if (cap_ns) {
      if (cap_ns->values.size() < R + 1)
        throw invalid_input("/captured/num_splits", "has " + std::to_string(cap_ns->values.size()) + " entries, fewer than the batch's " + std::to_string(R + 1));
      s.num_splits.assign(cap_ns->values.begin(), cap_ns->values.begin() + (ptrdiff_t)(R + 1));
    }
    if (cap_tsm) {
      // the kernel runs num_sm_parts rows (a dump of vLLM's (num_sms, 8) buffer carries a stale tail)
      const size_t rows = std::min<size_t>(cap_tsm->values.size() / 8, (size_t)parts);
      if (rows < (size_t)parts)
        p.notes.push_back("captured tile_scheduler_metadata has " + std::to_string(rows) + " rows, fewer than the kernel's " + std::to_string(parts) + " SM parts");
      s.tile_scheduler_metadata.assign(rows, {});
      for (size_t i = 0; i < rows; ++i)
        for (int k = 0; k < 8; ++k) s.tile_scheduler_metadata[i][k] = (int32_t)cap_tsm->values[i * 8 + k];
    }
    if (cap_sl) {
      if (cap_sl->values.size() < R)
        throw invalid_input("/captured/seq_lens", "has " + std::to_string(cap_sl->values.size()) + " entries, fewer than the batch's " + std::to_string(R) + " requests");
      kernel_lens.assign(cap_sl->values.begin(), cap_sl->values.begin() + (ptrdiff_t)R);
    }
    p.notes.push_back("executing the captured schedule (tile_scheduler_metadata, num_splits, seq_lens where captured) instead of get_mla_metadata's");
  }
  if (stale)
    p.notes.push_back("the kernel executes a stale schedule, planned for seq_lens one decode step shorter, against this step's seq_lens (vLLM PR #35175)");
  FlashMlaWorkInput in;
  in.kernel_seqlens = kernel_lens;
  in.kv_indptr = md.paged_kv_indptr;
  in.qo_indptr = md.qo_indptr;
  in.s_q = s_q;
  in.heads = b.model.num_heads;
  in.kernel_parts = (int)s.tile_scheduler_metadata.size();
  p.work = flashmla_work_list(s, in);
  if (cap_tsm || cap_ns || cap_sl) {
    p.planner = PlannerId::captured;
    p.work.planner = "captured_flashmla_schedule";
  }
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.stack_arrays = flashmla_arrays(s);
  p.schedule_words = flashmla_words(s, planned_lens);
  const int64_t m_tiles = (tokens + kFlashMlaBlockM - 1) / kFlashMlaBlockM;
  const int64_t ctas = (int64_t)parts * m_tiles;
  p.stack_arrays.push_back({"split_kernel_ctas", 0, true, {ctas}});
  p.notes.push_back("split kernel grid: " + std::to_string(parts) + " SM parts x " + std::to_string(m_tiles) + " q tile(s) of 64 rows = " +
                    std::to_string(ctas) + " CTAs on " + std::to_string(b.platform.num_cu) + " SMs");
  if (parts != intended)
    p.notes.push_back("get_mla_metadata planned " + std::to_string(parts) + " SM parts for q_len 1, but the kernel runs q_len " +
                      std::to_string(s_q) + " (" + std::to_string(tokens) + " q rows per KV head, " + std::to_string(m_tiles) +
                      " tiles): its grid is " + std::to_string(ctas) + " CTAs, " + std::to_string((ctas + b.platform.num_cu - 1) / b.platform.num_cu) +
                      " waves on " + std::to_string(b.platform.num_cu) + " SMs, where " + std::to_string(intended) + " parts would give one (vLLM PR #27368)");
  p.kv_indices = md.paged_kv_indices;
  p.kernel_view.q_layout = QLayout::per_request;
  p.kernel_view.q_tokens_per_tile = s_q;
  p.kernel_view.causal = true;  // causal=True always; FlashMLA drops it at s_q 1 (same windows)
  p.uniform_qlen = s_q;
}

void plan_triton(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  // q_len 1 (SINGLE_ONLY, checked by the router): one row per request over [0, seq_len)
  RowPlanInput in;
  in.row_indptr = md.paged_kv_indptr;
  in.heads = p.kernel_view.heads;
  in.num_cu = b.platform.num_cu;  // a grid launch: programs dealt to the SMs in order
  const auto t0 = std::chrono::steady_clock::now();
  p.work = plan_triton_splits(in, kTritonKvSplits);
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.work.planner = "triton_fixed_4";
  p.kv_indices = md.paged_kv_indices;
  p.row_indptr = md.paged_kv_indptr;
  p.kernel_view.q_layout = QLayout::flattened_rows;
  p.kernel_view.q_tokens_per_tile = 1;
  p.kernel_view.causal = false;  // a row's list is its causal window already (q_len 1)
}

}  // namespace

RoutePlan plan_cuda(const Batch& b, const DecodeMetadata& md_in, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                    std::optional<PlannerId> planner) {
  if (planner && !find_planner(vllm_cuda_stack(), *planner))
    throw Error(kExitUsage, "", std::string("--planner ") + to_string(*planner) +
                                    " is not a planner of the vllm-cuda stack (platform.arch sm90): flashmla, fa3, triton");
  if (rd.route == Route::refused) throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + refusal_text(rd));
  if (rd.route == Route::flashmla_sparse)
    throw Error(kExitRefused, "", "flashmla_sparse: FLASHMLA_SPARSE's schedule is not modelled yet (mlactl models the vLLM CUDA stack's sparse route up to routing)");
  RoutePlan p;
  p.route = rd.route;
  p.user_rows = (int64_t)rows.size();
  const auto own = default_planner(vllm_cuda_stack(), rd.route);
  if (!own) throw Error(kExitUsage, "", std::string("route ") + to_string(rd.route) + " has no planner");
  if (planner && *planner != *own)
    throw Error(kExitUsage, "", std::string("--planner ") + to_string(*planner) + " does not plan route " + to_string(rd.route) +
                                    " of the vllm-cuda stack (its planner is " + to_string(*own) + ")");
  p.planner = *own;
  if (rd.route == Route::flash_attn_mla)
    throw Error(kExitRefused, "", "flash_attn_mla: FA3's scheduler (get_scheduler_metadata, num_splits per batch) is not modelled yet");

  // the padding contract: the route's own pad values, before planning (vLLM PR #28579)
  DecodeMetadata md_route;
  const DecodeMetadata* mdp = &md_in;
  const PadValues pad = pad_values(rd.route, b);
  if (b.num_padding() > 0) {
    bool differs = false;
    for (int64_t r = 0; r < md_in.num_requests; ++r)
      if (b.requests[r].padding && md_in.seq_k[r] != pad.seq_len) differs = true;
    if (differs) {
      md_route = build_cuda_decode(b, pad, rd.route);
      md_route.captured_arrays = md_in.captured_arrays;
      mdp = &md_route;
    }
  }
  const DecodeMetadata& md = *mdp;
  p.heads = identity_heads(b.model.num_heads);
  p.kernel_view = base_view(b);
  if (rd.route == Route::flashmla) plan_flashmla(b, md, p);
  else plan_triton(b, md, p);
  p.work.planned_view.head_dim = p.kernel_view.head_dim;
  p.work.planned_view.v_dim = p.kernel_view.v_dim;
  p.work.planned_view.q_dtype = p.kernel_view.q_dtype;
  p.work.planned_view.kv_dtype = p.kernel_view.kv_dtype;
  p.work.planned_view.page_size = 1;

  // expectations from the ORACLE: q row qo_indptr[r] + t covers its window's entries of
  // request r's list (the list is the request's positions [0, seq_len) in order)
  p.expectations.reserve(rows.size());
  for (const RowWindow& w : rows) {
    RowExpectation e;
    e.q_row = md.qo_indptr[w.request] + w.token;
    e.kv_begin = md.paged_kv_indptr[w.request] + (w.kind == MaskKind::padding ? 0 : w.begin);
    e.kv_end = w.kind == MaskKind::padding ? e.kv_begin : md.paged_kv_indptr[w.request] + w.end;
    e.required = w.kind != MaskKind::padding;
    p.expectations.push_back(e);
  }
  for (const auto& n : p.work.notes) p.notes.push_back(n);
  return p;
}

MetadataWindows cuda_metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows) {
  MetadataWindows mw;
  if (route == Route::refused || route == Route::flashmla_sparse) return mw;
  mw.available = true;
  mw.path = route == Route::triton_mla ? "seq_lens[r] per row (q_len 1)"
                                       : "seq_lens[r] with the kernel's causal mask right-aligned in the q_len tokens: s - (q_len - 1 - t)";
  (void)b;
  for (const RowWindow& w : rows) {
    const int64_t s = md.seq_k[w.request], q = md.qo_len[w.request];
    mw.begin.push_back(0);
    mw.end.push_back(route == Route::triton_mla ? s : vllm::causal_prefix_length(s, q, w.token));
  }
  return mw;
}

}  // namespace mlactl::vllm_cuda
