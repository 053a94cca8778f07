// A speculative-decoding draft tree (topk > 1 tree verify, docs/stacks/sglang.md §S10) as the
// batch file carries it: one parent index per verify token. The convention is SGLang's
// verify order (sgl-project/sglang@888a8794, python/sglang/srt/speculative/eagle_utils.py
// build_tree_kernel_efficient and sgl-kernel/csrc/speculative/eagle_utils.cu
// build_tree_efficient):
//   * a request verifies D = query_len tokens; token 0 is the root, SGLang's bonus token (the
//     token the target model produced last: committed, but not yet in the KV cache, position
//     seq_len); tokens 1 .. D-1 are the drafts, in ascending draft-score index order;
//   * parents[0] == -1 (the root's parent is the committed prefix), and for i >= 1
//     0 <= parents[i] < i: every draft hangs under the root, and a parent precedes its child
//     (top_scores_index is sorted, and a parent is always drawn at an earlier draft step);
//   * the D tokens' keys sit at KV columns prefix_len + j (prefix_len = seq_len, the KV
//     already cached), and verify row i attends the whole prefix plus the columns of its
//     ancestors and itself (the tree mask, FULL_MASK mode).
// A chain (parents[i] == i - 1) is topk = 1's causal verify.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlactl {

struct DraftTree {
  std::vector<int32_t> parents;  // parents[i] for verify token i; -1 for token 0 (the root) only
};

// Throws invalid_input(json_path + "/parents" or json_path + "/parents/<i>", ...) for: a
// length other than query_len, an empty tree, an index outside [-1, D), a cycle, a root other
// than token 0 or more than one root, a parent not earlier than its child.
void validate_draft_tree(const DraftTree& tree, int64_t query_len, const std::string& json_path);

// For each verify row i, the sorted verify columns it may attend: its ancestors and itself
// (always including 0, the root). The tree must be valid (validated here, json_path "").
std::vector<std::vector<int32_t>> draft_allowed_columns(const DraftTree& tree);

// Row `row`'s allowed keys over the request's whole KV of prefix_len + D columns: the prefix
// [0, prefix_len) plus prefix_len + j for each allowed verify column j, as sorted, merged
// half-open intervals (no empty interval). Throws invalid_input for a row outside [0, D) or
// a negative prefix_len.
std::vector<std::pair<int64_t, int64_t>> draft_row_key_intervals(const DraftTree& tree, int64_t row, int64_t prefix_len);

// True when every row's allowed set is one interval: parents[i] == i - 1 for all i (the
// topk = 1 chain, bottom-right causal). For a valid tree the two statements are the same.
bool is_chain(const DraftTree& tree);

// Depth of each verify token (root 0): SGLang's positions are seq_len + depth.
std::vector<int32_t> draft_depths(const DraftTree& tree);

}  // namespace mlactl
