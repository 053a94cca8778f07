#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "core/gemm.hpp"
#include "core/libm_exp.hpp"
#include "core/max_scaled.hpp"
#include "core/parallel.hpp"

namespace mlactl {

namespace {

// Bound on the score matrix of one GEMM (floats), so a long window times many
// query tokens stays within a few hundred MB per thread.
constexpr int64_t kMaxScoreElements = int64_t(1) << 24;

struct RequestRows {
  int64_t begin = 0, end = 0;  // rows [begin, end) of oracle_windows
};

struct Workspace {
  GrowBuffer<float> keys, queries, scores, probs;
  GrowBuffer<double> expo, lse;
  gemm::Scratch gemm;
};

// Softmax of one (row, head) over the score columns [c0, c1) of `scores_row`
// (raw q·k), written as normalised probabilities into `probs_row` (zero elsewhere).
// Max, sum and log in double; each exponential computed once (`e` holds them).
// Returns the natural-log LSE.
double softmax_row(const float* scores_row, float* probs_row, double* e, int64_t num_cols, int64_t c0, int64_t c1,
                   double scale) {
  const double m = max_scaled(scores_row + c0, c1 - c0, scale);
  double sum = 0;
  for (int64_t j = c0; j < c1; ++j) e[j] = scale * (double)scores_row[j] - m;
  exp_in_place(e + c0, c1 - c0);  // std::exp of each, bit for bit (core/libm_exp.hpp)
  for (int64_t j = c0; j < c1; ++j) sum += e[j];
  const double inv = 1.0 / sum;
  std::fill(probs_row, probs_row + c0, 0.0f);
  for (int64_t j = c0; j < c1; ++j) probs_row[j] = (float)(e[j] * inv);
  std::fill(probs_row + c1, probs_row + num_cols, 0.0f);
  return m + std::log(sum);
}

// q rows [row0, row0 + num_rows), all heads: [num_rows * H, D] floats.
float* decode_query_rows(const Inputs& in, int64_t row0, int64_t num_rows, Workspace& ws) {
  const int64_t D = in.head_dim;
  float* q = ws.queries.get((size_t)(num_rows * in.num_heads * D));
  in.q.decode(row0 * in.num_heads * D, num_rows * in.num_heads * D, q);
  return q;
}

// Decodes the KV rows of slots slot(0..n-1) into keys [n, D]. The slots are
// scattered over the cache (shuffled blocks): the rows a few ahead are prefetched,
// so the gather is not one DRAM round trip per row.
template <class Slot>
void gather_keys(const Inputs& in, int64_t n, Slot slot, float* keys) {
  constexpr int64_t kAhead = 8;
  const int64_t D = in.head_dim;
  const int64_t row_bytes = D * dtype_bytes(in.kv.dtype);
  const char* base = static_cast<const char*>(in.kv.data());
  auto prefetch = [&](int64_t j) {
    const char* p = base + slot(j) * row_bytes;
    for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o, 0, 2);
  };
  for (int64_t j = 0; j < std::min(n, kAhead); ++j) prefetch(j);
  for (int64_t j = 0; j < n; ++j) {
    if (j + kAhead < n) prefetch(j + kAhead);
    in.kv.decode(slot(j) * D, D, keys + j * D);
  }
}

// softmax(scale · q·Kᵀ)·V for rows [r0, r0 + nr) against the n keys at `keys`
// ([n, D]): scores and P·V as fp32 GEMMs over all heads × rows, the output written
// straight into ref.out. `window(t)` gives row t's column range [c0, c1) of the keys.
template <class Window>
void attend_rows(const Inputs& in, double scale, const float* keys, int64_t n, int64_t r0, int64_t nr, Window window,
                 Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  const int v_dim = in.v_dim;
  const int64_t M = nr * H;
  const float* q = decode_query_rows(in, r0, nr, ws);
  float* scores = ws.scores.get((size_t)(M * n));
  gemm::product<true>(q, D, keys, D, scores, n, M, n, D, false, ws.gemm);  // [M, n] = Q·Kᵀ
  float* probs = ws.probs.get((size_t)(M * n));
  double* e = ws.expo.get((size_t)n);
  double* lse = ws.lse.get((size_t)M);
  for (int64_t t = 0; t < nr; ++t) {
    const std::pair<int64_t, int64_t> w = window(r0 + t);
    for (int h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      lse[i] = softmax_row(scores + i * n, probs + i * n, e, n, w.first, w.second, scale);
    }
  }
  float* out = ref.out.data() + r0 * H * v_dim;
  gemm::product<false>(probs, n, keys, D, out, v_dim, M, v_dim, n, false, ws.gemm);  // [M, v_dim] = P·V
  for (int64_t i = 0; i < M; ++i) ref.lse[r0 * H + i] = (float)lse[i];
  for (int64_t t = 0; t < nr; ++t) ref.computed[r0 + t] = 1;
}

// Dense rows (causal / non-causal): all tokens of the request share one gathered
// key matrix; each row uses the prefix/range of it its window names.
void dense_request(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, const RequestRows& rr,
                   Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (int64_t i = rr.begin; i < rr.end; ++i) {
    lo = std::min(lo, rows[i].begin);
    hi = std::max(hi, rows[i].end);
  }
  const int64_t n = hi - lo;
  const int request = rows[rr.begin].request;
  float* keys = ws.keys.get((size_t)(n * D));
  gather_keys(in, n, [&](int64_t j) { return kv_slot_of(b, request, lo + j); }, keys);
  const int64_t tokens_per_chunk = std::max<int64_t>(1, kMaxScoreElements / std::max<int64_t>(1, n * H));
  const auto window = [&](int64_t row) { return std::make_pair(rows[row].begin - lo, rows[row].end - lo); };
  for (int64_t r0 = rr.begin; r0 < rr.end; r0 += tokens_per_chunk)
    attend_rows(in, b.model.softmax_scale, keys, n, r0, std::min(tokens_per_chunk, rr.end - r0), window, ws, ref);
}

// Sparse rows: each token attends to its own position set (docs/design.md §3).
void sparse_row(const Batch& b, const RowWindow& w, const Inputs& in, Workspace& ws, ReferenceOutput& ref) {
  const int64_t D = in.head_dim;
  const int64_t n = (int64_t)w.sparse_positions.size();
  float* keys = ws.keys.get((size_t)(n * D));
  gather_keys(in, n, [&](int64_t j) { return kv_slot_of(b, w.request, w.sparse_positions[j]); }, keys);
  const auto window = [n](int64_t) { return std::make_pair(int64_t(0), n); };
  attend_rows(in, b.model.softmax_scale, keys, n, w.row, 1, window, ws, ref);
}

bool row_is_empty(const RowWindow& w) {
  return has_position_set(w.kind) ? w.sparse_positions.empty() : w.length() <= 0;
}

}  // namespace

ReferenceOutput compute_reference(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, int threads) {
  ReferenceOutput ref;
  ref.num_rows = (int64_t)rows.size();
  ref.num_heads = in.num_heads;
  ref.v_dim = in.v_dim;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ref.out.assign((size_t)(ref.num_rows * ref.num_heads * ref.v_dim), nan);
  ref.lse.assign((size_t)(ref.num_rows * ref.num_heads), nan);
  ref.computed.assign((size_t)ref.num_rows, 0);

  // Group each request's computable rows into maximal runs (rows are request-major).
  std::vector<RequestRows> jobs;
  for (int64_t i = 0; i < ref.num_rows;) {
    const RowWindow& w = rows[i];
    if (w.kind == MaskKind::padding) {
      ++ref.padding_rows;
      ++i;
      continue;
    }
    if (row_is_empty(w)) {
      ++ref.empty_rows;
      ++i;
      continue;
    }
    int64_t j = i + 1;
    while (j < ref.num_rows && rows[j].request == w.request && rows[j].kind != MaskKind::padding && !row_is_empty(rows[j]))
      ++j;
    jobs.push_back({i, j});
    i = j;
  }
  parallel_for_with_state<Workspace>((int64_t)jobs.size(), threads, [&](Workspace& ws, int64_t job) {
    const RequestRows& rr = jobs[job];
    if (has_position_set(rows[rr.begin].kind)) {
      for (int64_t i = rr.begin; i < rr.end; ++i) sparse_row(b, rows[i], in, ws, ref);
    } else {
      dense_request(b, rows, in, rr, ws, ref);
    }
  });
  return ref;
}

int64_t reference_workspace_bytes(const Batch& b, const std::vector<RowWindow>& rows) {
  // one thread's buffers for its largest job, as compute_reference groups and sizes them
  const int64_t H = std::max(1, b.model.num_heads), D = b.head_dim(), V = b.model.kv_lora_rank;
  auto job_bytes = [&](int64_t n, int64_t nr_total) {
    const int64_t tpc = std::max<int64_t>(1, kMaxScoreElements / std::max<int64_t>(1, n * H));
    const int64_t M = std::min(tpc, std::max<int64_t>(1, nr_total)) * H;
    // keys, queries, scores + probs, expo, lse; the GEMM's packed B (all of it: keep_b) and A panels (core/gemm.cpp)
    return n * D * 4 + M * D * 4 + 2 * M * n * 4 + n * 8 + M * 8 + (n * std::max(D, V) * 4 + M * D * 4);
  };
  int64_t most = 0;
  const int64_t num_rows = (int64_t)rows.size();
  for (int64_t i = 0; i < num_rows;) {
    const RowWindow& w = rows[i];
    if (w.kind == MaskKind::padding || row_is_empty(w)) {
      ++i;
      continue;
    }
    if (has_position_set(w.kind)) {
      most = std::max(most, job_bytes((int64_t)w.sparse_positions.size(), 1));
      ++i;
      continue;
    }
    int64_t lo = w.begin, hi = w.end, j = i + 1;
    while (j < num_rows && rows[j].request == w.request && rows[j].kind != MaskKind::padding && !row_is_empty(rows[j])) {
      lo = std::min(lo, rows[j].begin);
      hi = std::max(hi, rows[j].end);
      ++j;
    }
    most = std::max(most, job_bytes(hi - lo, j - i));
    i = j;
  }
  return most;
}

}  // namespace mlactl
