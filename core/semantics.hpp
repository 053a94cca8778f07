// The oracle (docs/design.md §3): what each query row may attend to, from the batch alone.
// The reference and every check use this; it never reads metadata.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.hpp"

namespace mlactl {

// tree: a draft row of a topk > 1 tree verify, which sees the request's prefix, its
// ancestors among the drafts and itself (core/draft_tree.hpp); like sparse it is a set of
// positions, not one interval.
enum class MaskKind { causal, non_causal, padding, sparse, tree };
// Rows whose KV is a set of positions (RowWindow::sparse_positions), not [begin, end).
inline bool has_position_set(MaskKind k) { return k == MaskKind::sparse || k == MaskKind::tree; }
inline const char* to_string(MaskKind k) {
  switch (k) {
    case MaskKind::causal: return "causal";
    case MaskKind::non_causal: return "non_causal";
    case MaskKind::padding: return "padding";
    case MaskKind::sparse: return "sparse";
    case MaskKind::tree: return "tree";
  }
  return "?";
}

struct RowWindow {
  int64_t row = 0;       // global query row (request-major, token-minor), padding rows included
  int request = 0;
  int64_t token = 0;     // t within the request's query block
  int64_t position = 0;  // c + t
  int64_t begin = 0;     // KV positions [begin, end) of the request
  int64_t end = 0;
  MaskKind kind = MaskKind::causal;
  int64_t length() const { return end - begin; }
  // sparse, tree: the positions this token sees (sorted ascending, distinct); else empty
  std::vector<int64_t> sparse_positions;
};

std::vector<RowWindow> oracle_windows(const Batch& b);

// Sparse index sets per query token (explicit or drawn from data.seed), in the
// token order of oracle_windows' non-padding rows.
std::vector<std::vector<int64_t>> sparse_index_sets(const Batch& b);

}  // namespace mlactl
