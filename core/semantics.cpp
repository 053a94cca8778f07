#include "core/semantics.hpp"

#include <algorithm>

#include "core/draft_tree.hpp"
#include "core/rng.hpp"

namespace mlactl {

std::vector<std::vector<int64_t>> sparse_index_sets(const Batch& b) {
  std::vector<std::vector<int64_t>> sets;
  if (!b.sparse) return sets;
  if (!b.sparse->random_indices) return b.sparse->indices;
  // random: min(c + t + 1, topk) distinct positions per token (docs/design.md §2), drawn by a
  // partial Fisher-Yates over [0, visible) so the cost is O(topk) per token.
  Rng rng(b.seed, kStreamSparse);
  for (const auto& r : b.requests) {
    if (r.padding) continue;
    for (int64_t t = 0; t < r.query_len; ++t) {
      const int64_t visible = r.context_len + t + 1;
      const int64_t n = std::min(visible, b.sparse->topk);
      std::vector<int64_t> pick;
      pick.reserve(n);
      if (n == visible) {
        for (int64_t i = 0; i < n; ++i) pick.push_back(i);
      } else if (n * 4 >= visible) {
        std::vector<int64_t> all(visible);
        for (int64_t i = 0; i < visible; ++i) all[i] = i;
        for (int64_t i = 0; i < n; ++i) std::swap(all[i], all[i + rng.below(visible - i)]);
        pick.assign(all.begin(), all.begin() + n);
      } else {
        // sparse draw with rejection: n << visible
        std::vector<int64_t> seen;
        while ((int64_t)pick.size() < n) {
          int64_t x = (int64_t)rng.below(visible);
          auto it = std::lower_bound(seen.begin(), seen.end(), x);
          if (it != seen.end() && *it == x) continue;
          seen.insert(it, x);
          pick.push_back(x);
        }
      }
      std::sort(pick.begin(), pick.end());
      sets.push_back(std::move(pick));
    }
  }
  return sets;
}

std::vector<RowWindow> oracle_windows(const Batch& b) {
  std::vector<RowWindow> rows;
  const int64_t pad_rows = b.rows_per_padding_request();
  int64_t total = 0;
  for (const auto& r : b.requests) total += r.padding ? pad_rows : r.query_len;
  rows.reserve(total);
  std::vector<std::vector<int64_t>> sparse_sets = sparse_index_sets(b);
  size_t sparse_i = 0;
  int64_t row = 0;
  for (size_t ri = 0; ri < b.requests.size(); ++ri) {
    const Request& r = b.requests[ri];
    const int64_t n = r.padding ? pad_rows : r.query_len;
    for (int64_t t = 0; t < n; ++t) {
      RowWindow w;
      w.row = row++;
      w.request = (int)ri;
      w.token = t;
      w.position = r.context_len + t;
      if (r.padding) {
        w.kind = MaskKind::padding;  // discarded by the stack: printed, never compared
      } else if (b.sparse) {
        w.kind = MaskKind::sparse;
        w.sparse_positions = std::move(sparse_sets[sparse_i++]);
        w.begin = 0;
        w.end = r.context_len + t + 1;  // the causal bound the index set lives in
      } else if (!r.draft_parents.empty()) {
        // a draft of a tree: the prefix, its ancestors and itself (core/draft_tree.hpp)
        w.kind = MaskKind::tree;
        for (const auto& [lo, hi] : draft_row_key_intervals(DraftTree{r.draft_parents}, t, r.context_len))
          for (int64_t p = lo; p < hi; ++p) w.sparse_positions.push_back(p);
        w.begin = 0;
        w.end = r.context_len + t + 1;  // the causal bound the set lives in
      } else if (b.decode.causal) {
        w.kind = MaskKind::causal;  // token t sees [0, c + t + 1)
        w.end = r.context_len + t + 1;
      } else {
        w.kind = MaskKind::non_causal;  // a draft block: every token sees [0, s)
        w.end = r.seq_len();
      }
      rows.push_back(std::move(w));
    }
  }
  return rows;
}

}  // namespace mlactl
