// "Did you mean": the closest of a set of names to a mistyped word (unknown commands,
// options, defect ids). Depends on nothing.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace mlactl {

// Levenshtein distance.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return d[b.size()];
}

// The closest name, when it is close enough to be what was meant: a unique name the
// word is a prefix of, else the smallest edit distance within a third of the length.
inline std::optional<std::string> nearest_name(const std::string& word, const std::vector<std::string>& names) {
  std::vector<std::string> prefixed;
  for (const auto& n : names)
    if (word.size() >= 3 && n.compare(0, word.size(), word) == 0) prefixed.push_back(n);
  if (prefixed.size() == 1) return prefixed.front();
  std::optional<std::string> best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& n : names) {
    const size_t dist = edit_distance(word, n);
    if (dist < best_d) best_d = dist, best = n;
  }
  return best;
}

}  // namespace mlactl
