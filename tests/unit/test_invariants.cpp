// check_invariants: corrupted work lists are caught with precise violations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/invariants.hpp"
#include "core/planners/expectations.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"

using namespace mlactl;

namespace {

std::vector<int32_t> indptr_of(const std::vector<int32_t>& lens) {
  std::vector<int32_t> p{0};
  for (int32_t l : lens) p.push_back(p.back() + l);
  return p;
}

// §A3 vectors as fixtures: A (3 requests, one split tile) and D (q split per token).
struct Fixture {
  WorkList wl;
  std::vector<RowExpectation> rows;
};
Fixture plan(int H, int L, const std::vector<int32_t>& lens, int cu) {
  AiterPlanInput in;
  in.arch = Arch::gfx950;
  in.num_cu = cu;
  in.num_heads = H;
  in.max_seqlen_qo = L;
  in.uni_seqlen_qo = L;
  in.kv_indptr = indptr_of(lens);
  in.qo_indptr = indptr_of(std::vector<int32_t>(lens.size(), L));
  in.kv_last_page_len.assign(lens.size(), 1);
  Fixture f;
  f.wl = plan_aiter_v12(in);
  f.rows = expect_per_request_uniform(in.kv_indptr, L, 1, true);
  return f;
}
Fixture vector_a() { return plan(16, 1, {100, 700, 40}, 4); }
Fixture vector_d() { return plan(128, 2, {300, 400}, 4); }

const Violation* find(const InvariantReport& r, const std::string& kind) {
  for (const Violation& v : r.violations)
    if (v.kind == kind) return &v;
  return nullptr;
}
bool mentions(const Violation* v, const std::string& s) { return v && v->message.find(s) != std::string::npos; }

}  // namespace

TEST_CASE("invariants: the planned vectors are clean", "[invariants]") {
  for (const Fixture& f : {vector_a(), vector_d()}) {
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK(r.ok);
    CHECK(r.total_violations == 0);
  }
}

TEST_CASE("invariants: a kv_end shifted by one is uncovered or covered twice, naming the row", "[invariants]") {
  SECTION("shift down: a gap") {
    Fixture f = vector_a();
    f.wl.work_info[2].kv_end -= 1;  // [148,564) -> [148,563)
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK_FALSE(r.ok);
    const Violation* v = find(r, "uncovered");
    REQUIRE(v);
    CHECK(v->q_row == 1);
    CHECK(v->kv_begin == 563);
    CHECK(v->kv_end == 564);
    CHECK(mentions(v, "q row 1"));
    CHECK(mentions(v, "[563, 564)"));
  }
  SECTION("shift up: an overlap") {
    Fixture f = vector_a();
    f.wl.work_info[2].kv_end += 1;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const Violation* v = find(r, "covered_twice");
    REQUIRE(v);
    CHECK(v->q_row == 1);
    CHECK(v->kv_begin == 564);
    CHECK(v->kv_end == 565);
    CHECK(v->work == 3);
  }
  SECTION("past the window: extra") {
    Fixture f = vector_a();
    f.wl.work_info[4].kv_end += 1;  // request 2 ends at 840
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const Violation* v = find(r, "extra");
    REQUIRE(v);
    CHECK(v->q_row == 2);
    CHECK(v->kv_begin == 840);
    CHECK(v->work == 4);
  }
  SECTION("causal: koff too small trims a q row of a tile") {
    Fixture f = vector_d();
    f.wl.work_info[0].kv_offset = 0;  // no effect on a 1-row tile: still clean
    CHECK(check_invariants(f.wl, f.wl.planned_view, f.rows).ok);
    Fixture b = plan(16, 4, {600, 34}, 4);  // vector B: request 1 unsplit, rows 4..7
    b.wl.work_info[2].kv_offset = -2;       // rows see 2 fewer entries than the diagonal allows
    const InvariantReport r = check_invariants(b.wl, b.wl.planned_view, b.rows);
    const Violation* v = find(r, "uncovered");
    REQUIRE(v);
    CHECK(v->q_row >= 4);
  }
}

TEST_CASE("invariants: a dropped work leaves its rows uncovered", "[invariants]") {
  Fixture f = vector_a();
  f.wl.work_info.erase(f.wl.work_info.begin());  // drop request 0's only work
  for (size_t g = 1; g < f.wl.work_indptr.size(); ++g) f.wl.work_indptr[g] -= 1;
  // the reduce map now points at shifted works; coverage must still name row 0
  const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
  const Violation* v = find(r, "uncovered");
  REQUIRE(v);
  CHECK(v->q_row == 0);
  CHECK(v->kv_begin == 0);
  CHECK(v->kv_end == 100);
}

TEST_CASE("invariants: swapped partial locations break the reduce maps", "[invariants]") {
  SECTION("plocs of two different split tiles") {
    Fixture f = vector_d();
    // work 1 is (b0,row1) fragment ploc 0; work 3 is (b1,row0) fragment ploc 2
    std::swap(f.wl.work_info[1].partial_qo_loc, f.wl.work_info[3].partial_qo_loc);
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK_FALSE(r.ok);
    const Violation* v = find(r, "reduce_map");
    REQUIRE(v);
    CHECK(mentions(v, "reduce tile"));
  }
  SECTION("a final work and a fragment") {
    Fixture f = vector_a();
    std::swap(f.wl.work_info[0].partial_qo_loc, f.wl.work_info[1].partial_qo_loc);
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK_FALSE(r.ok);
    CHECK(find(r, "reduce_map"));
  }
  SECTION("overlapping partial rows") {
    Fixture f = plan(16, 4, {600, 34}, 4);  // vector B: plocs 0 and 4 for a 4-row tile
    f.wl.work_info[1].partial_qo_loc = 2;
    f.wl.reduce_partial_map[1] = 2;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const Violation* v = find(r, "partial_overlap");
    REQUIRE(v);
    CHECK(mentions(v, "[2, 4)"));
  }
  SECTION("a split tile whose final map is wrong") {
    Fixture f = vector_a();
    f.wl.reduce_final_map[1] = {0, 1};
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK(find(r, "reduce_map"));
  }
}

TEST_CASE("invariants: structure, rows without windows, buffers", "[invariants]") {
  SECTION("work_indptr not monotonic") {
    Fixture f = vector_a();
    std::swap(f.wl.work_indptr[1], f.wl.work_indptr[2]);
    f.wl.work_indptr[1] = 4;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    CHECK(find(r, "structure"));
  }
  SECTION("a work past the q tensor") {
    Fixture f = vector_a();
    f.wl.work_info[4].qo_end = 9;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const Violation* v = find(r, "structure");
    REQUIRE(v);
    CHECK(v->work == 4);
  }
  SECTION("a row with no expectation is extra") {
    Fixture f = vector_a();
    std::vector<RowExpectation> rows(f.rows.begin(), f.rows.begin() + 2);
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, rows);
    const Violation* v = find(r, "extra");
    REQUIRE(v);
    CHECK(v->q_row == 2);
  }
  SECTION("padding rows are not checked") {
    Fixture f = vector_a();
    f.rows[2].required = false;
    f.wl.work_info[4].kv_end += 5;
    CHECK(check_invariants(f.wl, f.wl.planned_view, f.rows).ok);
  }
  SECTION("buffers smaller than the plan") {
    Fixture f = vector_a();
    const MetadataInfo small = mla_metadata_info_v1(Arch::gfx950, 4, 1, 1, 16, DType::bf16, DType::bf16, false);
    InvariantOptions opt;
    opt.capacity = &small;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows, opt);
    REQUIRE(find(r, "buffer"));
    // B=1 sizes: work_info_set 4 < 5 works, reduce_indptr 2 < 4 entries, final map 1 < 3 rows.
    const bool names_reduce_indptr = std::any_of(r.violations.begin(), r.violations.end(), [](const Violation& x) {
      return x.kind == "buffer" && x.message.find("reduce_indptr needs 4") != std::string::npos;
    });
    CHECK(names_reduce_indptr);
    InvariantOptions rows_only;
    rows_only.partial_row_capacity = 2;
    CHECK(find(check_invariants(f.wl, f.wl.planned_view, f.rows, rows_only), "buffer"));
  }
  SECTION("violations are capped but counted") {
    Fixture f = plan(16, 1, std::vector<int32_t>(100, 64), 4);
    for (WorkInfo& w : f.wl.work_info) w.kv_end -= 1;
    InvariantOptions opt;
    opt.max_violations_listed = 5;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows, opt);
    CHECK(r.violations.size() == 5);
    CHECK(r.total_violations >= 100);
  }
}

TEST_CASE("invariants: a long row checks by intervals, not bitmaps", "[invariants]") {
  // 200k-token request split over 304 CUs.
  Fixture f = plan(16, 1, {200000, 150000}, 304);
  const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
  CHECK(r.ok);
  CHECK(r.balance.split_tiles == 2);
  CHECK(r.balance.efficiency > 0.9);
}

// Issue 39: a captured plan's verdict names the rule each violation breaks.
TEST_CASE("invariants: each violation names its rule", "[invariants]") {
  SECTION("a partial row merged twice") {
    Fixture f = vector_a();
    const int32_t s = f.wl.reduce_indptr[1], e = f.wl.reduce_indptr[2];
    REQUIRE(e - s >= 2);
    f.wl.reduce_partial_map[e - 1] = f.wl.reduce_partial_map[e - 2];
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const auto it = std::find_if(r.violations.begin(), r.violations.end(), [](const Violation& v) { return mentions(&v, "merged twice"); });
    REQUIRE(it != r.violations.end());
    CHECK(it->rule == InvariantRule::partial_merged_once);
    CHECK(std::string(to_string(it->rule)) == "every partial row merged exactly once");
  }
  SECTION("an output row with two writers") {
    Fixture f = vector_a();
    auto w = std::find_if(f.wl.work_info.begin(), f.wl.work_info.end(), [](const WorkInfo& x) { return x.partial_qo_loc >= 0; });
    REQUIRE(w != f.wl.work_info.end());
    w->partial_qo_loc = -1;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    const auto it = std::find_if(r.violations.begin(), r.violations.end(), [](const Violation& v) { return v.rule == InvariantRule::output_one_writer; });
    REQUIRE(it != r.violations.end());
    CHECK(mentions(&*it, "are written by reduce tile"));
  }
  SECTION("coverage keeps its rule") {
    Fixture f = vector_a();
    f.wl.work_info[2].kv_end -= 1;
    const InvariantReport r = check_invariants(f.wl, f.wl.planned_view, f.rows);
    REQUIRE(find(r, "uncovered"));
    CHECK(find(r, "uncovered")->rule == InvariantRule::kv_read_once);
  }
}
