// Route -> planner -> kernel view for the vLLM CUDA stack (docs/stacks/vllm-cuda.md §C4-§C6):
// FlashMLA's get_mla_metadata over the decode rows' seq_lens, walked the way its split
// kernel walks it; TRITON_MLA's fixed split over one row per request. Every plan comes out
// in mlactl's one work-list format with the oracle's expectations.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "core/planners/row_plan.hpp"
#include "core/stacks/vllm_cuda/backends.hpp"
#include "core/stacks/vllm_cuda/captured_flashmla.hpp"
#include "core/stacks/vllm_cuda/planners/fa3.hpp"
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

// flashmla-fp8-zero-pad (vLLM PR #35969): the fp8 kernel
// (vllm-project/FlashMLA csrc/extension/sm90/dense_fp8/flash_fwd_mla_kernel.h@46d64a8,
// compute_attn_1rowblock_splitkv_mla) starts every (part, request) segment at n_block =
// n_block_max - 1 and, before its block loop, reads block_table[r][n_block] and copies the
// 64 K rows of that block. At seq_len 0 that is block_table[r][-1]: the last column of the
// row before in vLLM's [max_num_reqs, max_blocks] table (zero-initialised, padding rows -1),
// and a block id of -1 is a negative KV offset. Each such segment becomes a work over the
// 64 slots the kernel reads, appended to the index list; its rows are padding (never compared),
// so what shows is the read itself: a slot outside the cache is the illegal memory access.
void fp8_zero_length_reads(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  const int64_t Kb = b.kv_cache.block_size;
  int64_t width = 1;
  for (const auto& row : b.kv_cache.block_table) width = std::max<int64_t>(width, (int64_t)row.size());
  const PadValues pad = pad_values(Route::flashmla, b);
  auto table_entry = [&](int64_t r, int64_t col) -> std::optional<int64_t> {
    const int64_t flat = r * width + col;
    if (flat < 0) return std::nullopt;  // before the tensor
    const int64_t rr = flat / width, cc = flat % width;
    if (b.requests[(size_t)rr].padding) return pad.block_id;
    const auto& row = b.kv_cache.block_table[(size_t)rr];
    return cc < (int64_t)row.size() ? (int64_t)row[(size_t)cc] : 0;
  };
  for (int g = 0; g < p.work.num_workgroups; ++g)
    for (int32_t w = p.work.work_indptr[g]; w < p.work.work_indptr[g + 1]; ++w) {
      WorkInfo& x = p.work.work_info[(size_t)w];
      const int64_t r = x.batch_idx;
      if (md.seq_k[(size_t)r] != 0) continue;
      const auto blk = table_entry(r, -1);
      std::string what = "SM part " + std::to_string(g) + ", padding slot " + std::to_string(r) + " (seq_len 0): the fp8 kernel reads block_table[" +
                         std::to_string(r) + "][-1]";
      if (!blk) {
        p.notes.push_back(what + ", before the block table's first entry (not modelled further)");
        continue;
      }
      what += " = " + std::to_string(*blk) + (r > 0 ? " (row " + std::to_string(r - 1) + ", column " + std::to_string(width - 1) + ")" : "") +
              " and copies 64 K rows at slot " + std::to_string(*blk * Kb);
      p.notes.push_back(what + (*blk < 0 ? ": a negative KV offset, an illegal memory access" : ": another block's KV, read and discarded"));
      x.kv_start = (int32_t)p.kv_indices.size();
      for (int64_t j = 0; j < kFlashMlaBlockN; ++j) p.kv_indices.push_back((int32_t)(*blk * Kb + j));
      x.kv_end = (int32_t)p.kv_indices.size();
      x.kv_offset = 0;
    }
}

void plan_flashmla(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> planned_parts = std::nullopt) {
  const int s_q = (int)std::max<int64_t>(1, md.max_qo_len);
  // flashmla-qlen-planned-as-one (vLLM PR #27368): get_mla_metadata given the q_len-1 token
  // count while the kernel runs s_q > 1. The kernel takes num_sm_parts from the schedule's
  // shape (tile_scheduler_metadata.size(0)), so it runs every planned part: the output is
  // right, the grid is num_sm_parts x q tiles CTAs, more than the SMs.
  const bool qlen_one = b.has_defect("flashmla-qlen-planned-as-one");
  const int64_t tokens = (int64_t)s_q * b.model.num_heads;  // num_q_tokens_per_head_k (h_kv 1)
  const int parts = planned_parts ? *planned_parts : flashmla_num_sm_parts(b.platform.num_cu, 1, qlen_one ? b.model.num_heads : tokens);
  const int intended = flashmla_num_sm_parts(b.platform.num_cu, 1, tokens);
  const auto t0 = std::chrono::steady_clock::now();
  // flashmla-stale-schedule (vLLM PR #35175): the replay executes the schedule captured for
  // other seq_lens; modelled as the previous decode step's (every request q_len shorter)
  const bool stale = b.has_defect("flashmla-stale-schedule");
  std::vector<int64_t> planned_lens = md.seq_k;
  if (stale)
    for (int64_t r = 0; r < md.num_requests; ++r)
      if (!b.requests[r].padding) planned_lens[r] = std::max<int64_t>(0, md.seq_k[r] - md.qo_len[r]);
  FlashMlaSchedule s = flashmla_vllm_schedule(b, planned_lens, parts);
  const int64_t planned_b = metadata_batch_size(b);
  if (planned_b < md.num_requests) {
    // flashmla-no-work-marker: what the upstream kernel does with the smaller batch's rows
    int first = -1, last = -1;
    for (int i = 0; i < (int)s.tile_scheduler_metadata.size(); ++i)
      if (s.tile_scheduler_metadata[i][0] == planned_b) {
        if (first < 0) first = i;
        last = i;
      }
    if (first >= 0)
      p.notes.push_back("SM parts " + std::to_string(first) + ".." + std::to_string(last) + " have no work and begin_req " + std::to_string(planned_b) +
                        " (the metadata's batch size), below the kernel's params.b = " + std::to_string(md.num_requests) +
                        ": they pass its `begin_idx >= params.b` return, copy the q of padding slot " + std::to_string(planned_b) +
                        " and walk nothing (vLLM's fork marks them -1 and returns)");
    p.notes.push_back("num_splits is padded with its last value (0 splits for padding slots " + std::to_string(planned_b) + ".." +
                      std::to_string(md.num_requests - 1) + "): upstream's combine skips only num_splits == 1, so it runs for them over zero partials "
                      "(the fork skips <= 1); padding slots get no split-kernel work, their rows are never compared");
  }
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
    if (cap_sl && cap_sl->values.size() >= R) kernel_lens.assign(cap_sl->values.begin(), cap_sl->values.begin() + (ptrdiff_t)R);
    // a plan of this batch before anything runs it (docs/stacks/vllm-cuda.md §C12)
    validate_flashmla_captured(b, kernel_lens, parts, s.encoding, cap_tsm, cap_ns, cap_sl);
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
  p.kv_indices = md.paged_kv_indices;
  if (b.has_defect("flashmla-fp8-zero-pad") && b.kv_cache.dtype == DType::fp8) fp8_zero_length_reads(b, md, p);
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
  if (parts != intended && !planned_parts)
    p.notes.push_back("get_mla_metadata planned " + std::to_string(parts) + " SM parts for q_len 1, but the kernel runs q_len " +
                      std::to_string(s_q) + " (" + std::to_string(tokens) + " q rows per KV head, " + std::to_string(m_tiles) +
                      " tiles): its grid is " + std::to_string(ctas) + " CTAs, " + std::to_string((ctas + b.platform.num_cu - 1) / b.platform.num_cu) +
                      " waves on " + std::to_string(b.platform.num_cu) + " SMs, where " + std::to_string(intended) + " parts would give one (vLLM PR #27368)");
  p.kernel_view.q_layout = QLayout::per_request;
  p.kernel_view.q_tokens_per_tile = s_q;
  p.kernel_view.causal = true;  // causal=True always; FlashMLA drops it at s_q 1 (same windows)
  p.uniform_qlen = s_q;
}

void plan_fa3(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> num_splits = std::nullopt) {
  const auto t0 = std::chrono::steady_clock::now();
  Fa3SchedulerInput sin = fa3_scheduler_input(b, md);
  if (num_splits) sin.max_num_splits = *num_splits;
  const Fa3Schedule s = fa3_get_scheduler_metadata(sin);
  Fa3WorkInput in;
  in.seqlens = md.seq_k;
  in.kv_indptr = md.paged_kv_indptr;
  in.qo_indptr = md.qo_indptr;
  in.heads = b.model.num_heads;
  Fa3WorkList fw = fa3_work_list(s, in);
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.work = std::move(fw.work);
  p.stack_arrays = fa3_arrays(s);
  p.stack_arrays.push_back({"kernel_tiles", 0, true, {fw.kernel_tiles}});
  fw.work = WorkList{};
  p.schedule_words = fa3_words(fw, md.seq_k);
  p.notes.push_back("FA3 (tile " + std::to_string(s.tile.block_m) + " x " + std::to_string(s.tile.block_n) + ", q packed with its heads): num_splits " +
                    std::to_string(s.num_splits_static) + (sin.max_num_splits > 0 ? (num_splits ? " (the stack's num_splits)" : " (decode.max_num_splits)") : " (num_splits_heuristic)") +
                    (s.dynamic_split ? ", per batch min(ceil(n_blocks / " + std::to_string(s.blocks_per_sm) + "), num_splits)" : "") + "; " +
                    std::to_string(fw.kernel_tiles) + " tiles (m blocks x splits) on " + std::to_string(b.platform.num_cu) + " SMs" +
                    (s.is_causal ? "" : "; causal dropped at max_seqlen_q 1"));
  p.kv_indices = md.paged_kv_indices;
  p.kernel_view.q_layout = QLayout::per_request;
  p.kernel_view.q_tokens_per_tile = p.work.planned_view.q_tokens_per_tile;
  p.kernel_view.causal = s.is_causal;
  p.uniform_qlen = md.uni_seqlen ? md.max_qo_len : 0;
}

void plan_triton(const Batch& b, const DecodeMetadata& md, RoutePlan& p) {
  // q_len 1 (SINGLE_ONLY, checked by the router): one row per request over [0, seq_len)
  RowPlanInput in;
  in.row_indptr = md.paged_kv_indptr;
  if (md.max_qo_len > 1 && b.has_defect("triton-causal-per-request")) {
    // forward_mqa without the per-token expansion (vLLM issue #51848): decode_attention_fwd
    // runs one program per q row i and loads seq_lens[i] and block_table[i], so row i < R
    // reads request i's whole list and rows >= R read past both arrays (modelled as entries
    // past the index list's end: nothing of this batch lies there)
    const int64_t R = md.num_requests, N = md.qo_indptr.back(), E = (int64_t)md.paged_kv_indices.size();
    in.row_indptr.assign((size_t)N + 1, 0);
    for (int64_t i = 0; i < N; ++i) in.row_indptr[(size_t)i + 1] = (int32_t)(i < R ? md.paged_kv_indptr[(size_t)i + 1] : E + (i - R) + 1);
    p.notes.push_back("q rows 0.." + std::to_string(std::min(N, R) - 1) + " read the whole lists of requests 0.." + std::to_string(std::min(N, R) - 1) +
                      " by row index, not their own causal windows; q rows " + std::to_string(R) + ".." + std::to_string(N - 1) +
                      " read seq_lens and block_table past their " + std::to_string(R) + " rows (vLLM issue #51848)");
  }
  in.heads = p.kernel_view.heads;
  in.num_cu = b.platform.num_cu;  // a grid launch: programs dealt to the SMs in order
  const auto t0 = std::chrono::steady_clock::now();
  p.work = plan_triton_splits(in, kTritonKvSplits);
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.work.planner = "triton_fixed_4";
  p.kv_indices = md.paged_kv_indices;
  p.row_indptr = in.row_indptr;
  p.kernel_view.q_layout = QLayout::flattened_rows;
  p.kernel_view.q_tokens_per_tile = 1;
  p.kernel_view.causal = false;  // a row's list is its causal window already (q_len 1)
}

}  // namespace

KernelView cuda_base_view(const Batch& b) { return base_view(b); }
void plan_flashmla_route(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> planned_parts) {
  plan_flashmla(b, md, p, planned_parts);
}
void plan_fa3_route(const Batch& b, const DecodeMetadata& md, RoutePlan& p, std::optional<int> num_splits) {
  plan_fa3(b, md, p, num_splits);
}

std::vector<RowExpectation> request_list_expectations(const DecodeMetadata& md, const std::vector<RowWindow>& rows) {
  std::vector<RowExpectation> out;
  out.reserve(rows.size());
  for (const RowWindow& w : rows) {
    if (w.kind == MaskKind::tree) {
      // a draft of a tree sees a set of positions: one expectation per run of them
      const int64_t q_row = md.qo_indptr[w.request] + w.token, base = md.paged_kv_indptr[w.request];
      for (size_t i = 0; i < w.sparse_positions.size();) {
        size_t j = i + 1;
        while (j < w.sparse_positions.size() && w.sparse_positions[j] == w.sparse_positions[j - 1] + 1) ++j;
        out.push_back({q_row, base + w.sparse_positions[i], base + w.sparse_positions[j - 1] + 1, true});
        i = j;
      }
      continue;
    }
    RowExpectation e;
    e.q_row = md.qo_indptr[w.request] + w.token;
    e.kv_begin = md.paged_kv_indptr[w.request] + (w.kind == MaskKind::padding ? 0 : w.begin);
    e.kv_end = w.kind == MaskKind::padding ? e.kv_begin : md.paged_kv_indptr[w.request] + w.end;
    e.required = w.kind != MaskKind::padding;
    out.push_back(e);
  }
  return out;
}

RoutePlan plan_cuda(const Batch& b, const DecodeMetadata& md_in, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                    std::optional<PlannerId> planner) {
  require_stack_planner(vllm_cuda_stack(), planner);
  if (rd.route == Route::refused) throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + refusal_text(rd));
  if (rd.route == Route::flashmla_sparse)
    throw Error(kExitRefused, "", "flashmla_sparse: FLASHMLA_SPARSE's schedule is not modelled yet (mlactl models the vLLM CUDA stack's sparse route up to routing)");
  RoutePlan p;
  p.route = rd.route;
  p.user_rows = (int64_t)rows.size();
  const auto own = route_planner(vllm_cuda_stack(), rd.route, planner);
  if (!own) throw Error(kExitUsage, "", std::string("route ") + to_string(rd.route) + " has no planner");
  p.planner = *own;

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
  else if (rd.route == Route::flash_attn_mla) plan_fa3(b, md, p);
  else plan_triton(b, md, p);
  p.work.planned_view.head_dim = p.kernel_view.head_dim;
  p.work.planned_view.v_dim = p.kernel_view.v_dim;
  p.work.planned_view.q_dtype = p.kernel_view.q_dtype;
  p.work.planned_view.kv_dtype = p.kernel_view.kv_dtype;
  p.work.planned_view.page_size = 1;

  p.expectations = request_list_expectations(md, rows);
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
