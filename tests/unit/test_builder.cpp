// vLLM R1 _build_decode, the R0 flatten, uniform-MTP padding, head padding
// (docs/stacks/vllm-rocm-aiter.md §V1 (a), (d), §V2, §V5.1, §V5.3, §V5.4, §V5.7).
#include <catch2/catch.hpp>

#include <functional>

#include "core/batch_parse.hpp"
#include "core/vllm_common.hpp"
#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/stacks/vllm_rocm_aiter/builder.hpp"
#include "core/heads.hpp"
#include "core/semantics.hpp"

using namespace mlactl;
using nlohmann::json;

namespace {
Batch seed000() {
  json d = {{"schema", 1},
            {"model", {{"num_heads", 12}}},
            {"kv_cache", {{"layout", "sequential"}}},
            {"requests", json::array({{{"context_len", 0}, {"query_len", 8}},
                                      {{"context_len", 1}, {"query_len", 8}},
                                      {{"context_len", 37}, {"query_len", 8}},
                                      {{"context_len", 512}, {"query_len", 8}},
                                      {{"padding", true}}})}};
  return parse_batch(d);
}
// straightforward transcription of the reference rule, for the exhaustive comparison
// vLLM's rule restated: max_qo_len is an input of its own (the builder passes max(q), the
// vLLM test varies it independently).
int64_t uniform_ref(const std::vector<int64_t>& q, int64_t Q, int64_t N) {
  int64_t R = q.size(), sum = 0;
  for (auto x : q) sum += x;
  if (R == 0 || N <= 0 || N <= sum || N % R) return 0;
  int64_t u = N / R;
  if (u <= 1) return 0;
  bool all = true, some = false, bad = false, zero_seen = false, after = false;
  for (auto x : q) {
    all &= x > 0;
    if (x > 0) { some = true; bad |= x != u; after |= zero_seen; } else zero_seen = true;
  }
  if (all) return 0;
  if (some && (Q != u || bad)) return 0;
  if (after) return 0;
  return u;
}
}  // namespace

TEST_CASE("seed 000: R0 flatten rows are causal prefixes", "[builder]") {
  Batch b = seed000();
  DecodeMetadata m = build_decode(b);
  CHECK(m.max_qo_len == 8);
  CHECK(m.paged_kv_indptr == std::vector<int32_t>{0, 8, 17, 62, 582, 590});
  std::vector<int64_t> want;
  for (int64_t s : {8, 9, 45, 520, 0})
    for (int t = 0; t < 8; ++t) want.push_back(std::max<int64_t>(0, s - 7 + t));
  REQUIRE(m.flat_indptr.size() == 41);
  for (size_t i = 0; i < want.size(); ++i) CHECK(m.flat_indptr[i + 1] - m.flat_indptr[i] == want[i]);
  // each row's window is the ascending prefix r·520 + j (docs/stacks/vllm-rocm-aiter.md §V5.1)
  for (int r = 0; r < 4; ++r)
    for (int t = 0; t < 8; ++t) {
      const int row = r * 8 + t;
      for (int j = 0; j < m.flat_indptr[row + 1] - m.flat_indptr[row]; ++j) REQUIRE(m.flat_indices[m.flat_indptr[row] + j] == r * 520 + j);
    }
  CHECK(m.min_kv_seq_len_r0 == 0);
  CHECK(m.min_kv_seq_len_r1 == 8);
}

TEST_CASE("verify-window-broadcast gives every row the whole request", "[builder]") {
  Batch b = seed000();
  b.inject.push_back("verify-window-broadcast");
  DecodeMetadata m = build_decode(b);
  CHECK(m.flat_indptr[1] - m.flat_indptr[0] == 8);
  CHECK(m.flat_indptr[25] - m.flat_indptr[24] == 520);
}

TEST_CASE("kernel-block index expansion (docs/stacks/vllm-rocm-aiter.md §V2 step 7)", "[builder]") {
  json d = {{"schema", 1},
            {"model", {{"num_heads", 16}}},
            {"kv_cache", {{"block_size", 2}, {"block_table", json::array({json::array({10, 11, 99}), json::array({20, 21, 22})})}}},
            {"requests", json::array({{{"seq_len", 3}, {"query_len", 1}}, {{"seq_len", 5}, {"query_len", 1}}})}};
  DecodeMetadata m = build_decode(parse_batch(d));
  CHECK(m.paged_kv_indptr == std::vector<int32_t>{0, 3, 8});
  CHECK(m.paged_kv_indices == std::vector<int32_t>{20, 21, 22, 40, 41, 42, 43, 44});
  CHECK(m.qo_indptr == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("full-CG padded MTP (docs/stacks/vllm-rocm-aiter.md §V2 worked cases)", "[builder]") {
  json d = {{"schema", 1},
            {"model", {{"num_heads", 16}}},
            {"decode", {{"mtp_qlen", 4}, {"num_decode_tokens", 8}}},
            {"requests", json::array({{{"seq_len", 7}, {"query_len", 4}}, {{"padding", true}}})}};
  DecodeMetadata m = build_decode(parse_batch(d));
  CHECK(m.seq_k == std::vector<int64_t>{7, 4});
  CHECK(m.paged_kv_indptr == std::vector<int32_t>{0, 7, 11});
  CHECK(m.qo_indptr == std::vector<int32_t>{0, 4, 8});
  CHECK(m.uni_seqlen);

  // 12 heads, qlen 8, seq [1032, 0×7], N = 64: min_kv_seq_len ignores padding
  json e = {{"schema", 1}, {"model", {{"num_heads", 12}}}, {"decode", {{"mtp_qlen", 8}, {"num_decode_tokens", 64}}}};
  e["requests"] = json::array({{{"seq_len", 1032}, {"query_len", 8}}});
  for (int i = 0; i < 7; ++i) e["requests"].push_back({{"padding", true}});
  CHECK(build_decode(parse_batch(e), false).min_kv_seq_len_r1 == 1032);

  // uniform qlen 4, seq [7,5]
  json f = {{"schema", 1}, {"model", {{"num_heads", 16}}}, {"requests", json::array({{{"seq_len", 7}, {"query_len", 4}}, {{"seq_len", 5}, {"query_len", 4}}})}};
  DecodeMetadata mf = build_decode(parse_batch(f), false);
  CHECK(mf.qo_indptr == std::vector<int32_t>{0, 4, 8});
  CHECK(mf.uniform_pad == 0);
  CHECK(mf.uni_seqlen);
}

TEST_CASE("uniform-MTP padding equals vLLM's over the test grid (§V5.7)", "[builder]") {
  CHECK(vllm::uniform_padded_mtp_qo_len({}, 0, 4) == 0);
  CHECK(vllm::uniform_padded_mtp_qo_len({4, 4, 0, 0}, 4, 16) == 4);
  CHECK(vllm::uniform_padded_mtp_qo_len({4, 0, 4, 0}, 4, 16) == 0);
  CHECK(vllm::uniform_padded_mtp_qo_len({4, 2, 0, 0}, 4, 16) == 0);
  int64_t cases = 0;
  for (int R = 1; R <= 4; ++R) {
    int total = 1;
    for (int i = 0; i < R; ++i) total *= 4;
    for (int code = 0; code < total; ++code) {
      std::vector<int64_t> q(R);
      int c = code;
      for (int i = 0; i < R; ++i) { q[i] = c % 4; c /= 4; }
      for (int64_t N = 0; N <= 12; ++N)
        for (int64_t Q = 0; Q <= 4; ++Q) {  // max_qo_len, varied independently of q as in vLLM's test
          REQUIRE(vllm::uniform_padded_mtp_qo_len(q, Q, N) == uniform_ref(q, Q, N));
          ++cases;
        }
    }
  }
  // R = 1..4 requests of q_len 0..3 (4 + 16 + 64 + 256 = 340 lists) x 13 N x 5 max_qo_len
  CHECK(cases == 340 * 13 * 5);
}

TEST_CASE("head padding maps (docs/stacks/vllm-rocm-aiter.md §V5.4)", "[heads]") {
  HeadPadding p12 = head_padding(12);
  CHECK(p12.padded_heads == 16);
  CHECK(p12.method == "tile_slice");
  CHECK(p12.source == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3});
  CHECK(p12.unpad == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  HeadPadding p6 = head_padding(6);
  for (int i = 0; i < 16; ++i) CHECK(p6.source[i] == i % 6);
  HeadPadding p8 = head_padding(8);
  CHECK(p8.method == "repeat_interleave");
  CHECK(p8.source == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7});
  HeadPadding p24 = head_padding(24);
  CHECK(p24.padded_heads == 32);
  for (int i = 24; i < 32; ++i) CHECK(p24.source[i] == i - 24);
  CHECK(head_padding(24, true).padded_heads == 24);
  CHECK(head_padding(32).method == "identity");
  CHECK(head_padding(144).padded_heads == 144);
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 24, 31, 32}) {
    HeadPadding p = head_padding(n);
    CHECK(p.padded_heads == std::max(16, ((n + 15) / 16) * 16));
    // unpad(pad(q)) == q: the padded head chosen for h carries h
    for (int h = 0; h < n; ++h) REQUIRE(p.source[p.unpad[h]] == h);
    for (int i = 0; i < p.padded_heads; ++i) REQUIRE((p.source[i] >= 0 && p.source[i] < n));
  }
  // seed 003 defects
  CHECK(head_padding(12, false, {true, false}).padded_heads == 12);
  CHECK(head_padding(6, false, {false, true}).padded_heads == 12);
  CHECK(vllm::num_heads_valid(128));
  CHECK(vllm::num_heads_valid(144));
  CHECK_FALSE(vllm::num_heads_valid(0));
  CHECK_FALSE(vllm::num_heads_valid(129));
}

TEST_CASE("oracle windows: causal, non-causal, padding", "[semantics]") {
  Batch b = seed000();
  auto rows = oracle_windows(b);
  REQUIRE(rows.size() == 40);
  CHECK(rows[0].end == 1);
  CHECK(rows[31].end == 520);
  CHECK(rows[31].position == 519);
  CHECK(rows[32].kind == MaskKind::padding);
  b.decode.causal = false;
  rows = oracle_windows(b);
  CHECK(rows[0].end == 8);
  CHECK(rows[7].end == 8);
  CHECK(rows[0].kind == MaskKind::non_causal);
}

// The size docs/design.md §8 names for the CPU side (its time is a bench matter, not a unit
// test's): every index list of 16,384 MTP requests exact.
TEST_CASE("metadata for 16,384 requests x q_len 8: index pointers and slots exact", "[builder]") {
  json d = {{"schema", 1}, {"model", {{"num_heads", 16}}}, {"decode", {{"mtp_qlen", 8}}}, {"kv_cache", {{"layout", "sequential"}}}};
  d["requests"] = json::array();
  for (int i = 0; i < 16384; ++i) d["requests"].push_back({{"context_len", 100 + (i * 37) % 900}, {"query_len", 8}});
  Batch b = parse_batch(d);
  DecodeMetadata m = build_decode(b, false);
  REQUIRE(m.qo_indptr.size() == 16385);
  REQUIRE(m.paged_kv_indptr.size() == 16385);
  CHECK(m.qo_indptr.back() == 16384 * 8);
  CHECK(m.paged_kv_indices.size() == (size_t)m.paged_kv_indptr.back());
  // sequential layout, block size 1: request i's slots start at i * max seq_len (1007)
  REQUIRE(b.max_seq_len() == 1007);
  int64_t bad = 0;
  for (int i = 0; i < 16384; ++i) {
    const int64_t s = 100 + (i * 37) % 900 + 8;
    bad += m.qo_indptr[i + 1] - m.qo_indptr[i] != 8;
    bad += m.paged_kv_indptr[i + 1] - m.paged_kv_indptr[i] != s;
    for (int64_t j = 0; j < s; ++j) bad += m.paged_kv_indices[m.paged_kv_indptr[i] + j] != i * 1007 + j;
  }
  CHECK(bad == 0);
}
