// SGLang's Triton decode split heuristic (docs/stacks/sglang.md §S13): the MLA max_kv_splits
// cap, get_num_kv_splits' three paths against cases worked by hand from
// triton_backend.py@888a8794 (the arithmetic in the comments), the refusals of what upstream
// divides by zero, and the stage-1 kernel's per-split KV ranges (decode_attention.py):
// each token's splits cover [0, seq_len) once, empty splits only at the tail.
#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/stacks/sglang/planners/triton_splits.hpp"
#include "core/types.hpp"
#include "error_text.hpp"

using namespace mlactl;
using namespace mlactl::sglang;

namespace {

SglangTritonSplitsInput sg_input(const std::vector<int64_t>& lens, int heads, int kv_heads, int max_kv_splits, int num_group = 1,
                                 int cores = 132) {
  SglangTritonSplitsInput in;
  in.seq_lens = lens;
  in.num_head = heads;
  in.num_kv_head = kv_heads;
  in.max_kv_splits = max_kv_splits;
  in.num_group = num_group;
  in.device_core_count = cores;
  return in;
}

std::vector<std::pair<int64_t, int64_t>> sg_nonempty(int64_t seq, int32_t splits, int max_splits) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& r : sglang_triton_split_kv_ranges(seq, splits, max_splits))
    if (!r.empty()) out.emplace_back(r.start, r.end);
  return out;
}

}  // namespace

TEST_CASE("sglang triton: MLA max_kv_splits cap", "[sglang][triton]") {
  // H100/H200, 64K context, CUDA base 8: next_pow2(132) = 256, next_pow2(cdiv(65536, 32) = 2048)
  // = 2048; max(8, min(256, 2048)) = 256
  CHECK(sglang_triton_max_kv_splits(kSglangTritonBaseKvSplits, 132, 65536) == 256);
  // a short context caps it: cdiv(4096, 32) = 128 -> min(256, 128) = 128
  CHECK(sglang_triton_max_kv_splits(8, 132, 4096) == 128);
  // ... down to below the base: cdiv(200, 32) = 7 -> 8; cdiv(100, 32) = 4 -> 4; max(8, 4) = 8
  CHECK(sglang_triton_max_kv_splits(8, 132, 200) == 8);
  CHECK(sglang_triton_max_kv_splits(8, 132, 100) == 8);
  // unknown core count: the base
  CHECK(sglang_triton_max_kv_splits(8, 0, 65536) == 8);
  CHECK(sglang_triton_max_kv_splits(8, -1, 65536) == 8);
  // HIP base 16 (_handle_amd_specifics), MI300X 304 CUs: next_pow2(304) = 512, 2048 -> 512
  CHECK(sglang_triton_max_kv_splits(kSglangTritonBaseKvSplitsHip, 304, 65536) == 512);
  // ... 256-token context: cdiv(256, 32) = 8 -> min(512, 8) = 8 -> max(16, 8) = 16
  CHECK(sglang_triton_max_kv_splits(kSglangTritonBaseKvSplitsHip, 304, 256) == 16);
  CHECK(sglang_triton_max_kv_splits(kSglangTritonBaseKvSplitsHip, 0, 65536) == 16);
  // __init__: the cap only for MLA; a split tile replaces it: cdiv(65536, 256) = 256,
  // cdiv(65536, 1000) = 66; no tile (0) keeps the cap / the base
  CHECK(sglang_triton_backend_max_kv_splits(8, true, 132, 65536, 0) == 256);
  CHECK(sglang_triton_backend_max_kv_splits(8, false, 132, 65536, 0) == 8);
  CHECK(sglang_triton_backend_max_kv_splits(8, true, 132, 65536, kSglangTritonDeterministicTile) == 256);
  CHECK(sglang_triton_backend_max_kv_splits(8, true, 132, 65536, 1000) == 66);
}

TEST_CASE("sglang triton: uniform decode batch", "[sglang][triton]") {
  // 8 x 4096, 16 heads (DeepSeek at attn-TP 8: config kv heads 128/8 = 16, group 1), cap 256.
  // max = min = 4096 (4096*8 < 4096*10: min = max anyway); splits1 = min(cdiv(4096, 4096), 256)
  // = 1, chunk1 = 4096. ext = 4096/64 = 64, log2 = 6 (exact), 132 * 6 = 792. token_grid =
  // 8*1*16 = 128; splits2 = min(cdiv(792, 128) = 7, 256) = 7; chunk2 = cdiv(4096, 7) = 586.
  // each: max(cdiv(4096, 4096) = 1, cdiv(4096, 586) = 7) = 7
  const auto s = sglang_triton_num_kv_splits(sg_input(std::vector<int64_t>(8, 4096), 16, 16, 256));
  CHECK(s == std::vector<int32_t>(8, 7));
  // per split cdiv(cdiv(4096, 7) = 586, 32) * 32 = 19 * 32 = 608: six of 608, then [3648, 4096)
  CHECK(sglang_triton_kv_len_per_split(4096, 7) == 608);
  const auto r = sg_nonempty(4096, 7, 256);
  REQUIRE(r.size() == 7);
  CHECK(r[0] == std::make_pair<int64_t, int64_t>(0, 608));
  CHECK(r[5] == std::make_pair<int64_t, int64_t>(3040, 3648));
  CHECK(r[6] == std::make_pair<int64_t, int64_t>(3648, 4096));
}

TEST_CASE("sglang triton: lengths within 25 percent count as uniform", "[sglang][triton]") {
  // {1000, 1200, 1100, 1249}: 1249*8 = 9992 < 1000*10 = 10000 -> min = max = 1249;
  // splits1 = 1, chunk1 = 1249. ext = 1249/64 = 19.515625, log2 = 4.28656, 132 * 4.28656 =
  // 565.8 -> 565. token_grid = 4*16 = 64; splits2 = min(cdiv(565, 64) = 9, 256) = 9;
  // chunk2 = cdiv(1249, 9) = 139. 1000 -> cdiv(1000, 139) = 8; 1200 -> 9; 1100 -> 8; 1249 -> 9
  CHECK(sglang_triton_num_kv_splits(sg_input({1000, 1200, 1100, 1249}, 16, 16, 256)) == std::vector<int32_t>{8, 9, 8, 9});
  // {1000, 1250}: 1250*8 = 10000 is not < 10000: min stays 1000. splits1 = min(cdiv(1250,
  // 1000) = 2, 256) = 2, chunk1 = 625. ext = 19.53125, log2 = 4.28771, 132 * it = 565.98 -> 565;
  // token_grid = 32, splits2 = cdiv(565, 32) = 18, chunk2 = cdiv(1250, 18) = 70.
  // 1000 -> max(cdiv(1000, 625) = 2, cdiv(1000, 70) = 15) = 15; 1250 -> max(2, 18) = 18
  CHECK(sglang_triton_num_kv_splits(sg_input({1000, 1250}, 16, 16, 256)) == std::vector<int32_t>{15, 18});
}

TEST_CASE("sglang triton: skewed lengths", "[sglang][triton]") {
  // {100, 8000}, 16 heads, base 8 (not MLA-capped): splits1 = min(cdiv(8000, 100) = 80, 8) = 8,
  // chunk1 = 1000. ext = 125, log2 = 6.96578, 132 * it = 919.5 -> 919; token_grid = 32,
  // splits2 = min(cdiv(919, 32) = 29, 8) = 8, chunk2 = 1000. 100 -> 1; 8000 -> 8
  CHECK(sglang_triton_num_kv_splits(sg_input({100, 8000}, 16, 16, 8)) == std::vector<int32_t>{1, 8});
  // 128 heads (attn-TP 1), {256, 2048}, cap 256: splits1 = min(cdiv(2048, 256) = 8, 256) = 8,
  // chunk1 = 256; ext = 32, log2 = 5, 660; token_grid = 2*128 = 256, splits2 = cdiv(660, 256)
  // = 3, chunk2 = cdiv(2048, 3) = 683. 256 -> max(1, 1) = 1; 2048 -> max(8, cdiv(2048, 683) = 3)
  // = 8: the length-ratio term wins
  CHECK(sglang_triton_num_kv_splits(sg_input({256, 2048}, 128, 128, 256)) == std::vector<int32_t>{1, 8});
}

TEST_CASE("sglang triton: short lengths clamp log2 to 1", "[sglang][triton]") {
  // {50, 100}: 100*8 = 800 is not < 500; splits1 = min(cdiv(100, 50) = 2, 8) = 2, chunk1 = 50.
  // ext = 100/64 = 1.5625, log2 = 0.644 < 1 -> 1.0, 132 * 1 = 132; token_grid = 32,
  // splits2 = min(cdiv(132, 32) = 5, 8) = 5, chunk2 = cdiv(100, 5) = 20.
  // 50 -> max(1, cdiv(50, 20) = 3) = 3; 100 -> max(2, 5) = 5
  CHECK(sglang_triton_num_kv_splits(sg_input({50, 100}, 16, 16, 8)) == std::vector<int32_t>{3, 5});
  // the KV cut: seq 100, 5 splits -> cdiv(cdiv(100, 5) = 20, 32) * 32 = 32: [0,32) [32,64)
  // [64,96) [96,100), and split 4 starts at 128 > 100: an empty tail split below num_kv_splits
  // (upstream produces it; the kernel's `if split_kv_end > split_kv_start` skips it)
  const auto r = sglang_triton_split_kv_ranges(100, 5, 8);
  CHECK(r[3].start == 96);
  CHECK(r[3].end == 100);
  CHECK(r[4].empty());
  CHECK(r[4].start == 128);
  CHECK(r[4].end == 100);
  CHECK(sg_nonempty(50, 3, 8) == std::vector<std::pair<int64_t, int64_t>>{{0, 32}, {32, 50}});
  // max_len 64 exactly: log2(1) = 0 -> 1; one 64-token request, 16 heads: splits2 =
  // cdiv(132, 16) = 9, chunk2 = cdiv(64, 9) = 8 -> 8 splits; the kernel cuts cdiv(cdiv(64, 8),
  // 32) * 32 = 32: two non-empty splits, six empty
  CHECK(sglang_triton_num_kv_splits(sg_input({64}, 16, 16, 256)) == std::vector<int32_t>{8});
  CHECK(sg_nonempty(64, 8, 256).size() == 2);
}

TEST_CASE("sglang triton: num_group > 1 and grouped heads", "[sglang][triton]") {
  // EAGLE draft decode, topk 4: {1000, 3500}, num_group 4, 16 heads, cap 256.
  // 3500*8 = 28000 is not < 10000: splits1 = min(cdiv(3500, 1000) = 4, 256) = 4, chunk1 = 875.
  // ext = 3500/64 = 54.6875, log2 = 5.77314, 132 * it = 762.05 -> 762; token_grid =
  // 2*4*16 = 128, splits2 = cdiv(762, 128) = 6, chunk2 = cdiv(3500, 6) = 584.
  // 1000 -> max(cdiv(1000, 875) = 2, cdiv(1000, 584) = 2) = 2; 3500 -> max(4, 6) = 6;
  // stored at b*num_group + g
  CHECK(sglang_triton_num_kv_splits(sg_input({1000, 3500}, 16, 16, 256, 4)) == std::vector<int32_t>{2, 2, 2, 2, 6, 6, 6, 6});
  // GQA 32 q / 4 kv heads: group 8, block_h = min(16, 8) = 8, token_grid = 2*1*cdiv(32, 8) = 8.
  // {4096, 4096}: ext = 792, splits2 = min(cdiv(792, 8) = 99, 256) = 99, chunk2 =
  // cdiv(4096, 99) = 42 -> cdiv(4096, 42) = 98 splits
  CHECK(sglang_triton_num_kv_splits(sg_input({4096, 4096}, 32, 4, 256)) == std::vector<int32_t>{98, 98});
  // ... which the kernel cuts into cdiv(cdiv(4096, 98) = 42, 32) * 32 = 64 tokens: 64 non-empty
  // splits, 34 empty ones below num_kv_splits
  CHECK(sg_nonempty(4096, 98, 256).size() == 64);
  // 64 q heads on 4 kv heads: group 16, block 16, token_grid cdiv(64, 16) = 4; splits2 =
  // cdiv(792, 4) = 198, chunk2 = cdiv(4096, 198) = 21 -> cdiv(4096, 21) = 196
  CHECK(sglang_triton_num_kv_splits(sg_input({4096}, 64, 4, 256)) == std::vector<int32_t>{196});
  // 40 q heads on 8 kv heads: group 5, block min(16, 5) = 5, token_grid cdiv(40, 5) = 8: 98 as above
  CHECK(sglang_triton_num_kv_splits(sg_input({4096}, 40, 8, 256)) == std::vector<int32_t>{98});
}

TEST_CASE("sglang triton: MLA decode at 64K", "[sglang][triton]") {
  // one 65536-token request, 16 heads, cap 256: splits1 = 1; ext = 1024, log2 = 10, 1320;
  // token_grid 16, splits2 = cdiv(1320, 16) = 83, chunk2 = cdiv(65536, 83) = 790 ->
  // cdiv(65536, 790) = 83. Kernel: cdiv(cdiv(65536, 83) = 790, 32) * 32 = 800; 81 full splits
  // (64800), split 81 = [64800, 65536), split 82 starts at 65600: empty
  const int cap = sglang_triton_max_kv_splits(8, 132, 65536);
  CHECK(sglang_triton_num_kv_splits(sg_input({65536}, 16, 16, cap)) == std::vector<int32_t>{83});
  const auto r = sglang_triton_split_kv_ranges(65536, 83, cap);
  CHECK(r[81].start == 64800);
  CHECK(r[81].end == 65536);
  CHECK(r[82].empty());
  CHECK(sg_nonempty(65536, 83, cap).size() == 82);
}

TEST_CASE("sglang triton: static, no core count and deterministic paths", "[sglang][triton]") {
  auto in = sg_input({1, 500, 9000}, 16, 16, 64, 2);
  in.static_kv_splits = true;
  CHECK(sglang_triton_num_kv_splits(in) == std::vector<int32_t>(6, 64));
  in.static_kv_splits = false;
  in.device_core_count = 0;
  CHECK(sglang_triton_num_kv_splits(in) == std::vector<int32_t>(6, 64));
  // deterministic: static and the core count ignored, cdiv(seq, 256) per token, a 0-token
  // request gets 0 (no refusal on this path: no division by the length)
  in.enable_deterministic = true;
  in.static_kv_splits = true;
  in.seq_lens = {1, 256, 257, 0};
  CHECK(sglang_triton_num_kv_splits(in) == std::vector<int32_t>{1, 1, 1, 1, 2, 2, 0, 0});
  in.split_tile_size = 100;
  CHECK(sglang_triton_num_kv_splits(in) == std::vector<int32_t>{1, 1, 3, 3, 3, 3, 0, 0});
  in.split_tile_size = 0;
  CHECK_THAT(invalid_input_text([&] { sglang_triton_num_kv_splits(in); }), Catch::Contains("split_tile_size is 0"));
}

TEST_CASE("sglang triton: refusals name the problem", "[sglang][triton]") {
  // a zero length on the heuristic path: min_len 0 -> cdiv(max_len, 0)
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({100, 0, 7}, 16, 16, 8)); }),
             Catch::Contains("sglang triton splits: seq_lens[1] is 0: get_num_kv_splits_triton would compute cdiv(max_len, min_len) "
                             "with min_len 0, an integer division by zero"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({0, 0}, 16, 16, 8)); }), Catch::Contains("seq_lens[0] is 0"));
  // ... but the static fill never divides: no refusal
  auto st = sg_input({0, 0}, 16, 16, 8);
  st.static_kv_splits = true;
  CHECK(sglang_triton_num_kv_splits(st) == std::vector<int32_t>{8, 8});
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({}, 16, 16, 8)); }), Catch::Contains("seq_lens is empty"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({-3}, 16, 16, 8)); }), Catch::Contains("seq_lens[0] is -3"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({kSglangTritonMaxSeqLen + 1}, 16, 16, 8)); }),
             Catch::Contains("seq_lens[0] is 214748365"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({10}, 16, 16, 0)); }), Catch::Contains("max_kv_splits is 0"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({10}, 16, 16, 8, 0)); }), Catch::Contains("num_group is 0"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({10}, 16, 0, 8)); }), Catch::Contains("num_head and num_kv_head"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_num_kv_splits(sg_input({10}, 4, 8, 8)); }),
             Catch::Contains("num_head 4 < num_kv_head 8"));
  // the kernel's cdiv(seq_len, num_kv_splits) with 0 splits
  CHECK_THAT(invalid_input_text([] { sglang_triton_split_kv_range(10, 0, 0); }),
             Catch::Contains("num_kv_splits is 0: the decode kernel computes cdiv(seq_len, num_kv_splits)"));
  CHECK_THAT(invalid_input_text([] { sglang_triton_split_kv_range(10, 1, -1); }), Catch::Contains("split_id is -1"));
  // a 0-token request with splits >= 1: every split empty
  for (const auto& r : sglang_triton_split_kv_ranges(0, 3, 4)) CHECK(r.empty());
}

TEST_CASE("sglang triton: splits cover every request KV once with empty splits only at the tail", "[sglang][triton]") {
  std::mt19937_64 rng(36);
  int batches = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const int num_seq = 1 + static_cast<int>(rng() % 48);
    const int heads_opts[] = {1, 4, 8, 16, 32, 64, 128};
    const int heads = heads_opts[rng() % 7];
    const int kv_heads = (rng() % 3 == 0) ? 1 : heads;  // MHA-like config or one KV head
    const int num_group = (rng() % 4 == 0) ? 1 + static_cast<int>(rng() % 8) : 1;
    const int64_t max_ctx = int64_t(1) << (6 + rng() % 12);  // 64 .. 128K
    const int cores_opts[] = {132, 78, 114, 304, 80, 1};
    const int cores = cores_opts[rng() % 6];
    const int cap = sglang_triton_max_kv_splits((rng() % 2) ? 8 : 16, cores, max_ctx);
    std::vector<int64_t> lens(static_cast<size_t>(num_seq));
    const bool skewed = rng() % 2;
    const int64_t base = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_ctx));
    for (auto& l : lens) l = skewed ? 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_ctx)) : std::max<int64_t>(1, base - int64_t(rng() % 8));
    auto in = sg_input(lens, heads, kv_heads, cap, num_group, cores);
    const auto splits = sglang_triton_num_kv_splits(in);
    REQUIRE(splits.size() == lens.size() * static_cast<size_t>(num_group));
    ++batches;
    for (size_t t = 0; t < splits.size(); ++t) {
      const int64_t seq = lens[t / static_cast<size_t>(num_group)];
      const int32_t ns = splits[t];
      INFO("batch " << iter << " token " << t << " seq " << seq << " splits " << ns << " cap " << cap);
      REQUIRE(ns >= 1);
      REQUIRE(ns <= cap);
      CHECK(splits[t] == splits[t - t % static_cast<size_t>(num_group)]);  // one value per request
      const auto ranges = sglang_triton_split_kv_ranges(seq, ns, cap);
      int64_t covered = 0;
      bool seen_empty = false;
      int nonempty = 0;
      for (const auto& r : ranges) {
        if (r.empty()) {
          seen_empty = true;
          continue;
        }
        REQUIRE_FALSE(seen_empty);  // no empty split before a non-empty one
        REQUIRE(r.start == covered);  // contiguous, no overlap
        REQUIRE(r.end > r.start);
        if (r.end != seq) CHECK((r.end - r.start) % kSglangTritonMinBlockKv == 0);
        covered = r.end;
        ++nonempty;
      }
      REQUIRE(covered == seq);
      CHECK(nonempty <= ns);
      CHECK(ranges.size() == static_cast<size_t>(cap));
    }
  }
  CHECK(batches == 3000);
}
