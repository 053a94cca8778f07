// Route -> planner -> kernel view for the SGLang stack (docs/stacks/sglang.md §S12-§S14):
// FA3's and FlashMLA's planners with SGLang's arguments, FlashInfer's MLAPlan, SGLang's
// Triton splits and its extend kernel, each turned into mlactl's one work-list format with
// the oracle's expectations.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/draft_tree.hpp"
#include "core/planners/expectations.hpp"
#include "core/planners/planner_util.hpp"
#include "core/semantics.hpp"
#include "core/stacks/sglang/planners/flashinfer_mla.hpp"
#include "core/stacks/sglang/planners/flashinfer_mla_works.hpp"
#include "core/stacks/sglang/planners/triton_splits.hpp"
#include "core/stacks/sglang/router.hpp"
#include "core/stacks/sglang/section.hpp"
#include "core/stacks/sglang/stack.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

namespace mlactl::sglang {

const std::vector<PlannerEntry>& sglang_planner_registry() {
  static const std::vector<PlannerEntry> registry = {
      {PlannerId::fa3, {Route::flash_attn_mla}, {Route::flash_attn_mla}},
      {PlannerId::flashmla, {Route::flashmla}, {Route::flashmla}},
      {PlannerId::flashinfer_mla, {Route::flashinfer_mla}, {Route::flashinfer_mla}},
      {PlannerId::sglang_triton, {Route::triton_mla}, {Route::triton_mla}},
      {PlannerId::triton_extend, {Route::triton_extend}, {Route::triton_extend}},
      {PlannerId::aiter, {Route::asm_persistent}, {Route::asm_persistent}},
      {PlannerId::nonpersistent, {Route::asm_nonpersistent}, {Route::asm_nonpersistent}},
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

bool has_tree(const Batch& b) {
  for (const Request& r : b.requests)
    if (!r.draft_parents.empty()) return true;
  return false;
}

// topk > 1 tree verify (§S10), as works over per-row lists: row t of request r sees the
// prefix [0, c) and the drafts its tree allows (ancestors and itself, in column order).
// fa3 runs two passes, both non-causal: the prefix (cache_seqlens = seq_lens) and the
// expand pass (one q row per draft over its allowed drafts' slots), merged by
// merge_state_v2's LSE rule; as works, one per (row, pass), the two partials merged per row
// (FA3's own splits inside a pass are not modelled here). triton's extend kernel reads the
// prefix and the drafts its custom mask allows in one pass: one work per row over its list.
void plan_tree_verify(const Batch& b, const DecodeMetadata& md, RoutePlan& p, bool two_pass) {
  WorkList& wl = p.work;
  wl.planner = two_pass ? "fa3_tree_two_pass" : "triton_extend_tree";
  p.kv_indices.clear();
  p.row_indptr.assign(1, 0);
  int64_t next_partial = 0;
  const std::vector<RowWindow> oracle = oracle_windows(b);
  for (int64_t r = 0; r < md.num_requests; ++r) {
    const Request& q = b.requests[(size_t)r];
    const int64_t q0 = md.qo_indptr[(size_t)r], L = md.qo_len[(size_t)r];
    const int64_t prefix = md.seq_k[(size_t)r] - L;
    const std::vector<std::vector<int32_t>> allowed =
        q.draft_parents.empty() ? std::vector<std::vector<int32_t>>{} : draft_allowed_columns(DraftTree{q.draft_parents});
    auto columns = [&](int64_t t) {  // a padding slot's rows (no tree): every draft
      if (!allowed.empty()) return allowed[(size_t)t];
      std::vector<int32_t> all((size_t)L);
      for (int64_t j = 0; j < L; ++j) all[(size_t)j] = (int32_t)j;
      return all;
    };
    const int64_t prefix_at = (int64_t)p.kv_indices.size();
    if (two_pass)
      for (int64_t j = 0; j < prefix; ++j) p.kv_indices.push_back((int32_t)token_slot(b, (int)r, j));
    for (int64_t t = 0; t < L; ++t) {
      const int64_t row = q0 + t;
      const int64_t row_at = (int64_t)p.kv_indices.size();
      if (!two_pass)
        for (int64_t j = 0; j < prefix; ++j) p.kv_indices.push_back((int32_t)token_slot(b, (int)r, j));
      const int64_t drafts_at = (int64_t)p.kv_indices.size();
      for (int32_t c : columns(t)) p.kv_indices.push_back((int32_t)token_slot(b, (int)r, prefix + c));
      const int64_t end = (int64_t)p.kv_indices.size();
      p.row_indptr.push_back((int32_t)end);
      if (!two_pass || prefix == 0) {
        planner_util::emit_row_chunks(wl, row, two_pass ? drafts_at : row_at, end - (two_pass ? drafts_at : row_at),
                                      {{0, end - (two_pass ? drafts_at : row_at)}}, next_partial);
      } else {
        std::vector<int32_t> plocs;
        for (const auto& [ks, ke] : {std::pair<int64_t, int64_t>{prefix_at, prefix_at + prefix}, {drafts_at, end}}) {
          WorkInfo w;
          w.batch_idx = (int32_t)r;
          w.partial_qo_loc = (int32_t)next_partial++;
          w.qo_start = (int32_t)row;
          w.qo_end = (int32_t)(row + 1);
          w.kv_start = (int32_t)ks;
          w.kv_end = (int32_t)ke;
          plocs.push_back(w.partial_qo_loc);
          wl.work_info.push_back(w);
        }
        planner_util::add_reduce_tile(wl, (int32_t)row, (int32_t)(row + 1), plocs);
      }
      // the oracle's expectation: the row's entries (two parts when the prefix is apart)
      const bool required = oracle[(size_t)row].kind != MaskKind::padding;
      if (two_pass && prefix > 0) {
        p.expectations.push_back({row, prefix_at, prefix_at + prefix, required});
        p.expectations.push_back({row, drafts_at, end, required});
      } else {
        p.expectations.push_back({row, two_pass ? drafts_at : row_at, end, required});
      }
    }
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  planner_util::deal_works_evenly(wl, b.platform.num_cu);
  wl.num_partial_rows = next_partial;
  wl.num_q_rows = md.qo_indptr.back();
  p.kernel_view.q_layout = two_pass ? QLayout::per_request : QLayout::flattened_rows;
  if (two_pass) p.row_indptr.clear();
  p.kernel_view.q_tokens_per_tile = 1;
  p.kernel_view.causal = false;  // the lists are the rows' allowed sets
  wl.planned_view = p.kernel_view;
  p.notes.push_back(two_pass ? "tree verify (topk > 1): FA3's prefix pass and expand pass per draft row, merged by LSE (merge_state_v2)"
                             : "tree verify (topk > 1): the extend kernel's custom mask, one list per draft row (prefix + allowed drafts)");
}

// sglang-aiter-draft-extend-padded-output (sglang #19902): eager draft_extend pads q to
// max_q_len rows per request (pad_sequence_with_mask) and allocates o the same size, but
// mla_decode_fwd takes the ragged qo_indptr and writes o[0 : qo_indptr[-1]] packed; the
// caller then returned o[q_mask], the rows at padded positions b * max_q_len + j
// (aiter_backend.py forward_extend before the fix; the fix returns o[:qo_indptr[-1]]).
void caller_reads_padded_rows(const DecodeMetadata& md, int64_t max_q_len, RoutePlan& p) {
  const int64_t written = md.qo_indptr.back();
  std::vector<std::optional<int64_t>> rows((size_t)written);
  int64_t unwritten = 0, misplaced = 0;
  for (int64_t r = 0; r < md.num_requests; ++r)
    for (int64_t j = 0; j < md.qo_indptr[(size_t)r + 1] - md.qo_indptr[(size_t)r]; ++j) {
      const int64_t padded = r * max_q_len + j, packed = md.qo_indptr[(size_t)r] + j;
      if (padded < written) rows[(size_t)packed] = padded;
      unwritten += padded >= written;
      misplaced += padded < written && padded != packed;
    }
  p.caller_rows = std::move(rows);
  p.caller_rows_why = "the caller returns o[q_mask], rows at padded positions b * " + std::to_string(max_q_len) +
                      " + j of the packed output mla_decode_fwd writes: " + std::to_string(misplaced) + " rows hold another token's output, " +
                      std::to_string(unwritten) + " were never written (sglang #19902)";
  p.notes.push_back(p.caller_rows_why);
}

// SGLang's aiter backend on ROCm (§S8, §S14): token-granular lists; 16 or 128 padded heads
// over a 16-bit cache run the non-persistent kernel (get_meta_param's splits); otherwise
// get_mla_metadata_v1 plans the persistent kernel with is_causal False, granularity
// max(page, 16), max_split_per_batch 32 when speculating (64 otherwise), fast_mode for 32
// or 128 heads; the kernel itself runs causal (mla_decode_fwd's default). The intra-batch
// planner the other head counts take is not modelled.
void plan_sglang_aiter(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, RoutePlan& p) {
  const Section& s = section_of(b);
  const AiterFlags f = aiter_flags(b);
  const bool q_fp8 = b.decode.q_dtype == DType::fp8, kv_fp8 = b.kv_cache.dtype == DType::fp8;
  const int64_t Q = std::max<int64_t>(1, md.max_qo_len);
  p.kernel_view.heads = f.padded_heads;
  p.kernel_view.q_layout = QLayout::per_request;
  p.kernel_view.causal = true;
  p.kv_indices = md.paged_kv_indices;
  if (rd.route == Route::asm_nonpersistent) {
    NonPersistentInput in;
    in.qo_indptr = md.qo_indptr;
    in.kv_indptr = md.paged_kv_indptr;
    in.heads = f.padded_heads;
    in.q_len = (int)Q;
    in.causal = true;
    in.kv_fp8 = kv_fp8;
    in.num_cu = b.platform.num_cu;
    p.work = plan_nonpersistent(in);
    p.kernel_view.q_tokens_per_tile = (int)Q;
    p.uniform_qlen = md.uni_seqlen ? Q : 0;
    if (s.forward_mode == ForwardMode::draft_extend && !s.cuda_graph && b.has_defect("sglang-aiter-draft-extend-padded-output"))
      caller_reads_padded_rows(md, Q, p);
    return;
  }
  if (f.intra_batch_mode)
    throw Error(kExitRefused, "", "SGLang aiter with " + std::to_string(f.padded_heads) + " heads" + (kv_fp8 ? " over an fp8 cache" : "") +
                                      " plans with get_mla_metadata_v1's intra-batch mode (fast_mode off), which mlactl does not model yet "
                                      "(docs/stacks/sglang.md §S8)");
  const MlaPyFold fold = mla_py_head_fold(b.platform.arch, f.padded_heads, (int)Q, q_fp8, kv_fp8);
  if (!fold.ok) throw Error(kExitRefused, "", std::string("RuntimeError: ") + kNoHeuristicKernel + " (" + fold.why + ")");
  AiterPlanInput in;
  in.arch = b.platform.arch;
  in.num_cu = b.platform.num_cu;
  in.qo_indptr = md.qo_indptr;
  in.kv_indptr = md.paged_kv_indptr;
  in.kv_last_page_len = md.paged_kv_last_page_len;
  in.num_heads = f.padded_heads;
  in.causal = false;  // aiter_backend.py passes is_causal False
  in.page_size = 1;
  in.kv_granularity = (int)std::max<int64_t>(s.page_size, 16);
  in.max_seqlen_qo = (int)Q;
  in.uni_seqlen_qo = (int)Q;
  in.fast_mode = f.fast_mode;
  in.max_split_per_batch = s.num_draft_tokens ? 32 : 64;
  in.intra_batch_mode = false;
  in.dtype_q = b.kv_cache.dtype;  // dtype_q = dtype_kv = kv_cache_dtype
  in.dtype_kv = b.kv_cache.dtype;
  if (!md.uni_seqlen)
    throw Error(kExitRefused, "", "SGLang aiter persistent decode over ragged draft_extend q: get_mla_metadata_v1 is given uni_seqlen_qo = "
                                      "max_q_len and SGLang pads q to max_q_len rows per request (pad_sequence_with_mask) while passing the "
                                      "ragged qo_indptr; not modelled yet (docs/stacks/sglang.md §S8, §S15.4, §S16.4)");
  p.work = plan_aiter_v12(in);
  p.kernel_view.fold_ratio = fold.ratio;
  p.kernel_view.heads = fold.gqa;
  const AiterFold af = aiter_fold(b.platform.arch, f.padded_heads, (int)Q, q_fp8, kv_fp8, false);
  p.kernel_view.q_tokens_per_tile = aiter_q_tokens_per_tile(af, Q);
  p.uniform_qlen = Q;
  p.notes.push_back("get_mla_metadata_v1 with is_causal False, max_split_per_batch " + std::to_string(in.max_split_per_batch) +
                    "; the kernel runs causal (aiter_backend.py)");
  if (Q > 1 && p.kernel_view.q_tokens_per_tile < Q) p.stack_findings.push_back(StackFindingId::sglang_aiter_noncausal_plan);
  if (Q > 1 && p.kernel_view.q_tokens_per_tile < Q)
    p.notes.push_back("finding: planned non-causal (is_causal False) in q tiles of " + std::to_string(p.kernel_view.q_tokens_per_tile) +
                      " tokens while the kernel masks causally from each work's kv_offset: the rows of a tile before the request's last "
                      "read the KV of the request's later tokens (unconfirmed: mla_decode_fwd's default causality as SGLang calls it, "
                      "docs/stacks/sglang.md §S16)");
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
  // flashinfer-causal-negative-kv-end (flashinfer #1533, fixed by 480d1ae0): a causal tile
  // of a request with more q tokens than keys got a negative KV end and no work
  in.clamp_causal_kv_end = !b.has_defect("flashinfer-causal-negative-kv-end");
  // sglang-eagle-stale-qo-indptr (sglang #15601 with flashinfer #2236): draft_extend runs
  // against the forward metadata of the target_verify step before it, not refreshed: D
  // rows per request (arange * D) and the verify step's KV (prefix + D), while q holds the
  // accepted tokens only
  const bool stale = s.forward_mode == ForwardMode::draft_extend && b.has_defect("sglang-eagle-stale-qo-indptr");
  if (stale) {
    const int64_t D = *s.num_draft_tokens;
    for (int64_t r = 0; r < md.num_requests; ++r) {
      in.qo_indptr[(size_t)r + 1] = (int32_t)((r + 1) * D);
      in.kv_len[(size_t)r] = (int32_t)(md.seq_k[(size_t)r] - md.qo_len[(size_t)r] + D);
      in.kv_indptr[(size_t)r + 1] = in.kv_indptr[(size_t)r] + in.kv_len[(size_t)r];
    }
    p.notes.push_back("draft_extend planned with the target_verify step's forward metadata (qo_indptr = arange * " + std::to_string(D) +
                      ", KV prefix + " + std::to_string(D) + "): the works address " + std::to_string(in.qo_indptr.back()) + " q rows, q has " +
                      std::to_string(md.qo_indptr.back()) + " (sglang #15601)");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const MlaPlan plan = flashinfer_mla_plan(in);
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  FlashinferMlaWorkInput wi;
  wi.qo_indptr = stale ? in.qo_indptr : md.qo_indptr;
  wi.kv_list_indptr = md.paged_kv_indptr;
  wi.num_heads = b.model.num_heads;
  wi.causal = in.causal;
  p.work = flashinfer_mla_work_list(plan, wi);
  p.work.num_q_rows = md.qo_indptr.back();  // the q the kernel is given, whatever the plan addresses
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
  require_stack_planner(stack, planner);
  if (rd.route == Route::refused) throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + refusal_text(rd));
  const auto own = route_planner(stack, rd.route, planner);
  if (!own)
    throw Error(kExitRefused, "", std::string("route ") + to_string(rd.route) + " (SGLang " + rd.backend +
                                      "): its planner is not modelled yet (docs/stacks/sglang.md lists what is)");
  RoutePlan p;
  p.route = rd.route;
  p.planner = *own;
  p.user_rows = (int64_t)rows.size();
  p.heads = md.heads;
  p.kernel_view = vllm_cuda::cuda_base_view(b);
  const auto t0 = std::chrono::steady_clock::now();
  // a tree verify's plan lays out its own per-row lists and expectations (plan_tree_verify)
  const bool tree = has_tree(b) && (rd.route == Route::flash_attn_mla || rd.route == Route::triton_extend);
  if (tree) {
    plan_tree_verify(b, md, p, rd.route == Route::flash_attn_mla);
    p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  if (!tree) switch (rd.route) {
    // FA3's num_splits: 0 (its heuristic), 1 under deterministic inference (§S6)
    case Route::flash_attn_mla: vllm_cuda::plan_fa3_route(b, md, p, section_of(b).deterministic ? 1 : 0); break;
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
    case Route::asm_persistent:
    case Route::asm_nonpersistent: plan_sglang_aiter(b, md, rd, p); break;
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
  if (!tree) p.expectations = vllm_cuda::request_list_expectations(md, rows);
  if (const int k = p.kernel_view.fold_ratio; k > 1) {
    // AITER's head -> batch fold: every head group of a row over the request's window
    const int64_t L = std::max<int64_t>(1, md.max_qo_len);
    std::vector<RowExpectation> folded;
    for (size_t i = 0; i < rows.size(); ++i)
      for (int g = 0; g < k; ++g) {
        const RowWindow& w = rows[i];
        const int64_t base = md.paged_kv_indptr[(size_t)w.request];
        const bool pad = w.kind == MaskKind::padding;
        folded.push_back({view_q_row(QLayout::per_request, k, L, (int64_t)i, w.request, w.token, g), base + (pad ? 0 : w.begin),
                          base + (pad ? 0 : w.end), !pad});
      }
    p.expectations = std::move(folded);
  }
  for (const auto& n : p.work.notes) p.notes.push_back(n);
  return p;
}

}  // namespace mlactl::sglang
