// FA3's scheduler for FLASH_ATTN_MLA (docs/stacks/vllm-cuda.md §C5): num_splits_heuristic,
// get_scheduler_metadata's static split and prepare_varlen_num_blocks' per-batch splits
// against cases worked by hand from the upstream formulas, the kernel's per-tile KV ranges,
// and an exhaustive sweep of small batches whose work lists check_invariants must pass.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/invariants.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "core/stacks/vllm_cuda/planners/fa3.hpp"

using namespace mlactl;
using namespace mlactl::vllm_cuda;

namespace {

Fa3Schedule schedule(const std::vector<int64_t>& lens, const std::vector<int64_t>& qlens, int heads, int max_num_splits = 0, int sms = 132) {
  Fa3SchedulerInput in;
  in.seqused_k = lens;
  in.q_lens = qlens;
  in.num_heads = heads;
  in.num_sm = sms;
  in.max_num_splits = max_num_splits;
  return fa3_get_scheduler_metadata(in);
}

std::vector<int32_t> indptr(const std::vector<int64_t>& lens) {
  std::vector<int32_t> p{0};
  for (int64_t l : lens) p.push_back(p.back() + (int32_t)l);
  return p;
}

Fa3WorkList walk(const Fa3Schedule& s, const std::vector<int64_t>& lens, const std::vector<int64_t>& qlens, int heads) {
  Fa3WorkInput in;
  in.seqlens = lens;
  in.kv_indptr = indptr(lens);
  in.qo_indptr = indptr(qlens);
  in.heads = heads;
  return fa3_work_list(s, in);
}

// every q row's causal window [0, s - (q - 1 - t)) of its request's entries, covered once
InvariantReport check_walk(const Fa3WorkList& fw, const std::vector<int64_t>& lens, const std::vector<int64_t>& qlens) {
  const auto kv = indptr(lens), qo = indptr(qlens);
  std::vector<RowExpectation> rows;
  for (size_t r = 0; r < lens.size(); ++r)
    for (int64_t t = 0; t < qlens[r]; ++t) {
      RowExpectation e;
      e.q_row = qo[r] + t;
      e.kv_begin = kv[r];
      e.kv_end = kv[r] + std::max<int64_t>(0, lens[r] - (qlens[r] - 1 - t));
      rows.push_back(e);
    }
  return check_invariants(fw.work, fw.work.planned_view, rows);
}

}  // namespace

TEST_CASE("fa3 tile size and num_splits_heuristic", "[cuda][fa3]") {
  // tile_size_fwd_sm90(64, 512): 64 x 64
  CHECK(fa3_tile_size_sm90(64, 512).block_m == 64);
  CHECK(fa3_tile_size_sm90(64, 512).block_n == 64);
  // few n blocks: never split
  CHECK(fa3_num_splits_heuristic(1, 132, 4, 1, 0, false, 128) == 1);
  // the SMs almost filled (>= 0.8 * 132 m blocks): 1, causal or not, short KV
  CHECK(fa3_num_splits_heuristic(106, 132, 100, 106, 1000, false, 128) == 1);
  // ... unless one KV head exceeds 50 MB and >= 2 * SMs m blocks, non-causal: ceil(size / 50 MB)
  CHECK(fa3_num_splits_heuristic(300, 132, 2000, 300, 120LL * 1024 * 1024, false, 128) == 3);
  CHECK(fa3_num_splits_heuristic(300, 132, 2000, 300, 120LL * 1024 * 1024, true, 128) == 1);
  // 1 m block, 79 n blocks: efficiency ns/132 up to 79/132; 85 % of it first reached at 68
  CHECK(fa3_num_splits_heuristic(1, 132, 79, 1, 0, false, 128) == 68);
  // 2 m blocks, 64 n blocks: 2ns/132 up to 128/132; 85 % at ns = 55
  CHECK(fa3_num_splits_heuristic(2, 132, 64, 2, 0, false, 128) == 55);
  // 48 m blocks on 108 SMs (upstream's comment): 2 splits (0.89) beat 3 (0.67)
  CHECK(fa3_num_splits_heuristic(48, 108, 100, 48, 0, false, 128) == 2);
}

TEST_CASE("fa3 get_scheduler_metadata: the hand-worked cases", "[cuda][fa3]") {
  SECTION("16 heads, q_len 1, [1000, 64, 5000, 0]: static 68, per batch ceil(n_blocks / 1)") {
    const auto s = schedule({1000, 64, 5000, 0}, {1, 1, 1, 1}, 16);
    CHECK_FALSE(s.is_causal);  // max_seqlen_q 1
    CHECK(s.num_splits_static == 68);
    CHECK(s.dynamic_split);
    CHECK(s.num_n_blocks == std::vector<int32_t>{16, 1, 79, 0});
    CHECK(s.total_blocks == 96);
    CHECK(s.blocks_per_sm == 1);  // ceil(96 * 1.1 / 132)
    CHECK(s.splits == std::vector<int32_t>{16, 1, 68, 1});
    // prepare_seqlen_q (q_len * heads), num_splits_dynamic, semaphore
    CHECK(s.scheduler_metadata == std::vector<int32_t>{16, 16, 16, 16, 16, 1, 68, 1, 0});
    // request 2: 79 blocks over 68 splits of ceil(79 / 68) = 2: splits 40..67 are empty
    const auto fw = walk(s, {1000, 64, 5000, 0}, {1, 1, 1, 1}, 16);
    int empty = 0;
    for (const auto& t : fw.tiles)
      if (t.request == 2 && t.n_block_max <= t.n_block_min) ++empty;
    CHECK(empty == 28);
    CHECK(fw.kernel_tiles == 16 + 1 + 68 + 1);
    REQUIRE(check_walk(fw, {1000, 64, 5000, 0}, {1, 1, 1, 1}).ok);
  }
  SECTION("128 heads, q_len 1, [4096] x 8: static 55, ceil(64 / 9) = 8 splits of 8 blocks") {
    const std::vector<int64_t> lens(8, 4096), q(8, 1);
    const auto s = schedule(lens, q, 128);
    CHECK(s.num_splits_static == 55);
    CHECK(s.num_m_blocks == std::vector<int32_t>(8, 2));
    CHECK(s.total_blocks == 1024);
    CHECK(s.blocks_per_sm == 9);
    CHECK(s.splits == std::vector<int32_t>(8, 8));
    const auto fw = walk(s, lens, q, 128);
    CHECK(fw.kernel_tiles == 8 * 2 * 8);
    // the two m blocks of a token (heads 0-63, 64-127) read the same ranges: one work each split
    REQUIRE(fw.work.work_info.size() == 64);
    CHECK(fw.tiles[1].m_blocks_folded == 2);
    CHECK(fw.tiles[1].n_block_min == 8);
    CHECK(fw.tiles[1].n_block_max == 16);
    // request 0 split 1: entries [512, 1024), partial row 1·8 + 0
    CHECK(fw.work.work_info[1].as_array() == std::array<int32_t, 8>{0, 8, 0, 1, 512, 1024, 4096 - 1024, 0});
    REQUIRE(check_walk(fw, lens, q).ok);
  }
  SECTION("16 heads, q_len 4 (causal), [1000]: one m block of 4 tokens, 14 splits of 2 blocks") {
    const auto s = schedule({1000}, {4}, 16);
    CHECK(s.is_causal);
    CHECK(s.num_splits_static == 14);
    CHECK(s.splits == std::vector<int32_t>{14});
    // prepare_seqlen_q, num_splits_dynamic, num_nheads_in_l2, semaphore
    CHECK(s.scheduler_metadata == std::vector<int32_t>{64, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 0});
    const auto fw = walk(s, {1000}, {4}, 16);
    REQUIRE(fw.tiles.size() == 14);
    CHECK(fw.tiles[7].n_block_min == 14);
    CHECK(fw.tiles[7].n_block_max == 16);
    CHECK(fw.tiles[8].n_block_max == fw.tiles[8].n_block_min);  // empty
    // split 7 reads [896, 1000); its last row (token 3) ends at 1000: kv_offset 0
    CHECK(fw.work.work_info[7].as_array() == std::array<int32_t, 8>{0, 7 * 4, 0, 4, 896, 1000, 0, 0});
    REQUIRE(check_walk(fw, {1000}, {4}).ok);
  }
  SECTION("128 heads, q_len 2 (causal), [1000]: 4 m blocks, tokens 0 and 1 each fold two") {
    const auto s = schedule({1000}, {2}, 128);
    CHECK(s.num_splits_static == 14);
    CHECK(s.splits == std::vector<int32_t>{14});
    const auto fw = walk(s, {1000}, {2}, 128);
    REQUIRE(fw.tiles.size() == 28);
    CHECK(fw.tiles[0].token_begin == 0);
    CHECK(fw.tiles[0].token_end == 1);
    CHECK(fw.tiles[14].token_begin == 1);
    CHECK(fw.kernel_tiles == 4 * 14);
    REQUIRE(check_walk(fw, {1000}, {2}).ok);
  }
  SECTION("short KV: at most 4 blocks never split; static 1 writes no num_splits_dynamic") {
    const auto s = schedule({100, 256}, {1, 1}, 16);
    CHECK(s.num_splits_static == 1);
    CHECK_FALSE(s.dynamic_split);
    CHECK(s.splits == std::vector<int32_t>{1, 1});
    CHECK(s.scheduler_metadata == std::vector<int32_t>{16, 16, 0, 0, 0});
    const auto fw = walk(s, {100, 256}, {1, 1}, 16);
    REQUIRE(fw.work.work_info.size() == 2);
    CHECK(fw.work.work_info[0].as_array() == std::array<int32_t, 8>{0, -1, 0, 1, 0, 100, 0, 0});
  }
  SECTION("full cudagraph: vLLM's max_num_splits 32 is the static count, per batch still dynamic") {
    const auto s = schedule({1000, 64}, {1, 1}, 16, 32);
    CHECK(s.num_splits_static == 32);
    CHECK(s.blocks_per_sm == 1);  // ceil(17 * 1.1 / 132)
    CHECK(s.splits == std::vector<int32_t>{16, 1});
  }
  SECTION("more than 992 requests: mha_fwd disables the split") {
    const std::vector<int64_t> lens(993, 5000), q(993, 1);
    const auto s = schedule(lens, q, 16, 32);
    CHECK(s.num_splits_static == 1);
    CHECK_FALSE(s.dynamic_split);
    CHECK(s.splits == std::vector<int32_t>(993, 1));
  }
}

TEST_CASE("fa3 words per tile", "[cuda][fa3]") {
  const auto s = schedule({1000}, {4}, 16);
  const auto fw = walk(s, {1000}, {4}, 16);
  const auto words = fa3_words(fw, {1000});
  REQUIRE(words.size() == 14);
  CHECK(words[1] == "tile 1: request 0 m block 0 (q tokens [0, 4)), split 1 of 14: KV blocks [2, 4) = tokens [128, 256)");
  CHECK(words[13] == "tile 13: request 0 m block 0 (q tokens [0, 4)), split 13 of 14: KV blocks [26, 26) = tokens [1000, 1000) (empty: writes LSE -inf)");
}

TEST_CASE("fa3 exhaustive: small batches around the 64-token block edges", "[cuda][fa3][exhaustive]") {
  int64_t batches = 0;
  const std::vector<int> head_counts = {1, 16, 48, 128};
  const std::vector<int> split_caps = {0, 32};
  auto check_one = [&](const std::vector<int64_t>& lens, const std::vector<int64_t>& qlens) {
    for (int heads : head_counts)
      for (int cap : split_caps) {
        const auto s = schedule(lens, qlens, heads, cap);
        const size_t b = lens.size();
        REQUIRE(s.splits.size() == b);
        for (size_t r = 0; r < b; ++r) {
          REQUIRE(s.splits[r] >= 1);
          REQUIRE(s.splits[r] <= std::max(1, s.num_splits_static));
        }
        const auto fw = walk(s, lens, qlens, heads);
        // per (request, m block): the splits' ranges tile [0, n_block_max) in order
        for (size_t i = 0; i < fw.tiles.size(); ++i) {
          const auto& t = fw.tiles[i];
          if (t.split > 0) {
            const auto& p = fw.tiles[i - 1];
            REQUIRE(p.request == t.request);
            REQUIRE(p.m_block == t.m_block);
            REQUIRE(t.n_block_min >= p.n_block_max);
          }
        }
        const auto rep = check_walk(fw, lens, qlens);
        INFO("heads " << heads << " cap " << cap << " b " << b << " lens[0] " << lens[0] << " q[0] " << qlens[0]
                      << (rep.violations.empty() ? std::string() : ": " + rep.violations.front().message));
        REQUIRE(rep.ok);
      }
    ++batches;
  };
  const std::vector<int64_t> edges = {1, 2, 63, 64, 65, 127, 128, 129, 640, 5000};
  std::function<void(std::vector<int64_t>&, std::vector<int64_t>&, size_t)> rec = [&](std::vector<int64_t>& cur, std::vector<int64_t>& q, size_t n) {
    if (cur.size() == n) {
      check_one(cur, q);
      return;
    }
    for (int64_t v : edges)
      for (int64_t ql : {1, 2, 4}) {
        if (ql > v) continue;  // seq_len includes the query tokens
        cur.push_back(v);
        q.push_back(ql);
        rec(cur, q, n);
        cur.pop_back();
        q.pop_back();
      }
  };
  for (size_t n = 1; n <= 2; ++n) {
    std::vector<int64_t> cur, q;
    rec(cur, q, n);
  }
  // the largest: three requests over fewer lengths, VARLEN q_len mixes included
  const std::vector<int64_t> few = {1, 64, 65, 5000};
  std::function<void(std::vector<int64_t>&, std::vector<int64_t>&)> rec3 = [&](std::vector<int64_t>& cur, std::vector<int64_t>& q) {
    if (cur.size() == 3) {
      check_one(cur, q);
      return;
    }
    for (int64_t v : few)
      for (int64_t ql : {1, 3}) {
        if (ql > v) continue;
        cur.push_back(v);
        q.push_back(ql);
        rec3(cur, q);
        cur.pop_back();
        q.pop_back();
      }
  };
  std::vector<int64_t> cur, q;
  rec3(cur, q);
  CHECK(batches > 900);
}

TEST_CASE("fa3 through the stack: flash_attn_mla plans with the oracle's expectations", "[cuda][fa3]") {
  const Batch b = parse_batch_text(
      R"({"schema": 1, "platform": {"arch": "sm90"}, "model": {"num_heads": 16},
          "requests": [{"context_len": 999, "query_len": 1}, {"context_len": 4000, "query_len": 1}, {"padding": true}]})",
      "test");
  const auto rb = route_batch(b);
  REQUIRE(rb.decision.route == Route::flash_attn_mla);
  const RoutePlan p = plan_batch(b, rb, oracle_windows(b));
  CHECK(p.work.planner == "fa3_get_scheduler_metadata");
  CHECK_FALSE(p.kernel_view.causal);
  const auto rep = check_invariants(p.work, p.kernel_view, p.expectations);
  INFO((rep.violations.empty() ? std::string() : rep.violations.front().message));
  CHECK(rep.ok);
  bool has_dyn = false;
  for (const auto& a : p.stack_arrays)
    if (a.name == "num_splits_dynamic") {
      has_dyn = true;
      CHECK(a.values.size() == 3);
    }
  CHECK(has_dyn);
}
