// Planner tests: AITER v1.2 worked vectors (docs/stacks/vllm-rocm-aiter.md §A3),
// buffer sizes (§A1.1), fold table (§A5.1, §A6, §A10), Triton / non-persistent split
// counts, and a seeded grid where every planner passes check_invariants.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/invariants.hpp"
#include "core/planners/expectations.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"
#include "core/rng.hpp"
#include "tests/common/work_items.hpp"

using namespace mlactl;

namespace {

using Row = testing::WorkRow7;  // [b, ploc, qs, qe, ks, ke, koff]
using testing::work_rows;

std::vector<int32_t> indptr_of(const std::vector<int32_t>& lens) {
  std::vector<int32_t> p{0};
  for (int32_t l : lens) p.push_back(p.back() + l);
  return p;
}

AiterPlanInput aiter_input(Arch arch, int H, int L, const std::vector<int32_t>& kv_lens, int num_cu,
                           DType q = DType::bf16, DType kv = DType::bf16, bool causal = true) {
  AiterPlanInput in;
  in.arch = arch;
  in.num_cu = num_cu;
  in.num_heads = H;
  in.causal = causal;
  in.max_seqlen_qo = L;
  in.uni_seqlen_qo = L;
  in.kv_indptr = indptr_of(kv_lens);
  in.qo_indptr = indptr_of(std::vector<int32_t>(kv_lens.size(), L));
  in.kv_last_page_len.assign(kv_lens.size(), 1);
  in.dtype_q = q;
  in.dtype_kv = kv;
  return in;
}


std::vector<std::array<int32_t, 2>> final_map(std::initializer_list<std::array<int32_t, 2>> l) { return l; }

std::string describe(const InvariantReport& r) {
  std::string s = "violations: " + std::to_string(r.total_violations);
  for (size_t i = 0; i < r.violations.size() && i < 5; ++i) s += "\n  " + r.violations[i].kind + ": " + r.violations[i].message;
  return s;
}

bool has_note(const WorkList& wl, const std::string& needle) {
  return std::any_of(wl.notes.begin(), wl.notes.end(), [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Worked vectors A–D (docs/stacks/vllm-rocm-aiter.md §A3). A–C are printed in full there; D's first three works are
// printed and the rest is derived by hand from the §A3 rules (see the comments).

TEST_CASE("aiter v1.2 worked vector A: split across 3 CUs", "[planners][aiter]") {
  const WorkList wl = plan_aiter_v12(aiter_input(Arch::gfx950, 16, 1, {100, 700, 40}, 4));
  CHECK(wl.work_indptr == std::vector<int32_t>{0, 2, 3, 4, 5});
  CHECK(work_rows(wl) == std::vector<Row>{{0, -1, 0, 1, 0, 100, 0},
                                        {1, 0, 1, 2, 100, 148, 652},
                                        {1, 1, 1, 2, 148, 564, 236},
                                        {1, 2, 1, 2, 564, 800, 0},
                                        {2, -1, 2, 3, 800, 840, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 0, 3, 3});
  CHECK(wl.reduce_final_map == final_map({{-1, -1}, {1, 2}, {-1, -1}}));
  CHECK(wl.reduce_partial_map == std::vector<int32_t>{0, 1, 2});
  CHECK(wl.num_partial_rows == 3);
  CHECK(wl.num_q_rows == 3);
  for (const WorkInfo& w : wl.work_info) CHECK(w.pad == 0);
}

TEST_CASE("aiter v1.2 worked vector B: L=4, one split tile", "[planners][aiter]") {
  const WorkList wl = plan_aiter_v12(aiter_input(Arch::gfx950, 16, 4, {600, 34}, 4));
  CHECK(wl.work_indptr == std::vector<int32_t>{0, 1, 2, 3, 3});
  CHECK(work_rows(wl) == std::vector<Row>{{0, 0, 0, 4, 0, 304, 296}, {0, 4, 0, 4, 304, 600, 0}, {1, -1, 4, 8, 600, 634, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 2, 2});
  CHECK(wl.reduce_final_map == final_map({{0, 4}, {-1, -1}}));
  CHECK(wl.reduce_partial_map == std::vector<int32_t>{0, 4});
  CHECK(wl.num_partial_rows == 8);
  CHECK(wl.planned_view.q_tokens_per_tile == 4);
}

TEST_CASE("aiter v1.2 worked vector C: the tail rule keeps a 2-token tail on CU0", "[planners][aiter]") {
  const WorkList wl = plan_aiter_v12(aiter_input(Arch::gfx950, 16, 4, {274}, 2));
  CHECK(wl.work_indptr == std::vector<int32_t>{0, 1, 1});
  CHECK(work_rows(wl) == std::vector<Row>{{0, -1, 0, 4, 0, 274, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 0});
  CHECK(wl.reduce_final_map == final_map({{-1, -1}}));
  CHECK(wl.reduce_partial_map.empty());
}

TEST_CASE("aiter v1.2 worked vector D: q split, one token per tile, causal trim in koff", "[planners][aiter]") {
  // H=128 L=2 on gfx950 bf16: native, Wg=128, H*2 > Wg so each tile is one token.
  const WorkList wl = plan_aiter_v12(aiter_input(Arch::gfx950, 128, 2, {300, 400}, 4));
  // §A3 prints the first three works. The rest, by hand: CU1 has 22 blocks left, so
  // (b1,row0) [300,700) trimmed to 699 gets a 6-block fragment [300,396) (koff 304) and its
  // remainder [396,699) (koff 1) on CU2; CU2 has 19 left, so (b1,row1) gets [300,348) and CU3
  // the rest [348,700).
  CHECK(wl.work_indptr == std::vector<int32_t>{0, 2, 4, 6, 7});
  CHECK(work_rows(wl) == std::vector<Row>{{0, -1, 0, 1, 0, 299, 1},
                                        {0, 0, 1, 2, 0, 48, 252},
                                        {0, 1, 1, 2, 48, 300, 0},
                                        {1, 2, 2, 3, 300, 396, 304},
                                        {1, 3, 2, 3, 396, 699, 1},
                                        {1, 4, 3, 4, 300, 348, 352},
                                        {1, 5, 3, 4, 348, 700, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 0, 2, 4, 6});
  CHECK(wl.reduce_final_map == final_map({{-1, -1}, {1, 2}, {2, 3}, {3, 4}}));
  CHECK(wl.reduce_partial_map == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(wl.planned_view.heads == 128);
  CHECK(wl.planned_view.fold_ratio == 1);
  CHECK(wl.planned_view.q_tokens_per_tile == 1);
  const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(indptr_of({300, 400}), 2, 1, true));
  INFO(describe(rep));
  CHECK(rep.ok);
}

TEST_CASE("aiter v1.2: worked vectors pass the invariant checker, with balance stats", "[planners][aiter]") {
  const auto in = aiter_input(Arch::gfx950, 16, 1, {100, 700, 40}, 4);
  const WorkList wl = plan_aiter_v12(in);
  const MetadataInfo cap = mla_metadata_info_v1(Arch::gfx950, 4, 3, 1, 16, DType::bf16, DType::bf16, false);
  InvariantOptions opt;
  opt.capacity = &cap;
  const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 1, 1, true), opt);
  INFO(describe(rep));
  CHECK(rep.ok);
  // Loads in blocks: CU0 (7+16)+(3+16)=42, CU1 26+16=42, CU2 15+16=31, CU3 3+16=19.
  CHECK(rep.balance.max_load == Approx(42));
  CHECK(rep.balance.mean_load == Approx(33.5));
  CHECK(rep.balance.efficiency == Approx(33.5 / 42));
  CHECK(rep.balance.split_tiles == 1);
  CHECK(rep.balance.works == 5);
}

// ---------------------------------------------------------------------------------------------
// get_mla_metadata_info_v1 (docs/stacks/vllm-rocm-aiter.md §A1.1), each case derived by hand.

TEST_CASE("mla_metadata_info_v1 buffer sizes", "[planners][aiter]") {
  SECTION("gfx950 bf16 16 heads L1, 4 requests, 256 CUs: rule 2, 1 tile") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx950, 256, 4, 1, 16, DType::bf16, DType::bf16, false);
    CHECK(m.max_splits == 256);
    CHECK(m.tiles_per_batch == 1);
    CHECK(m.work_indptr == 257);
    CHECK(m.work_info_set == 259);       // (4 + 255) * 1
    CHECK(m.reduce_indptr == 5);
    CHECK(m.reduce_final_map == 4);
    CHECK(m.reduce_partial_map == 259);  // min(259, 510) * 1
  }
  SECTION("gfx950 bf16 128 heads L4, 32 requests: rule 3, one tile per token") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx950, 256, 32, 4, 128, DType::bf16, DType::bf16, false);
    CHECK(m.tiles_per_batch == 4);
    CHECK(m.reduce_indptr == 129);
    CHECK(m.work_info_set == 1148);       // (32 + 255) * 4
    CHECK(m.reduce_partial_map == 1148);  // min(287, 510) * 4
  }
  SECTION("gfx942 fp8 128 heads L2, 8 requests, 304 CUs: rule 2, ceil(256/128) tiles") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx942, 304, 8, 2, 128, DType::fp8, DType::fp8, false);
    CHECK(m.tiles_per_batch == 2);
    CHECK(m.work_indptr == 305);
    CHECK(m.work_info_set == 622);        // (8 + 303) * 2
    CHECK(m.reduce_partial_map == 622);   // min(311, 606) * 2
    CHECK(m.reduce_final_map == 16);
  }
  SECTION("sparse: eff_L 1, B = batch * max_seqlen_qo") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx950, 256, 2, 4, 16, DType::bf16, DType::bf16, true);
    CHECK(m.tiles_per_batch == 1);
    CHECK(m.reduce_indptr == 9);
    CHECK(m.work_info_set == 263);
  }
  SECTION("max_split_per_batch raises the partial map to tile_cnt + min(max_splits, msb * B)") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx950, 4, 100, 1, 16, DType::bf16, DType::bf16, false, true, 32,
                                                false, 2);
    CHECK(m.work_info_set == 103);
    CHECK(m.reduce_partial_map == 104);  // max(min(103, 6), 100 + min(4, 200))
  }
  SECTION("gfx950 bf16 48 heads L1 falls to the 16-row default (§A10.4)") {
    const MetadataInfo m = mla_metadata_info_v1(Arch::gfx950, 256, 2, 1, 48, DType::bf16, DType::bf16, false);
    CHECK(m.tiles_per_batch == 3);
    CHECK(m.work_info_set == 771);  // (2 + 255) * 3
  }
  SECTION("experimental HK m16x4 doubles max_splits") {
    const MetadataInfo m =
        mla_metadata_info_v1(Arch::gfx950, 256, 2, 4, 16, DType::fp8, DType::fp8, false, true, 32, false, -1, true);
    CHECK(m.max_splits == 512);
    CHECK(m.work_indptr == 513);
  }
  SECTION("non-fast and intra-batch modes") {
    const MetadataInfo slow = mla_metadata_info_v1(Arch::gfx950, 8, 3, 1, 16, DType::bf16, DType::bf16, false, false);
    CHECK(slow.work_info_set == 24);
    CHECK(slow.reduce_partial_map == 24);
    const MetadataInfo intra =
        mla_metadata_info_v1(Arch::gfx950, 8, 3, 1, 16, DType::bf16, DType::bf16, false, true, 32, true);
    CHECK(intra.work_info_set == 96);
    CHECK(intra.reduce_partial_map == 96);
  }
  SECTION("heads not a multiple of 8 fail AITER's assert") {
    CHECK_THROWS_AS(mla_metadata_info_v1(Arch::gfx950, 256, 2, 1, 12, DType::bf16, DType::bf16, false), Error);
  }
}

// ---------------------------------------------------------------------------------------------
// Fold / native table (§A2, §A5.1, §A5.3, §A6, §A10).

TEST_CASE("aiter_fold: native and folded cases", "[planners][aiter]") {
  for (int H : {16, 32, 48, 64, 80, 96, 112, 128}) {
    const AiterFold f = aiter_fold(Arch::gfx950, H, 1, false, false, false);
    INFO("gfx950 bf16 H=" << H);
    CHECK(f.native);  // every bf16 case on gfx950 is native (#3063)
    CHECK(f.ratio == 1);
    CHECK(f.heads == H);
  }
  CHECK(aiter_fold(Arch::gfx942, 128, 1, true, true, false).native);
  CHECK(aiter_fold(Arch::gfx942, 128, 3, true, true, false).native);
  {
    const AiterFold f = aiter_fold(Arch::gfx942, 128, 1, false, false, false);
    CHECK_FALSE(f.native);
    CHECK(f.ratio == 8);
    CHECK(f.heads == 16);
  }
  CHECK(aiter_fold(Arch::gfx950, 32, 1, true, true, false).native);
  {
    // bf16 q + fp8 KV is neither "both fp8" nor "neither fp8": 32 heads fold by 2.
    const AiterFold f = aiter_fold(Arch::gfx950, 32, 1, false, true, false);
    CHECK(f.ratio == 2);
    CHECK(f.heads == 16);
  }
  // §A10.5: gfx942 fp8 64 heads is native only at q_len 1.
  CHECK(aiter_fold(Arch::gfx942, 64, 1, true, true, false).native);
  CHECK(aiter_fold(Arch::gfx942, 64, 2, true, true, false).ratio == 4);
  CHECK(aiter_fold(Arch::gfx942, 64, 1, false, false, false).ratio == 4);
  CHECK(aiter_fold(Arch::gfx950, 48, 1, true, true, false).ratio == 3);
  // Experimental HK MTP: gfx942 fp8 32 x 4 is native only with the switch.
  CHECK(aiter_fold(Arch::gfx942, 32, 4, true, true, true).native);
  CHECK(aiter_fold(Arch::gfx942, 32, 4, true, true, false).ratio == 2);
  // §A5.3 q tiling: gfx950 bf16 48 heads uses 64-row tiles only when H*L >= 64 (§A10.4).
  {
    const AiterFold f = aiter_fold(Arch::gfx950, 48, 2, false, false, false);
    CHECK(f.wg == 64);
    CHECK(f.qo_splits);
    const AiterFold g = aiter_fold(Arch::gfx950, 48, 1, false, false, false);
    CHECK(g.wg == 128);
    CHECK_FALSE(g.qo_splits);
  }
  CHECK(aiter_fold(Arch::gfx950, 32, 3, true, true, false).wg == 64);
  CHECK(aiter_fold(Arch::gfx950, 16, 5, false, false, false).wg == 64);
  CHECK(aiter_fold(Arch::gfx942, 16, 16, false, false, false).wg == 128);
}

TEST_CASE("aiter planner: omitted dtypes plan as bf16 (docs/stacks/vllm-rocm-aiter.md §A6)", "[planners][aiter]") {
  auto in = aiter_input(Arch::gfx942, 128, 1, {64, 64}, 8, DType::fp8, DType::fp8);
  const WorkList real = plan_aiter_v12(in);
  CHECK(real.planned_view.heads == 128);
  CHECK(real.planned_view.fold_ratio == 1);
  CHECK(real.planned_view.q_dtype == DType::fp8);
  in.dtypes_given = false;
  const WorkList omitted = plan_aiter_v12(in);
  CHECK(omitted.planned_view.heads == 16);
  CHECK(omitted.planned_view.fold_ratio == 8);
  CHECK(omitted.planned_view.q_dtype == DType::bf16);
  CHECK(omitted.planned_view.kv_dtype == DType::bf16);
  CHECK(has_note(omitted, "dtypes not given"));
  // Folded batch index and 16-head q rows: 2 requests x 8 groups.
  CHECK(omitted.num_q_rows == 16);
  CHECK(omitted.work_info.back().batch_idx == 15);
  // Under the kernel's (native) view, the folded plan leaves rows uncovered: the defect is visible.
  const InvariantReport rep =
      check_invariants(omitted, real.planned_view, expect_per_request_uniform(in.kv_indptr, 1, 1, true));
  CHECK_FALSE(rep.ok);
}

TEST_CASE("aiter planner: unsupported head counts raise AITER's error", "[planners][aiter]") {
  auto in = aiter_input(Arch::gfx942, 24, 1, {64}, 8);
  CHECK_THROWS_WITH(plan_aiter_v12(in), Catch::Contains("only supports #heads in [16, 64, 128]"));
}

TEST_CASE("aiter planner: §A10 findings become notes, never crashes", "[planners][aiter]") {
  SECTION("§A10.1: parallel planner and a zero-length request") {
    // payload = ceil(Σ/4)+16; request 1 (len 0) arrives after request 0 leaves less than 16 blocks.
    auto in = aiter_input(Arch::gfx950, 16, 1, {300, 0, 300, 300}, 4);
    const WorkList wl = plan_aiter_v12(in);
    CHECK(has_note(wl, "AITER would run its parallel planner here; it differs on zero-length KV requests (docs/stacks/vllm-rocm-aiter.md §A10.1)"));
    const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 1, 1, true));
    CHECK(rep.ok);
    // The serial planner still gives the zero-length request its (empty) work.
    CHECK(std::any_of(wl.work_info.begin(), wl.work_info.end(), [](const WorkInfo& w) { return w.batch_idx == 1; }));
  }
  SECTION("no note without a zero-length request or outside the parallel shape") {
    CHECK_FALSE(has_note(plan_aiter_v12(aiter_input(Arch::gfx950, 16, 1, {300, 10}, 4)), "parallel planner"));
    CHECK_FALSE(has_note(plan_aiter_v12(aiter_input(Arch::gfx950, 16, 2, {300, 0}, 4)), "parallel planner"));
  }
  SECTION("fold with non-uniform q_len: AITER reads qo_indptr past its end") {
    auto in = aiter_input(Arch::gfx942, 64, 2, {100, 200}, 8);
    in.uni_seqlen_qo = -1;
    const WorkList wl = plan_aiter_v12(in);
    CHECK(wl.work_info.empty());
    CHECK(has_note(wl, "qo_indptr"));
  }
  SECTION("non-uniform q_len with q tiling (§A10.2)") {
    auto in = aiter_input(Arch::gfx950, 128, 2, {100, 200}, 8);
    in.qo_indptr = {0, 2, 3};
    in.uni_seqlen_qo = -1;
    const WorkList wl = plan_aiter_v12(in);
    CHECK(has_note(wl, "§A10.2"));
  }
  SECTION("max_seqlen_qo < 1") {
    auto in = aiter_input(Arch::gfx950, 16, 1, {100, 2000}, 4);
    in.max_seqlen_qo = -1;
    const WorkList wl = plan_aiter_v12(in);
    CHECK(has_note(wl, "max_seqlen_qo < 1"));
  }
  SECTION("fold with page_size > 1") {
    auto in = aiter_input(Arch::gfx942, 32, 1, {10, 20}, 8);  // pages
    in.page_size = 16;
    in.kv_granularity = 16;
    in.kv_last_page_len = {5, 9};
    const WorkList wl = plan_aiter_v12(in);
    CHECK(has_note(wl, "page_size > 1"));
  }
  SECTION("multi-token q tiles with several tiles per request: causal trim counted in tiles") {
    // gfx950 fp8 32 heads L=3: Wg 64, two tiles of 2 and 1 tokens.
    auto in = aiter_input(Arch::gfx950, 32, 3, {100, 50}, 8, DType::fp8, DType::fp8);
    const WorkList wl = plan_aiter_v12(in);
    CHECK(has_note(wl, "causal trim counts tiles"));
    const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 3, 1, true));
    REQUIRE_FALSE(rep.ok);
    for (const Violation& v : rep.violations) CHECK(v.kind == "extra");
    CHECK(rep.violations[0].q_row == 0);  // token 0 of request 0 sees one entry past its window
    CHECK(rep.violations[0].kv_end - rep.violations[0].kv_begin == 1);
  }
}

TEST_CASE("aiter planner: paged KV (page_size 16) and sparse topk mode", "[planners][aiter]") {
  SECTION("paged, L=1: kv in pages, kv_offset in tokens") {
    auto in = aiter_input(Arch::gfx950, 16, 1, {40, 3, 70}, 4);  // pages
    in.page_size = 16;
    in.kv_granularity = 16;
    in.kv_last_page_len = {7, 16, 1};
    const WorkList wl = plan_aiter_v12(in);
    const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 1, 1, true));
    INFO(describe(rep));
    CHECK(rep.ok);
    CHECK(wl.planned_view.page_size == 16);
    for (const WorkInfo& w : wl.work_info) {
      const int32_t end = in.kv_indptr[w.batch_idx + 1];
      if (w.kv_end == end) CHECK(w.kv_offset == 0);
      else CHECK(w.kv_offset == (end - w.kv_end - 1) * 16 + in.kv_last_page_len[w.batch_idx]);
    }
  }
  SECTION("sparse: every q token its own batch over a topk-strided index list") {
    AiterPlanInput in = aiter_input(Arch::gfx950, 16, 1, {10, 50, 33}, 4);
    in.qo_indptr = {0, 2, 4, 6};  // 2 tokens per request
    in.topk = 32;
    const WorkList wl = plan_aiter_v12(in);
    CHECK(wl.planned_view.q_layout == QLayout::per_token_sparse);
    // token s = 2r + j covers [32 s, 32 s + min(len_r, 32))
    std::vector<RowExpectation> rows;
    const int lens[3] = {10, 50, 33};
    for (int s = 0; s < 6; ++s) rows.push_back({s, 32 * s, 32 * s + std::min(lens[s / 2], 32), true});
    const InvariantReport rep = check_invariants(wl, wl.planned_view, rows);
    INFO(describe(rep));
    CHECK(rep.ok);
    for (const WorkInfo& w : wl.work_info) {
      CHECK(w.batch_idx == w.qo_start / 2);  // the original request
      if (w.partial_qo_loc < 0) CHECK(w.kv_offset == 1 - w.qo_start % 2);  // ori_L-1-token
    }
  }
  SECTION("max_split_per_batch caps the split budget") {
    auto in = aiter_input(Arch::gfx950, 16, 1, {4000}, 80);
    in.max_split_per_batch = 4;
    const WorkList wl = plan_aiter_v12(in);
    CHECK(wl.work_info.size() <= 5);
    const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 1, 1, true));
    CHECK(rep.ok);
  }
}

// ---------------------------------------------------------------------------------------------
// Triton, Gluon, non-persistent.

TEST_CASE("triton_num_kv_splits: min(next_pow2(max(1, len // 512)), 2 CU)", "[planners][triton]") {
  CHECK(triton_num_kv_splits(0, 80) == 1);
  CHECK(triton_num_kv_splits(511, 80) == 1);
  CHECK(triton_num_kv_splits(1023, 80) == 1);
  CHECK(triton_num_kv_splits(1024, 80) == 2);
  CHECK(triton_num_kv_splits(1536, 80) == 4);
  CHECK(triton_num_kv_splits(8192, 80) == 16);
  CHECK(triton_num_kv_splits(65536, 80) == 128);
  CHECK(triton_num_kv_splits(65536, 4) == 8);
  CHECK(triton_num_kv_splits(1 << 20, 304) == 608);
}

TEST_CASE("triton planner: equal chunks, empty ones dropped, rows of length 0 get no work", "[planners][triton]") {
  RowPlanInput in;
  in.row_indptr = indptr_of({0, 5, 1, 100});
  in.num_cu = 80;
  const WorkList wl = plan_triton(in, 2048);  // 4 splits
  // len 5: chunk 2 -> [0,2) [2,4) [4,5), the 4th chunk is empty; len 1 -> one final work.
  CHECK(work_rows(wl) == std::vector<Row>{{1, 0, 1, 2, 0, 2, 3},
                                        {1, 1, 1, 2, 2, 4, 1},
                                        {1, 2, 1, 2, 4, 5, 0},
                                        {2, -1, 2, 3, 5, 6, 0},
                                        {3, 3, 3, 4, 6, 31, 75},
                                        {3, 4, 3, 4, 31, 56, 50},
                                        {3, 5, 3, 4, 56, 81, 25},
                                        {3, 6, 3, 4, 81, 106, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 3, 3, 7});
  CHECK(wl.reduce_final_map == final_map({{1, 2}, {-1, -1}, {3, 4}}));
  CHECK(wl.num_partial_rows == 7);
  CHECK(check_invariants(wl, wl.planned_view, expect_rows(in.row_indptr)).ok);
}

TEST_CASE("gluon planners: one work per row; bh16 fixed-budget split", "[planners][gluon]") {
  RowPlanInput in;
  in.row_indptr = indptr_of({0, 300, 1000, 1001});
  in.heads = 8;
  in.num_cu = 2;
  const WorkList g = plan_gluon(in);
  CHECK(g.work_info.size() == 4);
  CHECK(g.planned_view.heads == 8);
  CHECK(g.work_indptr == std::vector<int32_t>{0, 2, 4});
  CHECK(check_invariants(g, g.planned_view, expect_rows(in.row_indptr)).ok);

  // 2 requests x q_len 2, 8 heads: NUM_KV_SPLITS = 256 // (2*2*1) = 64; request 1's seq_len is
  // 1001, len_per_split = max(64, 1001 // 64 = 15) = 64 -> 16 splits for its 1001-entry row.
  const WorkList s = plan_gluon_split(in, 2, 2);
  int64_t row3 = 0;
  for (const WorkInfo& w : s.work_info)
    if (w.qo_start == 3) {
      ++row3;
      CHECK((w.kv_start - 1300) % 64 == 0);
    }
  CHECK(row3 == 16);
  const InvariantReport rep = check_invariants(s, s.planned_view, expect_rows(in.row_indptr));
  INFO(describe(rep));
  CHECK(rep.ok);
}

TEST_CASE("get_meta_param split counts (docs/stacks/vllm-rocm-aiter.md §A7.2)", "[planners][nonpersistent]") {
  CHECK(get_meta_param_splits(1, 8192, 16, 1, false, 80) == 16);   // one request: fill the CUs
  CHECK(get_meta_param_splits(80, 8192, 16, 1, false, 80) == 1);   // already one wave
  CHECK(get_meta_param_splits(40, 8192, 16, 1, false, 80) == 2);
  CHECK(get_meta_param_splits(4, 100, 16, 1, true, 80) == 1);      // fp8: ceil(100/128) = 1
  CHECK(get_meta_param_splits(1, 300, 16, 1, true, 80) == 3);      // fp8 caps: ceil(300/128)=3, floor(299/128)+1=3
}

TEST_CASE("non-persistent planner: all q rows per chunk, causal through kv_offset", "[planners][nonpersistent]") {
  NonPersistentInput in;
  in.kv_indptr = indptr_of({1000, 3, 0});
  in.qo_indptr = indptr_of({3, 3, 3});
  in.q_len = 3;
  in.num_cu = 80;
  const WorkList wl = plan_nonpersistent(in);
  const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 3, 1, true));
  INFO(describe(rep));
  CHECK(rep.ok);
  for (const WorkInfo& w : wl.work_info) CHECK(w.qo_end - w.qo_start == 3);
}

// ---------------------------------------------------------------------------------------------
// Seeded grid: every planner's output passes check_invariants on what vLLM produces.

namespace {

std::vector<int32_t> random_kv_lens(Rng& rng, int batch, int L) {
  static const int32_t edges[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4096};
  std::vector<int32_t> lens;
  for (int b = 0; b < batch; ++b) {
    int32_t len;
    const uint64_t kind = rng.below(4);
    if (kind == 0) len = edges[rng.below(sizeof(edges) / sizeof(edges[0]))];
    else if (kind == 3) len = static_cast<int32_t>(rng.below(20000));
    else len = static_cast<int32_t>(rng.below(3000));
    // seq_len >= q_len except for padding slots (seq_len 0)
    if (len != 0 && len < L) len = L;
    lens.push_back(len);
  }
  return lens;
}

}  // namespace

TEST_CASE("seeded grid: every planner's work list passes the invariants", "[planners][invariants][grid]") {
  Rng rng(20260822);
  const int cus[] = {4, 80, 256, 304};
  int aiter_cases = 0, aiter_findings = 0, other_cases = 0;
  for (int c = 0; c < 240; ++c) {
    const int batch = 1 + static_cast<int>(rng.below(64));
    const int L = 1 + static_cast<int>(rng.below(8));
    const bool causal = rng.below(4) != 0;
    const Arch arch = rng.below(2) ? Arch::gfx950 : Arch::gfx942;
    const bool fp8 = rng.below(2) != 0;
    const int num_cu = cus[rng.below(4)];
    // heads: multiples of 16, or a small raw head count padded to 16 (head_padding)
    const bool small = rng.below(4) == 0;
    const int raw_heads = small ? 1 + static_cast<int>(rng.below(15)) : 16 * (1 + static_cast<int>(rng.below(8)));
    const int heads = small ? 16 : raw_heads;
    const std::vector<int32_t> lens = random_kv_lens(rng, batch, L);
    const std::vector<int32_t> kv_indptr = indptr_of(lens);
    INFO("case " << c << ": B=" << batch << " L=" << L << " H=" << heads << " causal=" << causal << " "
                 << to_string(arch) << (fp8 ? " fp8" : " bf16") << " CU=" << num_cu);

    // ---- AITER v1.2 (page 1, uniform L, max_seqlen_qo >= 1: what vLLM passes) ----
    AiterPlanInput in = aiter_input(arch, heads, L, lens, num_cu, fp8 ? DType::fp8 : DType::bf16,
                                    fp8 ? DType::fp8 : DType::bf16, causal);
    WorkList wl;
    bool refused = false;
    try {
      wl = plan_aiter_v12(in);
    } catch (const Error&) {
      refused = true;  // AITER's own head check (none expected for these head counts)
    }
    CHECK_FALSE(refused);
    if (!refused) {
      ++aiter_cases;
      const auto rows = expect_per_request_uniform(kv_indptr, L, wl.planned_view.fold_ratio, causal);
      const MetadataInfo cap = mla_metadata_info_v1(arch, num_cu, batch, L, heads, in.dtype_q, in.dtype_kv, false);
      InvariantOptions opt;
      opt.capacity = &cap;
      opt.partial_row_capacity = cap.reduce_partial_map * L;
      const InvariantReport rep = check_invariants(wl, wl.planned_view, rows, opt);
      INFO(describe(rep));
      if (has_note(wl, "causal trim counts tiles")) {
        // The §A7.1 diagonal over multi-token tiles: only over-attention, never gaps.
        ++aiter_findings;
        for (const Violation& v : rep.violations) CHECK(v.kind == "extra");
      } else {
        CHECK(rep.ok);
      }
    }

    // ---- non-persistent ----
    NonPersistentInput np;
    np.kv_indptr = kv_indptr;
    np.qo_indptr = indptr_of(std::vector<int32_t>(lens.size(), L));
    np.heads = heads;
    np.q_len = L;
    np.causal = causal;
    np.kv_fp8 = fp8;
    np.num_cu = num_cu;
    {
      const WorkList n = plan_nonpersistent(np);
      const InvariantReport rep = check_invariants(n, n.planned_view, expect_per_request_uniform(kv_indptr, L, 1, causal));
      INFO("nonpersistent " << describe(rep));
      CHECK(rep.ok);
    }

    // ---- row planners over the R0 flatten: row r*L+t has max(0, s-(L-1)+t) entries (causal) ----
    static const int pages[] = {1, 16, 64};
    const int page = pages[rng.below(3)];
    std::vector<int32_t> row_lens;
    int64_t max_seq = 0;
    for (int32_t s : lens) {
      max_seq = std::max<int64_t>(max_seq, s);
      for (int t = 0; t < L; ++t) {
        const int32_t tokens = causal ? std::max(0, s - (L - 1) + t) : s;
        row_lens.push_back((tokens + page - 1) / page);  // entries in KV units of `page`
      }
    }
    RowPlanInput rp;
    rp.row_indptr = indptr_of(row_lens);
    rp.heads = raw_heads;
    rp.num_cu = num_cu;
    rp.page_size = page;
    rp.gluon_block_n = fp8 ? 128 : 64;
    const auto row_rows = expect_rows(rp.row_indptr);
    for (const WorkList& r : {plan_triton(rp, (max_seq + page - 1) / page), plan_gluon(rp), plan_gluon_split(rp, batch, L)}) {
      const InvariantReport rep = check_invariants(r, r.planned_view, row_rows);
      INFO(r.planner << " " << describe(rep));
      CHECK(rep.ok);
      CHECK(r.planned_view.page_size == page);
      ++other_cases;
    }
  }
  CHECK(aiter_cases == 240);
  CHECK(other_cases == 720);
  // The multi-token-tile finding must show up in the grid (gfx950 MTP shapes), but not everywhere.
  CHECK(aiter_findings > 0);
  CHECK(aiter_findings < aiter_cases / 2);
}

// Manual performance check (hidden): `unit_tests "[.perf]"`.
TEST_CASE("perf: plan 16,384 requests (q_len 8, 16 heads, kv ~4k, 256 CUs)", "[.perf]") {
  Rng rng(7);
  std::vector<int32_t> lens;
  for (int b = 0; b < 16384; ++b) lens.push_back(3584 + static_cast<int32_t>(rng.below(1025)));
  const AiterPlanInput in = aiter_input(Arch::gfx950, 16, 8, lens, 256);
  const auto t0 = std::chrono::steady_clock::now();
  const WorkList wl = plan_aiter_v12(in);
  const auto t1 = std::chrono::steady_clock::now();
  const InvariantReport rep = check_invariants(wl, wl.planned_view, expect_per_request_uniform(in.kv_indptr, 8, 1, true));
  const auto t2 = std::chrono::steady_clock::now();
  const double plan_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double check_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::printf("plan_aiter_v12: %zu works in %.2f ms; check_invariants: %.2f ms (ok=%d, efficiency %.4f)\n",
              wl.work_info.size(), plan_ms, check_ms, rep.ok ? 1 : 0, rep.balance.efficiency);
  CHECK(rep.ok);
  CHECK(plan_ms < 50.0);
}
