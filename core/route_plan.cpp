#include "core/route_plan.hpp"

#include <algorithm>
#include <chrono>

#include "core/aiter_kernels.hpp"
#include "core/planners/planners.hpp"

namespace mlactl {

const std::vector<std::string>& planner_names() {
  static const std::vector<std::string> names = {"aiter", "gluon", "gluon-split", "triton", "nonpersistent", "sparse-rows"};
  return names;
}

namespace {

std::string default_planner(Route r) {
  switch (r) {
    case Route::gluon_decode:
    case Route::gluon_verify: return "gluon";
    case Route::asm_persistent: return "aiter";
    case Route::asm_nonpersistent: return "nonpersistent";
    case Route::triton_mla: return "triton";
    case Route::sparse_triton: return "sparse-rows";
    case Route::aiter_sparse: return "aiter";
    case Route::refused: break;
  }
  return "";
}

}  // namespace

// The inverse of default_planner: the route whose own planner `planner` is
// (gluon-split, a planner no route defaults to, answers as gluon does).
Route route_for_planner(const std::string& planner, bool sparse, int64_t max_qo_len) {
  if (planner == "aiter") return sparse ? Route::aiter_sparse : Route::asm_persistent;
  if (planner == "nonpersistent") return Route::asm_nonpersistent;
  if (planner == "triton") return Route::triton_mla;
  if (planner == "sparse-rows") return Route::sparse_triton;
  return max_qo_len > 1 ? Route::gluon_verify : Route::gluon_decode;
}

namespace {

bool raw_head_route(Route r) {
  return r == Route::gluon_decode || r == Route::gluon_verify || r == Route::triton_mla || r == Route::sparse_triton;
}

// Per-row index lists: row i lists the slots of KV positions [0, len_i) of its request
// (a prefix, as the R0 and TRITON_MLA flattens build them).
void prefix_rows(const DecodeMetadata& md, const std::vector<RowWindow>& rows, const std::vector<int64_t>& row_len, RoutePlan& p) {
  p.row_indptr.assign(rows.size() + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i) p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
  p.kv_indices.resize((size_t)p.row_indptr.back());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t* src = md.paged_kv_indices.data() + md.paged_kv_indptr[rows[i].request];
    std::copy(src, src + row_len[i], p.kv_indices.begin() + p.row_indptr[i]);
  }
}

}  // namespace

InvariantReport check_plan_invariants(const RoutePlan& plan, int64_t max_qo_len) {
  InvariantOptions io;
  if (plan.capacity) {
    io.capacity = &*plan.capacity;
    io.partial_row_capacity = plan.capacity->reduce_partial_map * std::max<int64_t>(1, max_qo_len);
  }
  return check_invariants(plan.work, plan.kernel_view, plan.expectations, io);
}

RoutePlan plan_route(const Batch& b, const DecodeMetadata& md, const RouteDecision& rd, const std::vector<RowWindow>& rows,
                     const std::string& planner_req) {
  if (rd.route == Route::refused)
    throw Error(kExitRefused, "", "the modelled stack refuses this configuration: " + (rd.error_type.empty() ? "" : rd.error_type + ": ") + rd.error);
  RoutePlan p;
  p.route = rd.route;
  p.user_rows = (int64_t)rows.size();
  p.planner = planner_req.empty() ? default_planner(rd.route) : planner_req;
  if (std::find(planner_names().begin(), planner_names().end(), p.planner) == planner_names().end())
    throw Error(kExitUsage, "", "--planner: unknown planner \"" + p.planner + "\"");

  const bool q_fp8 = b.decode.q_dtype == DType::fp8;
  const bool kv_fp8 = b.kv_cache.dtype == DType::fp8;
  // causal-flag-dropped (seed 001): is_causal hard-wired True in planner and kernel
  const bool causal = b.decode.causal || b.has_defect("causal-flag-dropped");
  const int64_t Q = std::max<int64_t>(1, md.max_qo_len);
  const bool sparse = rd.route == Route::sparse_triton || rd.route == Route::aiter_sparse;
  const bool flattened = rd.route == Route::gluon_verify || rd.route == Route::triton_mla;

  // heads: raw on Gluon/Triton, padded on the ASM routes (docs/stacks/vllm-rocm-aiter.md §V1 (d))
  if (raw_head_route(rd.route)) {
    p.heads = head_padding(b.model.num_heads, false, {});
    p.heads.padded_heads = b.model.num_heads;
    p.heads.method = "identity";
    p.heads.source.resize(b.model.num_heads);
    p.heads.unpad.resize(b.model.num_heads);
    for (int h = 0; h < b.model.num_heads; ++h) p.heads.source[h] = p.heads.unpad[h] = h;
  } else {
    p.heads = md.heads;
  }

  KernelView kv;
  kv.heads = p.heads.padded_heads;
  kv.causal = causal;
  kv.head_dim = b.head_dim();
  kv.v_dim = b.model.kv_lora_rank;
  kv.q_dtype = b.decode.q_dtype;
  kv.kv_dtype = b.kv_cache.dtype;
  kv.page_size = 1;

  // ---- index lists and per-row windows -------------------------------------------
  std::vector<int64_t> row_len(rows.size(), 0);
  if (sparse) {
    // one row per query token over its ragged list of slots (docs/stacks/vllm-rocm-aiter.md §V1 (c))
    kv.q_layout = QLayout::per_token_sparse;
    p.row_indptr.assign(rows.size() + 1, 0);
    for (size_t i = 0; i < rows.size(); ++i) row_len[i] = (int64_t)rows[i].sparse_positions.size();
    for (size_t i = 0; i < rows.size(); ++i) p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
    p.kv_indices.reserve(p.row_indptr.back());
    for (const auto& w : rows)
      for (int64_t pos : w.sparse_positions) p.kv_indices.push_back((int32_t)token_slot(b, w.request, pos));
    // aiter_sparse reads rows at 576 regardless of geometry (seed 002)
    if (rd.route == Route::aiter_sparse) kv.head_dim = b.model.head_size();
  } else if (flattened) {
    kv.q_layout = QLayout::flattened_rows;
    if (rd.route == Route::gluon_verify) {
      // R0 flatten rows straight from the builder (seed 000's defect lives there)
      if (md.flat_indptr.empty()) throw Error(kExitDevice, "", "internal: gluon_verify planned without the R0 flatten");
      p.row_indptr.assign(rows.size() + 1, 0);
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t fr = (int64_t)rows[i].request * Q + rows[i].token;
        row_len[i] = md.flat_indptr[fr + 1] - md.flat_indptr[fr];
        p.row_indptr[i + 1] = (int32_t)(p.row_indptr[i] + row_len[i]);
      }
      p.kv_indices.resize((size_t)p.row_indptr.back());
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t fr = (int64_t)rows[i].request * Q + rows[i].token;
        std::copy(md.flat_indices.begin() + md.flat_indptr[fr], md.flat_indices.begin() + md.flat_indptr[fr] + row_len[i],
                  p.kv_indices.begin() + p.row_indptr[i]);
      }
    } else {
      // TRITON_MLA's own flatten: max(0, s-(q-1)+t) causal, s non-causal (docs/stacks/vllm-rocm-aiter.md §V4)
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t s = md.seq_k[rows[i].request];
        const int64_t qn = md.qo_len[rows[i].request];
        row_len[i] = causal ? causal_prefix_length(s, qn, rows[i].token) : s;
      }
      prefix_rows(md, rows, row_len, p);
    }
  } else {
    kv.q_layout = QLayout::per_request;
    p.kv_indices = md.paged_kv_indices;
  }

  // ---- planner ---------------------------------------------------------------------
  const int64_t R = md.num_requests;
  const auto planner_t0 = std::chrono::steady_clock::now();
  if (p.planner == "aiter") {
    AiterPlanInput in;
    in.arch = b.platform.arch;
    in.num_cu = b.platform.num_cu;
    in.num_heads = p.heads.padded_heads;
    in.causal = causal;
    in.page_size = 1;
    in.kv_granularity = 16;
    // metadata-dtype-omitted (seed 004): get_mla_metadata_v1 called without dtype_q/dtype_kv
    in.dtypes_given = !b.has_defect("metadata-dtype-omitted");
    in.dtype_q = b.decode.q_dtype;
    in.dtype_kv = b.kv_cache.dtype;
    if (sparse) {
      // vLLM's sparse call: every token a batch of one q row, max_seqlen_qo = uni = 1
      const int64_t T = (int64_t)rows.size();
      in.qo_indptr.resize(T + 1);
      for (int64_t i = 0; i <= T; ++i) in.qo_indptr[i] = (int32_t)i;
      in.kv_indptr = p.row_indptr;
      in.kv_last_page_len.assign(T, 1);
      in.max_seqlen_qo = 1;
      in.uni_seqlen_qo = 1;
      in.dtypes_given = false;  // the sparse builder does not pass them (docs/stacks/vllm-rocm-aiter.md §V1 (e))
    } else if (flattened) {
      throw Error(kExitUsage, "", "--planner aiter plans per-request q; route " + std::string(to_string(rd.route)) + " uses flattened rows");
    } else {
      in.qo_indptr = md.qo_indptr;
      in.kv_indptr = md.paged_kv_indptr;
      in.kv_last_page_len = md.paged_kv_last_page_len;
      in.max_seqlen_qo = (int)Q;
      in.uni_seqlen_qo = md.uni_seqlen ? (int)Q : -1;
    }
    p.work = plan_aiter_v12(in);
    const int64_t B = sparse ? (int64_t)rows.size() : R;
    p.capacity = mla_metadata_info_v1(b.platform.arch, b.platform.num_cu, sparse ? B : b.decode.max_num_seqs, sparse ? 1 : (int)b.decode.mtp_qlen,
                                      p.heads.padded_heads, in.dtypes_given ? in.dtype_q : DType::bf16,
                                      in.dtypes_given ? in.dtype_kv : DType::bf16, false);
    // the kernel (mla.py) folds with the REAL dtypes; the planner with what it was given
    // (the sparse builder never passes them, docs/stacks/vllm-rocm-aiter.md §V1 (e))
    {
      const int kernel_L = sparse ? 1 : (int)Q;
      MlaPyFold f = mla_py_head_fold(b.platform.arch, p.heads.padded_heads, kernel_L, q_fp8, kv_fp8);
      kv.fold_ratio = f.ratio;
      kv.heads = f.gqa;
      AiterFold af = aiter_fold(b.platform.arch, p.heads.padded_heads, (int)Q, q_fp8, kv_fp8, false);
      kv.q_tokens_per_tile = !af.qo_splits ? (int)Q : (af.heads * 2 > af.wg ? 1 : (int)std::max<int64_t>(1, af.wg / af.heads));
    }
    p.uniform_qlen = sparse ? 1 : Q;
  } else if (p.planner == "nonpersistent") {
    if (sparse || flattened) throw Error(kExitUsage, "", "--planner nonpersistent plans per-request q; route " + std::string(to_string(rd.route)) + " does not");
    NonPersistentInput in;
    in.qo_indptr = md.qo_indptr;
    in.kv_indptr = md.paged_kv_indptr;
    in.heads = p.heads.padded_heads;
    in.q_len = (int)Q;
    in.causal = causal;
    in.kv_fp8 = kv_fp8;
    in.num_cu = b.platform.num_cu;
    p.work = plan_nonpersistent(in);
  } else {
    // row planners: gluon / gluon-split / triton / sparse-rows, over per-row lists
    RowPlanInput in;
    in.heads = kv.heads;
    in.num_cu = b.platform.num_cu;
    in.gluon_block_n = kv_fp8 ? 128 : 64;
    if (kv.q_layout == QLayout::per_request) {
      // a per-request route forced onto a row planner: only q_len 1 maps rows to requests
      if (Q != 1) throw Error(kExitUsage, "", "--planner " + p.planner + " needs one q row per KV list; this route has q_len " + std::to_string(Q) + " per request");
      in.row_indptr = md.paged_kv_indptr;
    } else {
      in.row_indptr = p.row_indptr;
    }
    if (p.planner == "gluon" || p.planner == "sparse-rows") {
      p.work = plan_gluon(in);
      if (p.planner == "sparse-rows") p.work.planner = "sparse_rows";
    } else if (p.planner == "gluon-split") {
      p.work = plan_gluon_split(in, (int)std::max<int64_t>(1, R), (int)Q);
    } else {
      p.work = plan_triton(in, b.max_seq_len());
    }
  }
  p.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - planner_t0).count();
  kv.page_size = 1;
  p.kernel_view = kv;

  // ---- expectations from the oracle, in index-list space -----------------------------
  // Row i of the user layout covers the oracle window; for the fold, every head group
  // of the row covers the same window (docs/stacks/vllm-rocm-aiter.md §V5.1).
  const int k = std::max(1, kv.fold_ratio);
  const bool uniform = md.uni_seqlen;
  p.expectations.reserve(rows.size() * k);
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowWindow& w = rows[i];
    int64_t base = 0, len = 0;
    if (kv.q_layout == QLayout::per_request) {
      base = md.paged_kv_indptr[w.request];
      len = w.kind == MaskKind::padding ? 0 : w.length();
    } else {
      base = p.row_indptr[i];
      len = w.kind == MaskKind::padding ? 0 : (w.kind == MaskKind::sparse ? (int64_t)w.sparse_positions.size() : w.length());
    }
    for (int g = 0; g < k; ++g) {
      RowExpectation e;
      // folded rows: per request (b*k+g)*L+t; per token (each token its own batch) i*k+g
      e.q_row = (k == 1) ? (int64_t)i
                         : (kv.q_layout == QLayout::per_request ? ((int64_t)w.request * k + g) * Q + w.token : (int64_t)i * k + g);
      e.kv_begin = base;
      e.kv_end = base + len;
      e.required = w.kind != MaskKind::padding;
      p.expectations.push_back(e);
    }
  }
  if (k > 1 && !uniform) p.notes.push_back("head fold with non-uniform q_len: AITER indexes qo_indptr with folded batch ids (docs/stacks/vllm-rocm-aiter.md §V10.6)");
  for (const auto& n : p.work.notes) p.notes.push_back(n);
  if (p.work.planned_view != p.kernel_view) {
    const auto& pv = p.work.planned_view;
    if (pv.fold_ratio != kv.fold_ratio || pv.heads != kv.heads)
      p.notes.push_back("planner and kernel disagree on the head fold: planned " + std::to_string(pv.heads) + " heads x fold " +
                        std::to_string(pv.fold_ratio) + ", kernel runs " + std::to_string(kv.heads) + " heads x fold " + std::to_string(kv.fold_ratio));
  }
  return p;
}

}  // namespace mlactl
