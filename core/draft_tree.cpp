// Draft trees (docs/stacks/sglang.md §S10). The rules are SGLang's at 888a8794:
//   python/sglang/srt/speculative/eagle_utils.py line 59 (top_scores_index sorted) and
//     line 91 (verify tokens = cat(bonus_token, drafts): token 0 is the root);
//   python/sglang/srt/speculative/spec_utils.py lines 523-577 (parent indices point at an
//     earlier draft step's scores);
//   sgl-kernel/csrc/speculative/eagle_utils.cu lines 34-123 (build_tree_efficient: row tid's
//     mask is the prefix, column seq_len + 0 and its ancestors' and its own columns; the walk
//     up stops at parent_tb_idx == 0, the root; positions = seq_len + depth).
#include "core/draft_tree.hpp"

#include <algorithm>

#include "core/types.hpp"

namespace mlactl {

namespace draft_tree_detail {

inline std::string parent_path(const std::string& json_path, size_t i) { return json_path + "/parents/" + std::to_string(i); }

}  // namespace draft_tree_detail

void validate_draft_tree(const DraftTree& tree, int64_t query_len, const std::string& json_path) {
  using draft_tree_detail::parent_path;
  const auto& p = tree.parents;
  const int64_t d = static_cast<int64_t>(p.size());
  if (d != query_len)
    throw invalid_input(json_path + "/parents", "has " + std::to_string(d) + " entries but query_len is " +
                                                    std::to_string(query_len) + ": one parent per verify token");
  if (d == 0)
    throw invalid_input(json_path + "/parents", "is empty: a draft tree holds at least its root, verify token 0 (parents[0] = -1)");
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] < -1 || p[i] >= d)
      throw invalid_input(parent_path(json_path, i), "is " + std::to_string(p[i]) + ", out of range: a parent is -1 (the root, token 0) or a verify token in [0, " +
                                                         std::to_string(d) + ")");
  // cycles: follow each chain of parents; a token met again on the current walk closes one
  {
    std::vector<int8_t> state(p.size(), 0);  // 0 unseen, 1 on the current walk, 2 reaches a root
    for (size_t start = 0; start < p.size(); ++start) {
      std::vector<int32_t> walk;
      int32_t v = static_cast<int32_t>(start);
      while (v != -1 && state[v] == 0) {
        state[v] = 1;
        walk.push_back(v);
        v = p[v];
      }
      if (v != -1 && state[v] == 1) {
        std::string cyc = std::to_string(v);
        for (int32_t u = p[v];; u = p[u]) {
          cyc += " -> " + std::to_string(u);
          if (u == v) break;
        }
        throw invalid_input(parent_path(json_path, static_cast<size_t>(v)),
                            "closes a cycle " + cyc + ": a token cannot be its own ancestor");
      }
      for (int32_t u : walk) state[u] = 2;
    }
  }
  if (p[0] != -1)
    throw invalid_input(parent_path(json_path, 0), "is " + std::to_string(p[0]) +
                                                       ", but token 0 is the root (SGLang's bonus token, the last committed token) and must be -1");
  for (size_t i = 1; i < p.size(); ++i) {
    if (p[i] == -1)
      throw invalid_input(parent_path(json_path, i),
                          "is -1, a second root: only token 0 has no parent (SGLang's drafts all hang under the bonus token)");
    if (p[i] >= static_cast<int32_t>(i))
      throw invalid_input(parent_path(json_path, i), "is " + std::to_string(p[i]) + ", not earlier than token " + std::to_string(i) +
                                                         ": SGLang orders verify tokens so that a parent precedes its child");
  }
}

std::vector<std::vector<int32_t>> draft_allowed_columns(const DraftTree& tree) {
  validate_draft_tree(tree, static_cast<int64_t>(tree.parents.size()), "");
  std::vector<std::vector<int32_t>> out(tree.parents.size());
  for (size_t i = 0; i < tree.parents.size(); ++i) {
    auto& cols = out[i];
    for (int32_t v = static_cast<int32_t>(i); v != -1; v = tree.parents[v]) cols.push_back(v);
    std::sort(cols.begin(), cols.end());
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> draft_row_key_intervals(const DraftTree& tree, int64_t row, int64_t prefix_len) {
  const int64_t d = static_cast<int64_t>(tree.parents.size());
  if (row < 0 || row >= d)
    throw invalid_input("", "draft tree: row " + std::to_string(row) + " is outside [0, " + std::to_string(d) + ")");
  if (prefix_len < 0) throw invalid_input("", "draft tree: prefix_len " + std::to_string(prefix_len) + " is negative");
  validate_draft_tree(tree, d, "");
  std::vector<int32_t> cols;
  for (int32_t v = static_cast<int32_t>(row); v != -1; v = tree.parents[v]) cols.push_back(v);
  std::sort(cols.begin(), cols.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  if (prefix_len > 0) out.emplace_back(0, prefix_len);
  for (int32_t j : cols) {
    const int64_t k = prefix_len + j;
    if (!out.empty() && out.back().second == k)
      out.back().second = k + 1;
    else
      out.emplace_back(k, k + 1);
  }
  return out;
}

bool is_chain(const DraftTree& tree) {
  for (size_t i = 0; i < tree.parents.size(); ++i)
    if (tree.parents[i] != static_cast<int32_t>(i) - 1) return false;
  return true;
}

std::vector<int32_t> draft_depths(const DraftTree& tree) {
  validate_draft_tree(tree, static_cast<int64_t>(tree.parents.size()), "");
  std::vector<int32_t> depth(tree.parents.size(), 0);
  // parents precede children, so one forward pass
  for (size_t i = 1; i < tree.parents.size(); ++i) depth[i] = depth[tree.parents[i]] + 1;
  return depth;
}

}  // namespace mlactl
