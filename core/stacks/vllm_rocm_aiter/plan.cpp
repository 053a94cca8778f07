// Route -> planner and kernel view for the AITER stack (docs/design.md §4 table): the one
// place that turns a batch, its decode metadata and a routing decision into a work list,
// the index list its KV ranges point into, and the view the route's kernel runs with.
// plan_route is three named steps: lay_out_rows, run_planner, expectations_from_oracle.
#include <algorithm>
#include <chrono>

#include "core/planners/expectations.hpp"
#include "core/planners/row_plan.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"
#include "core/stacks/vllm_rocm_aiter/stack.hpp"
#include "core/vllm_common.hpp"

namespace mlactl {

const std::vector<PlannerEntry>& aiter_planner_registry() {
  static const std::vector<PlannerEntry> registry = {
      {PlannerId::aiter, {Route::asm_persistent, Route::aiter_sparse}, {Route::asm_persistent, Route::aiter_sparse}},
      {PlannerId::gluon, {Route::gluon_decode, Route::gluon_verify}, {Route::gluon_decode, Route::gluon_verify}},
      {PlannerId::gluon_split, {}, {Route::gluon_decode, Route::gluon_verify}},
      {PlannerId::triton, {Route::triton_mla}, {Route::triton_mla}},
      {PlannerId::nonpersistent, {Route::asm_nonpersistent}, {Route::asm_nonpersistent}},
      {PlannerId::sparse_rows, {Route::sparse_triton}, {Route::sparse_triton}},
  };
  return registry;
}

Route aiter_route_for_planner(PlannerId p, bool sparse, int64_t max_qo_len) {
  switch (p) {
    case PlannerId::aiter: return sparse ? Route::aiter_sparse : Route::asm_persistent;
    case PlannerId::nonpersistent: return Route::asm_nonpersistent;
    case PlannerId::triton: return Route::triton_mla;
    case PlannerId::sparse_rows: return Route::sparse_triton;
    case PlannerId::gluon:
    case PlannerId::gluon_split:
    case PlannerId::flashmla:  // planners of the vllm-cuda and sglang stacks: plan_route refuses them
    case PlannerId::fa3:
    case PlannerId::flashinfer_mla:
    case PlannerId::sglang_triton:
    case PlannerId::triton_extend:
    case PlannerId::captured: break;  // captured is never a --planner choice
  }
  return max_qo_len > 1 ? Route::gluon_verify : Route::gluon_decode;
}

namespace {

// What every step reads: the batch, its metadata, the decision, the oracle rows, and
// the facts about them the steps share.
struct PlanContext {
  const Batch& b;
  const DecodeMetadata& md;
  const RouteDecision& rd;
  const std::vector<RowWindow>& rows;
  bool q_fp8 = false, kv_fp8 = false;
  bool causal = true;     // what planner and kernel are told (causal-flag-dropped forces true)
  int64_t Q = 1;          // max q_len after uniform-MTP padding, at least 1
  int64_t R = 0;          // requests
  bool sparse = false;    // per-token ragged index lists
  bool flattened = false; // one row per (request, token) with its own KV list
};

bool raw_head_route(Route r) {
  return r == Route::gluon_decode || r == Route::gluon_verify || r == Route::triton_mla || r == Route::sparse_triton;
}

// Per-row index lists: row i lists the slots of KV positions [0, len_i) of its request
// (a prefix, as the R0 and TRITON_MLA flattens build them).
void prefix_rows(const PlanContext& c, const std::vector<int64_t>& row_len, RoutePlan& p) {
  p.row_indptr.assign(c.rows.size() + 1, 0);
  for (size_t i = 0; i < c.rows.size(); ++i) p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
  p.kv_indices.resize((size_t)p.row_indptr.back());
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const int32_t* src = c.md.paged_kv_indices.data() + c.md.paged_kv_indptr[c.rows[i].request];
    std::copy(src, src + row_len[i], p.kv_indices.begin() + p.row_indptr[i]);
  }
}

// ---- step 1: index lists, heads and the kernel view ------------------------------------
void lay_out_rows(const PlanContext& c, RoutePlan& p, KernelView& kv) {
  const Batch& b = c.b;
  const DecodeMetadata& md = c.md;
  // heads: raw on Gluon/Triton, padded on the ASM routes (docs/stacks/vllm-rocm-aiter.md §V1 (d))
  p.heads = raw_head_route(c.rd.route) ? identity_heads(b.model.num_heads) : md.heads;
  kv.heads = p.heads.padded_heads;
  kv.causal = c.causal;
  kv.head_dim = b.head_dim();
  kv.v_dim = b.model.kv_lora_rank;
  kv.q_dtype = b.decode.q_dtype;
  kv.kv_dtype = b.kv_cache.dtype;
  kv.page_size = 1;

  const auto& rows = c.rows;
  std::vector<int64_t> row_len(rows.size(), 0);
  if (c.sparse) {
    // one row per query token over its ragged list of slots (docs/stacks/vllm-rocm-aiter.md §V1 (c))
    kv.q_layout = QLayout::per_token_sparse;
    p.row_indptr.assign(rows.size() + 1, 0);
    for (size_t i = 0; i < rows.size(); ++i) row_len[i] = (int64_t)rows[i].sparse_positions.size();
    for (size_t i = 0; i < rows.size(); ++i) p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
    p.kv_indices.reserve(p.row_indptr.back());
    for (const auto& w : rows)
      for (int64_t pos : w.sparse_positions) p.kv_indices.push_back((int32_t)token_slot(b, w.request, pos));
    // aiter_sparse reads rows at 576 regardless of geometry (seed 002)
    if (c.rd.route == Route::aiter_sparse) kv.head_dim = b.model.head_size();
  } else if (c.flattened) {
    kv.q_layout = QLayout::flattened_rows;
    if (c.rd.route == Route::gluon_verify) {
      // R0 flatten rows straight from the builder (seed 000's defect lives there)
      if (md.flat_indptr.empty()) throw Error(kExitDevice, "", "internal: gluon_verify planned without the R0 flatten");
      p.row_indptr.assign(rows.size() + 1, 0);
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t fr = (int64_t)rows[i].request * c.Q + rows[i].token;
        row_len[i] = md.flat_indptr[fr + 1] - md.flat_indptr[fr];
        p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
      }
      p.kv_indices.resize((size_t)p.row_indptr.back());
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t fr = (int64_t)rows[i].request * c.Q + rows[i].token;
        std::copy(md.flat_indices.begin() + md.flat_indptr[fr], md.flat_indices.begin() + md.flat_indptr[fr] + row_len[i],
                  p.kv_indices.begin() + p.row_indptr[i]);
      }
    } else {
      // TRITON_MLA's own flatten: max(0, s-(q-1)+t) causal, s non-causal (docs/stacks/vllm-rocm-aiter.md §V4)
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t s = md.seq_k[rows[i].request];
        const int64_t qn = md.qo_len[rows[i].request];
        row_len[i] = c.causal ? vllm::causal_prefix_length(s, qn, rows[i].token) : s;
      }
      prefix_rows(c, row_len, p);
    }
  } else {
    kv.q_layout = QLayout::per_request;
    p.kv_indices = md.paged_kv_indices;
  }
}

// ---- step 2: the planner ------------------------------------------------------------------
void plan_with_aiter(const PlanContext& c, RoutePlan& p, KernelView& kv) {
  const Batch& b = c.b;
  const DecodeMetadata& md = c.md;
  AiterPlanInput in;
  in.arch = b.platform.arch;
  in.num_cu = b.platform.num_cu;
  in.rules = b.platform.aiter;
  in.num_heads = p.heads.padded_heads;
  in.causal = c.causal;
  in.page_size = 1;
  in.kv_granularity = 16;
  // metadata-dtype-omitted (seed 004): get_mla_metadata_v1 called without dtype_q/dtype_kv
  in.dtypes_given = !b.has_defect("metadata-dtype-omitted");
  in.dtype_q = b.decode.q_dtype;
  in.dtype_kv = b.kv_cache.dtype;
  if (c.sparse) {
    // vLLM's sparse call: every token a batch of one q row, max_seqlen_qo = uni = 1
    const int64_t T = (int64_t)c.rows.size();
    in.qo_indptr.resize(T + 1);
    for (int64_t i = 0; i <= T; ++i) in.qo_indptr[i] = (int32_t)i;
    in.kv_indptr = p.row_indptr;
    in.kv_last_page_len.assign(T, 1);
    in.max_seqlen_qo = 1;
    in.uni_seqlen_qo = 1;
    in.dtypes_given = false;  // the sparse builder does not pass them (docs/stacks/vllm-rocm-aiter.md §V1 (e))
  } else if (c.flattened) {
    throw Error(kExitUsage, "", "--planner aiter plans per-request q; route " + std::string(to_string(c.rd.route)) + " uses flattened rows");
  } else {
    in.qo_indptr = md.qo_indptr;
    in.kv_indptr = md.paged_kv_indptr;
    in.kv_last_page_len = md.paged_kv_last_page_len;
    in.max_seqlen_qo = (int)c.Q;
    in.uni_seqlen_qo = md.uni_seqlen ? (int)c.Q : -1;
  }
  p.work = plan_aiter_v12(in);
  const int64_t B = c.sparse ? (int64_t)c.rows.size() : c.R;
  // metadata-sized-qlen1 (vllm#45227): the builder sized the buffers with max_seqlen_qo 1, not the MTP q_len
  const int info_qlen = c.sparse || b.has_defect("metadata-sized-qlen1") ? 1 : (int)b.decode.mtp_qlen;
  p.capacity = mla_metadata_info_v1(b.platform.arch, b.platform.num_cu, c.sparse ? B : b.decode.max_num_seqs, info_qlen,
                                    p.heads.padded_heads, in.dtypes_given ? in.dtype_q : DType::bf16,
                                    in.dtypes_given ? in.dtype_kv : DType::bf16, false);
  // the kernel (mla.py) folds with the REAL dtypes; the planner with what it was given
  // (the sparse builder never passes them, docs/stacks/vllm-rocm-aiter.md §V1 (e))
  const int kernel_L = c.sparse ? 1 : (int)c.Q;
  MlaPyFold f = mla_py_head_fold(b.platform.arch, p.heads.padded_heads, kernel_L, c.q_fp8, c.kv_fp8);
  kv.fold_ratio = f.ratio;
  kv.heads = f.gqa;
  AiterFold af = aiter_fold(b.platform.arch, p.heads.padded_heads, (int)c.Q, c.q_fp8, c.kv_fp8, false);
  kv.q_tokens_per_tile = aiter_q_tokens_per_tile(af, c.Q);
  p.uniform_qlen = c.sparse ? 1 : c.Q;
}

void plan_with_nonpersistent(const PlanContext& c, RoutePlan& p, KernelView&) {
  if (c.sparse || c.flattened)
    throw Error(kExitUsage, "", "--planner nonpersistent plans per-request q; route " + std::string(to_string(c.rd.route)) + " does not");
  NonPersistentInput in;
  in.qo_indptr = c.md.qo_indptr;
  in.kv_indptr = c.md.paged_kv_indptr;
  in.heads = p.heads.padded_heads;
  in.q_len = (int)c.Q;
  in.causal = c.causal;
  in.kv_fp8 = c.kv_fp8;
  in.num_cu = c.b.platform.num_cu;
  p.work = plan_nonpersistent(in);
}

// gluon / gluon-split / triton / sparse-rows, over per-row lists
void plan_with_rows(const PlanContext& c, RoutePlan& p, KernelView& kv) {
  RowPlanInput in;
  in.heads = kv.heads;
  in.num_cu = c.b.platform.num_cu;
  in.gluon_block_n = c.kv_fp8 ? 128 : 64;
  if (kv.q_layout == QLayout::per_request) {
    // a per-request route forced onto a row planner: only q_len 1 maps rows to requests
    if (c.Q != 1)
      throw Error(kExitUsage, "", std::string("--planner ") + to_string(p.planner) + " needs one q row per KV list; this route has q_len " +
                                      std::to_string(c.Q) + " per request");
    in.row_indptr = c.md.paged_kv_indptr;
  } else {
    in.row_indptr = p.row_indptr;
  }
  switch (p.planner) {
    case PlannerId::gluon: p.work = plan_gluon(in); break;
    case PlannerId::sparse_rows:
      p.work = plan_gluon(in);
      p.work.planner = "sparse_rows";
      break;
    case PlannerId::gluon_split: p.work = plan_gluon_split(in, (int)std::max<int64_t>(1, c.R), (int)c.Q); break;
    default: p.work = plan_triton(in, c.b.max_seq_len()); break;
  }
}

void run_planner(const PlanContext& c, RoutePlan& p, KernelView& kv) {
  const auto t0 = std::chrono::steady_clock::now();
  switch (p.planner) {
    case PlannerId::aiter: plan_with_aiter(c, p, kv); break;
    case PlannerId::nonpersistent: plan_with_nonpersistent(c, p, kv); break;
    case PlannerId::gluon:
    case PlannerId::gluon_split:
    case PlannerId::triton:
    case PlannerId::sparse_rows: plan_with_rows(c, p, kv); break;
    case PlannerId::captured: throw Error(kExitUsage, "", "--planner: the captured work list is not a planner");
    case PlannerId::flashmla:
    case PlannerId::fa3:
    case PlannerId::flashinfer_mla:
    case PlannerId::sglang_triton:
    case PlannerId::triton_extend:
      throw Error(kExitUsage, "", std::string("--planner ") + to_string(p.planner) + " is not a planner of vllm-rocm-aiter");
  }
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- step 3: expectations from the oracle, in index-list space -----------------------------
// Row i of the user layout covers the oracle window; for the fold, every head group of
// the row covers the same window (docs/stacks/vllm-rocm-aiter.md §A5.1).
void expectations_from_oracle(const PlanContext& c, RoutePlan& p) {
  const KernelView& kv = p.kernel_view;
  const int k = std::max(1, kv.fold_ratio);
  const auto& rows = c.rows;
  p.expectations.reserve(rows.size() * k);
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowWindow& w = rows[i];
    int64_t base = 0, len = 0;
    if (kv.q_layout == QLayout::per_request) {
      base = c.md.paged_kv_indptr[w.request];
      len = w.kind == MaskKind::padding ? 0 : w.length();
    } else {
      base = p.row_indptr[i];
      len = w.kind == MaskKind::padding ? 0 : (has_position_set(w.kind) ? (int64_t)w.sparse_positions.size() : w.length());
    }
    for (int g = 0; g < k; ++g) {
      RowExpectation e;
      e.q_row = view_q_row(kv.q_layout, k, c.Q, (int64_t)i, w.request, w.token, g);
      e.kv_begin = base;
      e.kv_end = base + len;
      e.required = w.kind != MaskKind::padding;
      p.expectations.push_back(e);
    }
  }
  if (k > 1 && !c.md.uni_seqlen)
    p.notes.push_back("head fold with non-uniform q_len: AITER indexes qo_indptr with folded batch ids (docs/stacks/vllm-rocm-aiter.md §A10.6)");
}

}  // namespace

RoutePlan plan_route(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                     std::optional<PlannerId> planner) {
  if (rd.route == Route::refused) throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + refusal_text(rd));
  PlanContext c{b, md, rd, rows};
  c.q_fp8 = b.decode.q_dtype == DType::fp8;
  c.kv_fp8 = b.kv_cache.dtype == DType::fp8;
  // causal-flag-dropped (seed 001): is_causal hard-wired True in planner and kernel
  c.causal = b.decode.causal || b.has_defect("causal-flag-dropped");
  c.Q = std::max<int64_t>(1, md.max_qo_len);
  c.R = md.num_requests;
  c.sparse = rd.route == Route::sparse_triton || rd.route == Route::aiter_sparse;
  c.flattened = rd.route == Route::gluon_verify || rd.route == Route::triton_mla;

  RoutePlan p;
  p.route = rd.route;
  p.user_rows = (int64_t)rows.size();
  if (planner) {
    p.planner = *planner;
  } else {
    const auto own = default_planner(vllm_rocm_aiter_stack(), rd.route);
    if (!own) throw Error(kExitUsage, "", std::string("route ") + to_string(rd.route) + " has no planner");
    p.planner = *own;
  }

  KernelView kv;
  lay_out_rows(c, p, kv);
  run_planner(c, p, kv);
  kv.page_size = 1;
  p.kernel_view = kv;
  expectations_from_oracle(c, p);

  for (const auto& n : p.work.notes) p.notes.push_back(n);
  p.stack_findings = p.work.stack_findings;
  if (p.work.planned_view != p.kernel_view) {
    const auto& pv = p.work.planned_view;
    if (pv.fold_ratio != kv.fold_ratio || pv.heads != kv.heads) {
      // only the sparse builder plans without dtypes on a route that runs (§V1 (e)); the dense
      // defect metadata-dtype-omitted is an injected 2026 defect, not today's stack
      if (p.route == Route::aiter_sparse && !b.has_defect("metadata-dtype-omitted"))
        p.stack_findings.push_back(StackFindingId::vllm_sparse_dtypes_omitted);
      p.notes.push_back("planner and kernel disagree on the head fold: planned " + std::to_string(pv.heads) + " heads x fold " +
                        std::to_string(pv.fold_ratio) + ", kernel runs " + std::to_string(kv.heads) + " heads x fold " + std::to_string(kv.fold_ratio));
    }
  }
  return p;
}

}  // namespace mlactl
