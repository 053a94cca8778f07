// The host side of the fused combine (CombineMode::fused, and spread, which also
// needs each work's split index in its tile): plan_fused_combine
// (kernels/fused_combine.hpp) maps works to reduce tiles only for plans where the
// last arrival at a tile's counter is its last split, and refuses the rest;
// fused_combine_rejects (kernels/select_stage1.hpp) allows only the transposed
// wgmma kernel; the mode names round-trip.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/combine_mode.hpp"
#include "kernels/fused_combine.hpp"
#include "kernels/select_stage1.hpp"

using mlactl::FusedCombinePlan;
using mlactl::WorkInfo;
using mlactl::WorkList;

namespace {

WorkInfo work(int32_t ploc, int32_t q0, int32_t q1, int32_t ks, int32_t ke) {
  WorkInfo w;
  w.partial_qo_loc = ploc;
  w.qo_start = q0;
  w.qo_end = q1;
  w.kv_start = ks;
  w.kv_end = ke;
  return w;
}

// One request of `splits` works (q rows [0, rows), partial rows rows·k), one per
// workgroup, and one reduce tile over them: the S1 shape's plan.
WorkList one_tile(int splits, int rows = 1) {
  WorkList w;
  w.num_workgroups = splits;
  for (int k = 0; k <= splits; ++k) w.work_indptr.push_back(k);
  for (int k = 0; k < splits; ++k) w.work_info.push_back(work(rows * k, 0, rows, 64 * k, 64 * (k + 1)));
  w.reduce_indptr = {0, splits};
  w.reduce_final_map = {{0, rows}};
  for (int k = 0; k < splits; ++k) w.reduce_partial_map.push_back(rows * k);
  w.num_partial_rows = int64_t(rows) * splits;
  w.num_q_rows = rows;
  return w;
}

std::optional<FusedCombinePlan> plan(const WorkList& w, std::string* why, int64_t kv = 1 << 20) {
  return mlactl::plan_fused_combine(w, w.num_q_rows, kv, why);
}

}  // namespace

TEST_CASE("fused combine: an S1-like plan maps every split work to its one tile", "[fused_combine]") {
  std::string why;
  const auto p = plan(one_tile(132), &why);
  REQUIRE(p);
  CHECK(why.empty());
  CHECK(p->num_tiles == 1);
  CHECK(p->combined_tiles == 1);
  REQUIRE(p->work_tile.size() == 132);
  for (int32_t t : p->work_tile) CHECK(t == 0);
  REQUIRE(p->work_split.size() == 132);
  for (int32_t k = 0; k < 132; ++k) CHECK(p->work_split[size_t(k)] == k);
}

TEST_CASE("fused combine: a work's split index is its place in the tile's partial map, not its work index",
          "[fused_combine]") {
  WorkList w = one_tile(4);
  w.reduce_partial_map = {3, 1, 0, 2};  // split k reads partial row 3, 1, 0, 2: works 3, 1, 0, 2
  std::string why;
  const auto p = plan(w, &why);
  INFO(why);
  REQUIRE(p);
  CHECK(p->work_tile == std::vector<int32_t>{0, 0, 0, 0});
  CHECK(p->work_split == std::vector<int32_t>{2, 1, 3, 0});
}

TEST_CASE("fused combine: several requests, unsplit and empty tiles, several works per workgroup", "[fused_combine]") {
  WorkList w;
  // request 0: rows [0, 2), 3 splits (partial rows 0, 2, 4); request 1: row 2, direct
  // output (1-split tile, ploc -1); request 2: row 3, 2 splits (partial rows 6, 7);
  // tile 3: {-1, -1} (nothing to write), tile 4: no splits.
  w.work_info = {work(0, 0, 2, 0, 10), work(2, 0, 2, 10, 20), work(4, 0, 2, 20, 30), work(-1, 2, 3, 30, 40),
                 work(6, 3, 4, 40, 50), work(7, 3, 4, 50, 60)};
  w.num_workgroups = 3;
  w.work_indptr = {0, 2, 4, 6};  // two works per workgroup, across tiles
  w.reduce_indptr = {0, 3, 4, 6, 6, 6};
  w.reduce_final_map = {{0, 2}, {2, 3}, {3, 4}, {-1, -1}, {5, 6}};
  w.reduce_partial_map = {0, 2, 4, -1, 6, 7};
  w.num_partial_rows = 8;
  w.num_q_rows = 6;
  std::string why;
  const auto p = plan(w, &why);
  INFO(why);
  REQUIRE(p);
  CHECK(p->num_tiles == 5);
  CHECK(p->combined_tiles == 2);
  CHECK(p->work_tile == std::vector<int32_t>{0, 0, 0, -1, 2, 2});
  CHECK(p->work_split == std::vector<int32_t>{0, 1, 2, -1, 0, 1});
}

TEST_CASE("fused combine: a work with no rows or no workgroup writes nothing and gets no tile", "[fused_combine]") {
  WorkList w = one_tile(2);
  w.work_info.push_back(work(5, 0, 0, 0, 0));  // no rows: never arrives, and not needed
  w.num_partial_rows = 6;
  std::string why;
  const auto p = plan(w, &why);
  REQUIRE(p);
  CHECK(p->work_tile == std::vector<int32_t>{0, 0, -1});
  // A split whose work no workgroup runs would never arrive: refused.
  WorkList lost = one_tile(3);
  lost.num_workgroups = 2;
  lost.work_indptr = {0, 1, 2};
  CHECK_FALSE(plan(lost, &why));
  CHECK(why.find("not the partial of one run work") != std::string::npos);
}

TEST_CASE("fused combine: plans it refuses", "[fused_combine]") {
  std::string why;
  SECTION("a split covered by a work of other rows") {
    WorkList w = one_tile(2, 2);
    w.work_info[1].qo_end = 1;  // writes one of the split's two rows
    CHECK_FALSE(plan(w, &why));
  }
  SECTION("two works writing overlapping partial rows") {
    WorkList w = one_tile(2, 2);
    w.work_info.push_back(work(1, 0, 2, 0, 1));
    w.work_indptr.back() = 3;
    CHECK_FALSE(plan(w, &why));
    CHECK(why.find("overlapping partial rows") != std::string::npos);
  }
  SECTION("one work as the split of two tiles") {
    WorkList w = one_tile(2);
    w.reduce_indptr = {0, 2, 4};
    w.reduce_final_map = {{0, 1}, {0, 1}};
    w.reduce_partial_map = {0, 1, 0, 1};
    CHECK_FALSE(plan(w, &why));
  }
  SECTION("a direct-output work on a combined tile's rows") {
    WorkList w = one_tile(2);
    w.work_info.push_back(work(-1, 0, 1, 0, 1));
    w.work_indptr.back() = 3;
    CHECK_FALSE(plan(w, &why));
    CHECK(why.find("output rows") != std::string::npos);
  }
  SECTION("ranges the device would reject (the work would be skipped)") {
    WorkList w = one_tile(2);
    w.work_info[0].kv_end = 1 << 21;
    CHECK_FALSE(plan(w, &why));
    WorkList m = one_tile(2);
    m.reduce_partial_map[1] = 7;
    CHECK_FALSE(plan(m, &why));
    WorkList ip = one_tile(2);
    ip.work_indptr = {0, 2, 1};
    CHECK_FALSE(plan(ip, &why));
  }
  CHECK_FALSE(why.empty());
}

TEST_CASE("fused combine: only the transposed wgmma kernel", "[fused_combine]") {
  const mla::Stage1Device h200{mla::GpuVendor::nvidia, 90, true}, a100{mla::GpuVendor::nvidia, 80, true};
  mla::Stage1Params p;
  p.heads = 12;
  p.max_pairs = 12;
  CHECK(mla::fused_combine_rejects(p, h200).empty());
  CHECK_FALSE(mla::fused_combine_rejects(p, a100).empty());  // mma.sync runs
  p.kernel = mla::Stage1Kernel::cuda_core;
  CHECK_FALSE(mla::fused_combine_rejects(p, h200).empty());
  p.kernel = mla::Stage1Kernel::automatic;
  p.max_pairs = 64;  // the row-major wgmma kernel
  CHECK(mla::fused_combine_rejects(p, h200).find("row-major") != std::string::npos);
  p.kv_type = mla::ElemType::fp8;  // fp8 KV: the transposed kernel (select_stage1 keeps it to <= 16 pairs)
  p.max_pairs = 16;
  CHECK(mla::fused_combine_rejects(p, h200).empty());
}

TEST_CASE("fused combine: mode names", "[fused_combine]") {
  for (mla::CombineMode m : {mla::CombineMode::separate, mla::CombineMode::fused, mla::CombineMode::separate_early,
                             mla::CombineMode::spread})
    CHECK(mla::combine_mode_from_name(mla::to_string(m)) == m);
  CHECK_FALSE(mla::combine_mode_from_name("both"));
  // fused and spread replace the reduce launch; separate and separate_early keep it
  CHECK(mla::combines_in_stage1(mla::CombineMode::fused));
  CHECK(mla::combines_in_stage1(mla::CombineMode::spread));
  CHECK_FALSE(mla::combines_in_stage1(mla::CombineMode::separate));
  CHECK_FALSE(mla::combines_in_stage1(mla::CombineMode::separate_early));
}

TEST_CASE("fused combine: at most kFusedMaxSplitWorks split works per workgroup", "[fused_combine]") {
  auto in_one_workgroup = [](int splits) {
    WorkList w = one_tile(splits);
    w.num_workgroups = 1;
    w.work_indptr = {0, splits};
    return w;
  };
  std::string why;
  CHECK(plan(in_one_workgroup(mla::kFusedMaxSplitWorks), &why));
  CHECK_FALSE(plan(in_one_workgroup(mla::kFusedMaxSplitWorks + 1), &why));
  CHECK(why.find("split works") != std::string::npos);
}
