// Draft trees for topk > 1 verify (docs/stacks/sglang.md §S10): SGLang's verify order (token 0
// the root, parents before children), the allowed columns and key intervals of each row, the
// chain = causal bottom-right case, upstream's own test tree (test_build_eagle_tree.py at
// sgl-project/sglang@888a8794) and every malformed input's error text.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/draft_tree.hpp"
#include "core/types.hpp"
#include "error_text.hpp"

using namespace mlactl;

namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

std::string dt_validate_error(const std::vector<int32_t>& parents, int64_t query_len) {
  return invalid_input_text([&] { validate_draft_tree(DraftTree{parents}, query_len, "/requests/2/draft_tree"); });
}

// SGLang's retrieve_next_token / retrieve_next_sibling (first child, next sibling) to parents
std::vector<int32_t> dt_parents_from_retrieve(const std::vector<int32_t>& next_token, const std::vector<int32_t>& next_sibling) {
  std::vector<int32_t> parents(next_token.size(), -1);
  for (size_t p = 0; p < next_token.size(); ++p)
    for (int32_t c = next_token[p]; c != -1; c = next_sibling[static_cast<size_t>(c)]) parents[static_cast<size_t>(c)] = static_cast<int32_t>(p);
  return parents;
}

}  // namespace

TEST_CASE("draft tree: a chain is causal bottom-right", "[draft_tree]") {
  // topk 1, D = 4 verify tokens (root + 3 drafts), prefix 7: kv_len 11, q_len 4; row i sees
  // [0, kv_len - q_len + i] inclusive = [0, 8 + i)
  const DraftTree chain{{-1, 0, 1, 2}};
  validate_draft_tree(chain, 4, "/requests/0/draft_tree");
  CHECK(is_chain(chain));
  const auto cols = draft_allowed_columns(chain);
  CHECK(cols == std::vector<std::vector<int32_t>>{{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}});
  for (int64_t i = 0; i < 4; ++i) CHECK(draft_row_key_intervals(chain, i, 7) == Intervals{{0, 8 + i}});
  CHECK(draft_depths(chain) == std::vector<int32_t>{0, 1, 2, 3});
  // a lone root (D = 1, plain decode through the verify path)
  CHECK(is_chain(DraftTree{{-1}}));
  CHECK(draft_row_key_intervals(DraftTree{{-1}}, 0, 5) == Intervals{{0, 6}});
}

TEST_CASE("draft tree: a branching tree gives exact sets", "[draft_tree]") {
  // root 0 with children 1 and 2; 3 under 1, 4 under 2
  const DraftTree t{{-1, 0, 0, 1, 2}};
  validate_draft_tree(t, 5, "/requests/1/draft_tree");
  CHECK_FALSE(is_chain(t));
  CHECK(draft_allowed_columns(t) == std::vector<std::vector<int32_t>>{{0}, {0, 1}, {0, 2}, {0, 1, 3}, {0, 2, 4}});
  // prefix 10: draft column j is key 10 + j
  CHECK(draft_row_key_intervals(t, 0, 10) == Intervals{{0, 11}});
  CHECK(draft_row_key_intervals(t, 1, 10) == Intervals{{0, 12}});
  CHECK(draft_row_key_intervals(t, 2, 10) == Intervals{{0, 11}, {12, 13}});
  CHECK(draft_row_key_intervals(t, 3, 10) == Intervals{{0, 12}, {13, 14}});
  CHECK(draft_row_key_intervals(t, 4, 10) == Intervals{{0, 11}, {12, 13}, {14, 15}});
  // no prefix: no empty [0, 0) interval
  CHECK(draft_row_key_intervals(t, 4, 0) == Intervals{{0, 1}, {2, 3}, {4, 5}});
  CHECK(draft_depths(t) == std::vector<int32_t>{0, 1, 1, 2, 2});
  CHECK_THAT(invalid_input_text([&] { draft_row_key_intervals(t, 5, 10); }), Catch::Contains("draft tree: row 5 is outside [0, 5)"));
  CHECK_THAT(invalid_input_text([&] { draft_row_key_intervals(t, 0, -1); }), Catch::Contains("prefix_len -1 is negative"));
}

TEST_CASE("draft tree: upstream build_tree_kernel_efficient test tree", "[draft_tree]") {
  // test/registered/spec/utils/test_build_eagle_tree.py@888a8794 (topk 4, depth 4, 8 verify
  // tokens, seq_lens {5, 10}): its expected retrieve_next_token / retrieve_next_sibling give
  // the parents, and seq_len + depth must give its expected positions
  const auto p0 = dt_parents_from_retrieve({1, 3, 4, 5, 6, 7, -1, -1}, {-1, 2, -1, -1, -1, -1, -1, -1});
  const auto p1 = dt_parents_from_retrieve({1, 2, -1, 6, -1, -1, 7, -1}, {-1, -1, 3, 4, 5, -1, -1, -1});
  CHECK(p0 == std::vector<int32_t>{-1, 0, 0, 1, 2, 3, 4, 5});
  CHECK(p1 == std::vector<int32_t>{-1, 0, 1, 1, 1, 1, 3, 6});
  validate_draft_tree(DraftTree{p0}, 8, "/requests/0/draft_tree");
  validate_draft_tree(DraftTree{p1}, 8, "/requests/1/draft_tree");
  std::vector<int64_t> positions;
  const int64_t seq[2] = {5, 10};
  const std::vector<int32_t>* ps[2] = {&p0, &p1};
  for (int b = 0; b < 2; ++b)
    for (int32_t d : draft_depths(DraftTree{*ps[b]})) positions.push_back(seq[b] + d);
  CHECK(positions == std::vector<int64_t>{5, 6, 6, 7, 7, 8, 8, 9, 10, 11, 12, 12, 12, 12, 13, 14});
  // the mask row of token 7 of request 1: prefix, root, 1, 3, 6, 7 (7 -> 6 -> 3 -> 1 -> 0)
  CHECK(draft_allowed_columns(DraftTree{p1})[7] == std::vector<int32_t>{0, 1, 3, 6, 7});
  CHECK(draft_row_key_intervals(DraftTree{p1}, 7, 10) == Intervals{{0, 12}, {13, 14}, {16, 18}});
}

TEST_CASE("draft tree: malformed trees name the field", "[draft_tree]") {
  CHECK_THAT(dt_validate_error({-1, 0}, 3),
             Catch::Contains("/requests/2/draft_tree/parents: has 2 entries but query_len is 3: one parent per verify token"));
  CHECK_THAT(dt_validate_error({}, 0), Catch::Contains("/requests/2/draft_tree/parents: is empty: a draft tree holds at least its root"));
  CHECK_THAT(dt_validate_error({-1, 5, 0}, 3),
             Catch::Contains("/requests/2/draft_tree/parents/1: is 5, out of range: a parent is -1 (the root, token 0) or a verify token in [0, 3)"));
  CHECK_THAT(dt_validate_error({-1, 0, -2}, 3), Catch::Contains("/requests/2/draft_tree/parents/2: is -2, out of range"));
  CHECK_THAT(dt_validate_error({-1, 2, 1}, 3),
             Catch::Contains("/requests/2/draft_tree/parents/1: closes a cycle 1 -> 2 -> 1: a token cannot be its own ancestor"));
  CHECK_THAT(dt_validate_error({-1, 1}, 2), Catch::Contains("/requests/2/draft_tree/parents/1: closes a cycle 1 -> 1"));
  CHECK_THAT(dt_validate_error({0}, 1), Catch::Contains("/requests/2/draft_tree/parents/0: closes a cycle 0 -> 0"));
  CHECK_THAT(dt_validate_error({-1, 3, 0, 1}, 4), Catch::Contains("/requests/2/draft_tree/parents/1: closes a cycle 1 -> 3 -> 1"));
  CHECK_THAT(dt_validate_error({1, -1}, 2),
             Catch::Contains("/requests/2/draft_tree/parents/0: is 1, but token 0 is the root (SGLang's bonus token, the last committed token) and must be -1"));
  CHECK_THAT(dt_validate_error({-1, 0, -1}, 3),
             Catch::Contains("/requests/2/draft_tree/parents/2: is -1, a second root: only token 0 has no parent"));
  CHECK_THAT(dt_validate_error({-1, 2, 0}, 3),
             Catch::Contains("/requests/2/draft_tree/parents/1: is 2, not earlier than token 1: SGLang orders verify tokens so that a parent precedes its child"));
  // the helpers refuse an invalid tree too
  CHECK_THAT(invalid_input_text([] { draft_allowed_columns(DraftTree{{-1, 2, 1}}); }), Catch::Contains("closes a cycle"));
  CHECK_FALSE(is_chain(DraftTree{{-1, 0, 0}}));
}

TEST_CASE("draft tree: all small trees are ancestor-closed and a chain is one interval per row", "[draft_tree]") {
  int trees = 0;
  for (int d = 1; d <= 7; ++d) {
    std::vector<int32_t> parents(static_cast<size_t>(d), 0);
    parents[0] = -1;
    // odometer over parents[i] in [0, i)
    while (true) {
      const DraftTree t{parents};
      validate_draft_tree(t, d, "");
      ++trees;
      const auto cols = draft_allowed_columns(t);
      const auto depth = draft_depths(t);
      bool all_single = true;
      for (int i = 0; i < d; ++i) {
        const auto& c = cols[static_cast<size_t>(i)];
        REQUIRE(!c.empty());
        CHECK(c.front() == 0);
        CHECK(c.back() == i);
        CHECK(std::is_sorted(c.begin(), c.end()));
        for (int32_t j : c)
          if (j != 0) CHECK(std::binary_search(c.begin(), c.end(), parents[static_cast<size_t>(j)]));
        CHECK(static_cast<int32_t>(c.size()) == depth[static_cast<size_t>(i)] + 1);
        for (int64_t prefix : {int64_t(0), int64_t(5)}) {
          const auto iv = draft_row_key_intervals(t, i, prefix);
          int64_t total = 0;
          for (size_t k = 0; k < iv.size(); ++k) {
            CHECK(iv[k].first < iv[k].second);
            if (k > 0) CHECK(iv[k - 1].second < iv[k].first);  // merged: a gap between neighbours
            total += iv[k].second - iv[k].first;
          }
          CHECK(total == prefix + static_cast<int64_t>(c.size()));
          if (iv.size() != 1) all_single = false;
        }
      }
      CHECK(is_chain(t) == all_single);
      int i = d - 1;
      while (i >= 1 && parents[static_cast<size_t>(i)] == i - 1) parents[static_cast<size_t>(i--)] = 0;
      if (i < 1) break;
      ++parents[static_cast<size_t>(i)];
    }
  }
  CHECK(trees == 1 + 1 + 2 + 6 + 24 + 120 + 720);
}
