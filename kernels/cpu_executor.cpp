#include "kernels/cpu_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "core/dtype.hpp"
#include "core/gemm.hpp"
#include "core/libm_exp.hpp"
#include "core/max_scaled.hpp"
#include "core/parallel.hpp"

namespace mlactl {

namespace {

// KV entries per tile: each tile's rows are decoded once and used by every
// (q row, head) of the work through two small GEMMs (scores, P·V).
constexpr int64_t kKvTile = 128;
// (q row, head) pairs processed together; a work with more rows is run in
// row chunks (each re-streams the KV), which only huge works need.
constexpr int64_t kMaxRowHeads = 1024;

// A fault a device kernel would raise (exit 4): reads outside a buffer.
struct DeviceFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string work_name(int64_t workgroup, int64_t w, const WorkInfo& wi) {
  return "workgroup " + std::to_string(workgroup) + " work " + std::to_string(w) + " (batch " +
         std::to_string(wi.batch_idx) + ", qo [" + std::to_string(wi.qo_start) + ", " + std::to_string(wi.qo_end) +
         "), kv [" + std::to_string(wi.kv_start) + ", " + std::to_string(wi.kv_end) + "), ploc " +
         std::to_string(wi.partial_qo_loc) + ")";
}

uint16_t encode_out(float x, DType out_dtype) {
  return out_dtype == DType::fp16 ? float_to_fp16_bits(x) : float_to_bf16_bits(x);
}

struct Stage1Scratch {
  Stage1Scratch() { qk.keep_b = true; }
  GrowBuffer<float> queries, keys, scores, probs, acc;
  std::vector<float> row_max, row_sum;
  std::vector<int64_t> limit;  // per q row of the chunk: index-list end it may see
  gemm::Scratch qk, pv;        // qk keeps the packed queries across a chunk's KV tiles
};

// One work (reference §7.1 stage 1): q rows [qs, qe) with all heads over the index
// list [ks, ke), causal diagonal from kv_offset, online softmax in fp32.
void run_work(const ExecArgs& a, int64_t workgroup, int64_t w, Stage1Scratch& s) {
  const WorkInfo& wi = a.work->work_info[w];
  const KernelView& v = a.view;
  const int64_t H = v.heads, D = v.head_dim, V = v.v_dim;
  const int64_t qs = wi.qo_start, qe = wi.qo_end, ks = wi.kv_start, ke = wi.kv_end;
  const int64_t Qn = qe - qs;
  if (Qn <= 0) return;
  if (qs < 0 || qe > a.num_q_rows)
    throw DeviceFault(work_name(workgroup, w, wi) + ": q rows outside the q tensor of " + std::to_string(a.num_q_rows) + " rows");
  const bool has_kv = ke > ks;
  if (has_kv && (ks < 0 || ke > a.num_kv_indices))
    throw DeviceFault(work_name(workgroup, w, wi) + ": kv range outside the index list of " +
                      std::to_string(a.num_kv_indices) + " entries");
  const int64_t ploc = wi.partial_qo_loc;
  if (ploc >= 0 && ploc + Qn > a.work->num_partial_rows)
    throw DeviceFault(work_name(workgroup, w, wi) + ": partial rows [" + std::to_string(ploc) + ", " +
                      std::to_string(ploc + Qn) + ") outside the " + std::to_string(a.work->num_partial_rows) +
                      " partial rows");
  const int64_t kv_elems = a.num_slots * (int64_t)a.kv_row_stride;
  const float q_scale = v.q_dtype == DType::fp8 ? a.q_scale : 1.0f;
  const float kv_scale = v.kv_dtype == DType::fp8 ? a.kv_scale : 1.0f;
  const float softmax_scale = a.softmax_scale;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kMaxRowHeads / H);

  for (int64_t i0 = 0; i0 < Qn; i0 += rows_per_chunk) {
    const int64_t i1 = std::min(Qn, i0 + rows_per_chunk);
    const int64_t nr = i1 - i0, M = nr * H;
    // causal (docs/design.md §4): q row i of Qn sees KV < kv_end - max(0, (Qn-1-i) - kv_offset)
    s.limit.resize(nr);
    for (int64_t i = i0; i < i1; ++i) {
      int64_t lim = ke;
      if (v.causal) lim = ke - std::max<int64_t>(0, (Qn - 1 - i) - wi.kv_offset);
      s.limit[i - i0] = std::max(ks, lim);
    }
    const int64_t chunk_end = has_kv ? s.limit[nr - 1] : ks;  // limits grow with i
    float* const queries = s.queries.get((size_t)(M * D));
    decode_elements(v.q_dtype, a.fp8_flavor, a.q, (qs + i0) * H * D, M * D, q_scale, queries);
    s.qk.b_valid = false;  // new queries: pack them again
    float* const acc = s.acc.get((size_t)(M * V));
    std::fill(acc, acc + M * V, 0.0f);
    s.row_max.assign(M, -std::numeric_limits<float>::infinity());
    s.row_sum.assign(M, 0.0f);
    float* const keys = s.keys.get((size_t)(kKvTile * D));
    float* const scores = s.scores.get((size_t)(M * kKvTile));
    float* const probs = s.probs.get((size_t)(M * kKvTile));
    // KV rows are scattered over the cache: rows a few entries ahead are prefetched
    // (only those inside the buffer; the bounds check below stays the one that counts)
    constexpr int64_t kAhead = 8;
    const int64_t row_bytes = D * dtype_bytes(v.kv_dtype);
    const char* const kv_bytes = static_cast<const char*>(a.kv);
    auto prefetch = [&](int64_t e) {
      const int64_t slot = a.kv_indices[e];
      if (slot < 0 || slot * D + D > kv_elems) return;
      const char* p = kv_bytes + slot * row_bytes;
      for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o, 0, 2);
    };
    for (int64_t e = ks; e < std::min(chunk_end, ks + kAhead); ++e) prefetch(e);
    for (int64_t e0 = ks; e0 < chunk_end; e0 += kKvTile) {
      const int64_t e1 = std::min(chunk_end, e0 + kKvTile), n = e1 - e0;
      for (int64_t e = e0; e < e1; ++e) {
        if (e + kAhead < chunk_end) prefetch(e + kAhead);
        const int64_t slot = a.kv_indices[e];
        // the kernel reads slot at slot * head_dim with its own stride (docs/design.md §5)
        if (slot < 0 || slot * D + D > kv_elems)
          throw DeviceFault(work_name(workgroup, w, wi) + ": kv index " + std::to_string(e) + " reads slot " +
                            std::to_string(slot) + " at element " + std::to_string(slot * D) + " (+" +
                            std::to_string(D) + ") past the KV buffer of " + std::to_string(kv_elems) + " elements");
        decode_elements(v.kv_dtype, a.fp8_flavor, a.kv, slot * D, D, kv_scale, keys + (e - e0) * D);
      }
      gemm::product<true>(queries, D, keys, D, scores, n, M, n, D, false, s.qk);  // [M, n] = Q·Kᵀ
      for (int64_t r = 0; r < M; ++r) {
        const int64_t visible = std::min(e1, s.limit[r / H]) - e0;
        float* p = probs + r * n;
        if (visible <= 0) {
          std::fill(p, p + n, 0.0f);
          continue;
        }
        const float* sc = scores + r * n;
        const float tile_max = max_scaled(sc, visible, softmax_scale);
        const float m_new = std::max(s.row_max[r], tile_max);
        // NaN scores (stray reads of poisoned slots) propagate through p and the sum
        const float alpha = std::exp(s.row_max[r] - m_new);
        float sum = 0;
        for (int64_t j = 0; j < visible; ++j) p[j] = softmax_scale * sc[j] - m_new;
        exp_in_place(p, visible);  // std::exp of each, bit for bit (core/libm_exp.hpp)
        for (int64_t j = 0; j < visible; ++j) sum += p[j];
        std::fill(p + visible, p + n, 0.0f);
        s.row_sum[r] = s.row_sum[r] * alpha + sum;
        s.row_max[r] = m_new;
        if (alpha != 1.0f)
          for (int64_t d = 0; d < V; ++d) acc[r * V + d] *= alpha;
      }
      // P·V over the tile: like a device kernel's MMA, masked entries have p = 0 but
      // their V rows are still read (all entries are inside the work's own range).
      gemm::product<false>(probs, n, keys, D, acc, V, M, V, n, true, s.pv);  // acc += P·V
    }
    // finalise: o = acc / l, lse = m + ln(l); a row that saw nothing gets 0 / -inf
    for (int64_t r = 0; r < M; ++r) {
      const int64_t qrow = i0 + r / H, h = r % H;
      const float l = s.row_sum[r];
      const bool empty = l == 0.0f;
      const float inv = empty ? 0.0f : 1.0f / l;
      const float lse = empty ? -std::numeric_limits<float>::infinity() : s.row_max[r] + std::log(l);
      float* accr = acc + r * V;
      if (ploc < 0) {
        // encode_out(acc * inv) per element, as one bulk encode of the scaled row
        for (int64_t d = 0; d < V; ++d) accr[d] *= inv;
        encode_elements(a.out_dtype, a.fp8_flavor, accr, V, a.out, ((qs + qrow) * H + h) * V);
        if (a.lse) a.lse[(qs + qrow) * H + h] = lse;
      } else {
        float* o = a.partial_out + ((ploc + qrow) * H + h) * V;
        for (int64_t d = 0; d < V; ++d) o[d] = accr[d] * inv;
        a.partial_lse[(ploc + qrow) * H + h] = lse;
      }
    }
  }
}

// Reduce (reference §7.1 stage 2) of one tile.
void reduce_tile(const ExecArgs& a, int64_t t) {
  const WorkList& wl = *a.work;
  const int64_t s0 = wl.reduce_indptr[t], s1 = wl.reduce_indptr[t + 1];
  if (s1 - s0 <= 1) return;  // unsplit tiles were written by stage 1
  const std::string where = "reduce tile " + std::to_string(t);
  if (t >= (int64_t)wl.reduce_final_map.size()) throw DeviceFault(where + ": no reduce_final_map entry");
  const int64_t q0 = wl.reduce_final_map[t][0], q1 = wl.reduce_final_map[t][1];
  if (q0 < 0) return;  // {-1, -1}: nothing to write
  if (!a.partial_out || !a.partial_lse) throw DeviceFault(where + ": merges partials but no partial buffers were given");
  if (s0 < 0 || s1 > (int64_t)wl.reduce_partial_map.size())
    throw DeviceFault(where + ": partial-map range [" + std::to_string(s0) + ", " + std::to_string(s1) + ") outside " +
                      std::to_string(wl.reduce_partial_map.size()) + " entries");
  if (q1 < q0 || q1 > a.num_q_rows)
    throw DeviceFault(where + ": output rows [" + std::to_string(q0) + ", " + std::to_string(q1) + ") outside the " +
                      std::to_string(a.num_q_rows) + " q rows");
  const int64_t H = a.view.heads, V = a.view.v_dim, Lt = q1 - q0;
  for (int64_t k = s0; k < s1; ++k) {
    const int64_t p = wl.reduce_partial_map[k];
    if (p < 0 || p + Lt > wl.num_partial_rows)
      throw DeviceFault(where + ": partial rows [" + std::to_string(p) + ", " + std::to_string(p + Lt) + ") outside the " +
                        std::to_string(wl.num_partial_rows) + " partial rows");
  }
  std::vector<float> weight(s1 - s0), acc(V);
  for (int64_t r = 0; r < Lt; ++r)
    for (int64_t h = 0; h < H; ++h) {
      // LSE = M + ln Σ exp(lse_k - M); +inf when the sum is 0 or NaN
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t k = s0; k < s1; ++k) M = std::fmax(M, a.partial_lse[(wl.reduce_partial_map[k] + r) * H + h]);
      float S = 0;
      for (int64_t k = s0; k < s1; ++k) S += std::exp(a.partial_lse[(wl.reduce_partial_map[k] + r) * H + h] - M);
      const float LSE = (S == 0.0f || std::isnan(S)) ? std::numeric_limits<float>::infinity() : M + std::log(S);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k = s0; k < s1; ++k) {
        const int64_t prow = wl.reduce_partial_map[k] + r;
        const float wk = std::exp(a.partial_lse[prow * H + h] - LSE);
        const float* part = a.partial_out + (prow * H + h) * V;
        for (int64_t d = 0; d < V; ++d) acc[d] += wk * part[d];
      }
      uint16_t* o = a.out + ((q0 + r) * H + h) * V;
      for (int64_t d = 0; d < V; ++d) o[d] = encode_out(acc[d], a.out_dtype);
      if (a.lse) a.lse[(q0 + r) * H + h] = LSE;
    }
}

std::string validate(const ExecArgs& a) {
  if (!a.work) return "no work list";
  if (!a.q || !a.kv || !a.out) return "q, kv and out buffers are required";
  if (a.view.page_size != 1) return "the CPU executor runs KV unit 1 (token slots) only; got page size " + std::to_string(a.view.page_size);
  if (a.out_dtype == DType::fp8) return "fp8 output is not a kernel output dtype";
  if (a.view.v_dim > a.view.head_dim) return "v_dim exceeds head_dim";
  if (a.view.heads <= 0) return "view has no heads";
  const WorkList& wl = *a.work;
  if (wl.work_indptr.empty()) return "empty work_indptr";
  for (size_t c = 0; c + 1 < wl.work_indptr.size(); ++c)
    if (wl.work_indptr[c] > wl.work_indptr[c + 1] || wl.work_indptr[c] < 0 ||
        wl.work_indptr[c + 1] > (int32_t)wl.work_info.size())
      return "work_indptr[" + std::to_string(c) + ".." + std::to_string(c + 1) + "] = [" +
             std::to_string(wl.work_indptr[c]) + ", " + std::to_string(wl.work_indptr[c + 1]) + ") is not a range of the " +
             std::to_string(wl.work_info.size()) + " works";
  for (const WorkInfo& wi : wl.work_info)
    if (wi.partial_qo_loc >= 0 && (!a.partial_out || !a.partial_lse)) return "a work writes partials but no partial buffers were given";
  return {};
}

}  // namespace

ExecResult CpuExecutor::run(const ExecArgs& args) {
  ExecResult res;
  const std::string bad = validate(args);
  if (!bad.empty()) {
    res.ok = false;
    res.error = "cpu executor: " + bad;
    return res;
  }
  const WorkList& wl = *args.work;
  using clock = std::chrono::steady_clock;
  try {
    const auto t0 = clock::now();
    const int64_t num_workgroups = (int64_t)wl.work_indptr.size() - 1;
    parallel_for_with_state<Stage1Scratch>(num_workgroups, threads_, [&](Stage1Scratch& scratch, int64_t c) {
      for (int64_t w = wl.work_indptr[c]; w < wl.work_indptr[c + 1]; ++w) run_work(args, c, w, scratch);
    });
    const auto t1 = clock::now();
    const int64_t num_tiles = wl.reduce_indptr.empty() ? 0 : (int64_t)wl.reduce_indptr.size() - 1;
    parallel_for(num_tiles, threads_, [&](int64_t t) { reduce_tile(args, t); });
    const auto t2 = clock::now();
    res.stage1_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    res.reduce_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  } catch (const DeviceFault& e) {
    res.ok = false;
    res.error = std::string("cpu executor: device fault: ") + e.what();
  }
  return res;
}

}  // namespace mlactl
