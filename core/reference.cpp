#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Dense>

#include "core/parallel.hpp"

namespace mlactl {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Bound on the score matrix of one GEMM (floats), so a long window times many
// query tokens stays within a few hundred MB per thread.
constexpr int64_t kMaxScoreElements = int64_t(1) << 24;

struct RequestRows {
  int64_t begin = 0, end = 0;  // rows [begin, end) of oracle_windows
};

// Softmax of one (row, head) over the score columns [c0, c1) of `scores_row`
// (raw q·k), written as normalised probabilities into `probs_row` (zero elsewhere).
// Max, sum and log in double. Returns the natural-log LSE.
double softmax_row(const float* scores_row, float* probs_row, int64_t num_cols, int64_t c0, int64_t c1, double scale) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = c0; j < c1; ++j) m = std::max(m, scale * (double)scores_row[j]);
  double sum = 0;
  for (int64_t j = c0; j < c1; ++j) sum += std::exp(scale * (double)scores_row[j] - m);
  const double inv = 1.0 / sum;
  std::fill(probs_row, probs_row + c0, 0.0f);
  for (int64_t j = c0; j < c1; ++j) probs_row[j] = (float)(std::exp(scale * (double)scores_row[j] - m) * inv);
  std::fill(probs_row + c1, probs_row + num_cols, 0.0f);
  return m + std::log(sum);
}

struct Workspace {
  RowMatrix keys, queries, scores, probs, values_out;
};

void decode_query_rows(const Inputs& in, int64_t row0, int64_t num_rows, RowMatrix& q) {
  const int64_t D = in.head_dim;
  q.resize(num_rows * in.num_heads, D);
  in.q.decode(row0 * in.num_heads * D, num_rows * in.num_heads * D, q.data());
}

void store_rows(const RowMatrix& values, const std::vector<double>& lse, int64_t row0, int64_t num_rows, int v_dim,
                int H, ReferenceOutput& ref) {
  for (int64_t i = 0; i < num_rows * H; ++i) {
    std::copy(values.row(i).data(), values.row(i).data() + v_dim, ref.out.data() + (row0 * H + i) * v_dim);
    ref.lse[row0 * H + i] = (float)lse[i];
  }
}

// Dense rows (causal / non-causal): all tokens of the request share one gathered
// key matrix; each row uses the prefix/range of it its window names.
void dense_request(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, const RequestRows& rr,
                   Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  const int v_dim = in.v_dim;
  const double scale = b.model.softmax_scale;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (int64_t i = rr.begin; i < rr.end; ++i) {
    lo = std::min(lo, rows[i].begin);
    hi = std::max(hi, rows[i].end);
  }
  const int64_t n = hi - lo;
  const int request = rows[rr.begin].request;
  ws.keys.resize(n, D);
  for (int64_t j = 0; j < n; ++j) in.kv.decode(kv_slot_of(b, request, lo + j) * D, D, ws.keys.row(j).data());
  const int64_t tokens_per_chunk = std::max<int64_t>(1, kMaxScoreElements / std::max<int64_t>(1, n * H));
  for (int64_t r0 = rr.begin; r0 < rr.end; r0 += tokens_per_chunk) {
    const int64_t nr = std::min(tokens_per_chunk, rr.end - r0);
    decode_query_rows(in, r0, nr, ws.queries);
    ws.scores.noalias() = ws.queries * ws.keys.transpose();  // [nr*H, n] fp32 GEMM
    ws.probs.resize(nr * H, n);
    std::vector<double> lse((size_t)(nr * H));
    for (int64_t t = 0; t < nr; ++t) {
      const RowWindow& w = rows[r0 + t];
      for (int h = 0; h < H; ++h) {
        const int64_t i = t * H + h;
        lse[i] = softmax_row(ws.scores.row(i).data(), ws.probs.row(i).data(), n, w.begin - lo, w.end - lo, scale);
      }
    }
    ws.values_out.noalias() = ws.probs * ws.keys.leftCols(v_dim);  // [nr*H, v_dim] fp32 GEMM
    store_rows(ws.values_out, lse, r0, nr, v_dim, H, ref);
    for (int64_t t = 0; t < nr; ++t) ref.computed[r0 + t] = 1;
  }
}

// Sparse rows: each token attends to its own position set (docs/design.md §3).
void sparse_row(const Batch& b, const RowWindow& w, const Inputs& in, Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  const int64_t n = (int64_t)w.sparse_positions.size();
  ws.keys.resize(n, D);
  for (int64_t j = 0; j < n; ++j) in.kv.decode(kv_slot_of(b, w.request, w.sparse_positions[j]) * D, D, ws.keys.row(j).data());
  decode_query_rows(in, w.row, 1, ws.queries);
  ws.scores.noalias() = ws.queries * ws.keys.transpose();
  ws.probs.resize(H, n);
  std::vector<double> lse((size_t)H);
  for (int h = 0; h < H; ++h)
    lse[h] = softmax_row(ws.scores.row(h).data(), ws.probs.row(h).data(), n, 0, n, b.model.softmax_scale);
  ws.values_out.noalias() = ws.probs * ws.keys.leftCols(in.v_dim);
  store_rows(ws.values_out, lse, w.row, 1, in.v_dim, H, ref);
  ref.computed[w.row] = 1;
}

bool row_is_empty(const RowWindow& w) {
  return w.kind == MaskKind::sparse ? w.sparse_positions.empty() : w.length() <= 0;
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
    if (rows[rr.begin].kind == MaskKind::sparse) {
      for (int64_t i = rr.begin; i < rr.end; ++i) sparse_row(b, rows[i], in, ws, ref);
    } else {
      dense_request(b, rows, in, rr, ws, ref);
    }
  });
  return ref;
}

}  // namespace mlactl
