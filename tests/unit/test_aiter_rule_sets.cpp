// AITER rule sets (platform.aiter, docs/stacks/vllm-rocm-aiter.md "AITER rule sets"):
// 2026.08 (ROCm/aiter@e4048607) against 2026.08+4899, whose auto-mode split count is
// ROCm/aiter#4899's (csrc/kernels/mla/metadata/v1_2_device.cuh@7975419d89:
// eff = clamp(lrintf(1.2f * sum of num_qo_tiles * sqrtf(max(1, blocks + overhead))), 1, num_splits),
// payload = ceil(sum_blocks / eff) + overhead). The vectors are worked by hand below.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <vector>

#include "core/batch_parse.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"
#include "core/stacks/vllm_rocm_aiter/router.hpp"
#include "tests/common/work_items.hpp"

using namespace mlactl;

namespace {

using Row = testing::WorkRow7;  // [b, ploc, qs, qe, ks, ke, koff]
using testing::work_rows;

AiterPlanInput vector_a(int num_cu, AiterRules rules) {
  // worked vector A's batch (§A3): gfx950, 16 heads, q_len 1, KV 100, 700, 40
  AiterPlanInput in;
  in.arch = Arch::gfx950;
  in.num_cu = num_cu;
  in.num_heads = 16;
  in.max_seqlen_qo = 1;
  in.uni_seqlen_qo = 1;
  in.kv_indptr = {0, 100, 800, 840};
  in.qo_indptr = {0, 1, 2, 3};
  in.kv_last_page_len = {1, 1, 1};
  in.rules = rules;
  return in;
}


}  // namespace

TEST_CASE("aiter rule set 2026.08+4899: the split count of #4899 by hand", "[planners][aiter][rules]") {
  // blocks of 16 tokens + overhead 16 (page_size 1): 7+16, 44+16, 3+16 = 23, 60, 19
  const float sum = aiter_sum_sqrt_blocks_wave64({std::sqrt(23.0f), std::sqrt(60.0f), std::sqrt(19.0f)});
  CHECK(sum == Approx(4.7958f + 7.7460f + 4.3589f).epsilon(1e-4));
  CHECK(aiter_effective_splits(sum, 256) == 20);  // lrintf(1.2 * 16.90) = lrintf(20.28)
  CHECK(aiter_effective_splits(sum, 4) == 4);     // num_splits caps it
  CHECK(aiter_effective_splits(0.0f, 256) == 1);  // and 1 floors it
}

TEST_CASE("aiter rule set 2026.08+4899: vector A on 256 CUs, payload 22 instead of 17", "[planners][aiter][rules]") {
  // 2026.08: payload = ceil(102 / 256) + 16 = 17, one 16-token block a CU: 7 + 44 + 3 works.
  const WorkList old_wl = plan_aiter_v12(vector_a(256, AiterRules::r2026_08));
  CHECK(old_wl.work_info.size() == 54);
  // 2026.08+4899: eff 20, payload = ceil(102 / 20) + 16 = 22, six blocks (96 tokens) a CU.
  const WorkList wl = plan_aiter_v12(vector_a(256, AiterRules::r2026_08_pr4899));
  CHECK(work_rows(wl) == std::vector<Row>{{0, 0, 0, 1, 0, 96, 4},
                                        {0, 1, 0, 1, 96, 100, 0},
                                        {1, 2, 1, 2, 100, 196, 604},
                                        {1, 3, 1, 2, 196, 292, 508},
                                        {1, 4, 1, 2, 292, 388, 412},
                                        {1, 5, 1, 2, 388, 484, 316},
                                        {1, 6, 1, 2, 484, 580, 220},
                                        {1, 7, 1, 2, 580, 676, 124},
                                        {1, 8, 1, 2, 676, 772, 28},
                                        {1, 9, 1, 2, 772, 800, 0},
                                        {2, -1, 2, 3, 800, 840, 0}});
  CHECK(wl.reduce_indptr == std::vector<int32_t>{0, 2, 10, 10});
  CHECK(wl.reduce_partial_map == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(wl.num_partial_rows == 10);
  CHECK(wl.work_indptr.size() == 257);
  CHECK(wl.work_indptr[11] == 11);
  CHECK(wl.work_indptr[256] == 11);
  bool noted = false;
  for (const std::string& n : wl.notes) noted = noted || n.find("split count 20") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("aiter rule set 2026.08+4899: where num_splits binds, or splits are explicit, nothing changes",
          "[planners][aiter][rules]") {
  // 4 CUs: eff 20 is capped to 4, the 2026.08 plan (worked vector A).
  CHECK(work_rows(plan_aiter_v12(vector_a(4, AiterRules::r2026_08_pr4899))) ==
        work_rows(plan_aiter_v12(vector_a(4, AiterRules::r2026_08))));
  // max_split_per_batch >= 0 (SGLang's call) bypasses #4899's adaptation
  AiterPlanInput a = vector_a(256, AiterRules::r2026_08), b = vector_a(256, AiterRules::r2026_08_pr4899);
  a.max_split_per_batch = b.max_split_per_batch = 64;
  CHECK(work_rows(plan_aiter_v12(a)) == work_rows(plan_aiter_v12(b)));
}

TEST_CASE("platform.aiter parses both rule sets; 2026.08 stays the default", "[batch][rules]") {
  const char* doc = R"({"schema": 1, "model": {"num_heads": 16}, "requests": [{"context_len": 10, "query_len": 1}]})";
  CHECK(parse_batch_text(doc, "t").platform.aiter == AiterRules::r2026_08);
  const char* doc2 = R"({"schema": 1, "platform": {"aiter": "2026.08+4899"}, "model": {"num_heads": 16},
                        "requests": [{"context_len": 10, "query_len": 1}]})";
  CHECK(parse_batch_text(doc2, "t").platform.aiter == AiterRules::r2026_08_pr4899);
  CHECK(std::string(to_string(AiterRules::r2026_08_pr4899)) == "2026.08+4899");
}

// ---- known kernel faults (docs/known_faults.md): each entry, a batch it names and one it does not

namespace {

RouteInput dense_input(Arch arch, int heads, int64_t q_len, int64_t mtp_qlen) {
  RouteInput in;
  in.arch = arch;
  in.num_heads = heads;
  in.max_qo_len = q_len;
  in.mtp_qlen = mtp_qlen;
  in.num_cu = arch == Arch::gfx942 ? 304 : 256;
  return in;
}

bool warns(const RouteDecision& d, const std::string& needle) {
  for (const KnownFaultWarning& w : d.known_faults)
    if (known_fault_text(w).find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("known fault ROCm/aiter #5679: gfx942 non-persistent bf16 qh16 m32x4", "[router][known_faults]") {
  // seed003-h12-gfx942-verify-q8's shape: 12 heads padded to 16, q_len 8, no persistent schedule
  const RouteDecision hit = route_decode(dense_input(Arch::gfx942, 12, 8, 8));
  REQUIRE(hit.route == Route::asm_nonpersistent);
  CHECK(hit.aiter_kernel == "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1");
  REQUIRE(hit.known_faults.size() == 1);
  CHECK(known_fault_text(hit.known_faults[0]) ==
        "known kernel fault: gfx942 mla_a16w16_qh16_m32x4 at q_len 8: wrong output reported upstream, ROCm/aiter #5679 "
        "(https://github.com/ROCm/aiter/issues/5679)");
  CHECK(hit.known_faults[0].id == "aiter-5679");
  CHECK(hit.findings.empty());  // a warning, not a finding of the modelled stack
  CHECK_FALSE(warns(hit, "#2720"));  // 8 is a power of 2
  // the same batch on gfx950 runs the same-named gfx950 kernel, not reported
  RouteInput g950 = dense_input(Arch::gfx950, 12, 8, 8);
  g950.small_head_mode = "asm";
  const RouteDecision miss = route_decode(g950);
  CHECK(miss.aiter_kernel == "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1");
  CHECK_FALSE(warns(miss, "#5679"));
  // q_len 4 on gfx942: the persistent m16x4 kernel, nothing reported
  CHECK(route_decode(dense_input(Arch::gfx942, 12, 4, 4)).known_faults.empty());
}

TEST_CASE("known fault ROCm/aiter #2720: stage-1 ASM at a q_len that is not a power of 2", "[router][known_faults]") {
  const RouteDecision hit = route_decode(dense_input(Arch::gfx942, 12, 6, 8));
  REQUIRE(hit.route == Route::asm_nonpersistent);
  CHECK(warns(hit, "known kernel fault: gfx942 mla_a16w16_qh16_m32x4_n16x1_coex0_mask1 at q_len 6: every q position gets the same "
                   "output when max_seqlen_q is not a power of 2, reported upstream, ROCm/aiter #2720 "
                   "(https://github.com/ROCm/aiter/issues/2720)"));
  CHECK(warns(hit, "#5679"));  // and the m32x4 kernel of #5679
  // a persistent route at q_len 3 is not the stage-1 entry #2720 names
  const RouteDecision ps = route_decode(dense_input(Arch::gfx942, 12, 3, 4));
  REQUIRE(ps.route == Route::asm_persistent);
  CHECK_FALSE(warns(ps, "#2720"));
  // the table alone: a power-of-2 q_len is not named
  KnownFaultQuery q;
  q.arch = Arch::gfx950;
  q.kernel = "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1";
  q.persistent = false;
  q.q_len = 4;
  CHECK(known_kernel_faults(q).empty());
  q.q_len = 3;
  REQUIRE(known_kernel_faults(q).size() == 1);
  CHECK(known_kernel_faults(q)[0].id == KnownFaultId::aiter_2720);
}

TEST_CASE("known fault ROCm/aiter #3095: gfx950 bf16 persistent decode at page_size > 1", "[known_faults]") {
  KnownFaultQuery q;
  q.arch = Arch::gfx950;
  q.kernel = "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps";
  q.persistent = true;
  q.q_len = 1;
  q.page_size = 64;
  const auto hit = known_kernel_faults(q);
  REQUIRE(hit.size() == 1);
  CHECK(hit[0].id == KnownFaultId::aiter_3095);
  CHECK(hit[0].warning ==
        "gfx950 mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps at q_len 1, page size 64: silently wrong output at page_size > 1, "
        "reported upstream, ROCm/aiter #3095");
  CHECK(hit[0].state == "closed, not fixed");
  // closed without a fix: every rule set still warns
  q.rules = AiterRules::r2026_08_pr4899;
  CHECK(known_kernel_faults(q).size() == 1);
  // page size 1, as vLLM's AITER backend views the cache: nothing
  q.page_size = 1;
  CHECK(known_kernel_faults(q).empty());
  // fp8 KV is not the bf16 family the thread names
  q.page_size = 64;
  q.kv_dtype = DType::fp8;
  CHECK(known_kernel_faults(q).empty());
  // a vLLM batch on the same kernel family: page size 1, no warning
  CHECK(route_decode(dense_input(Arch::gfx950, 16, 1, 1)).known_faults.empty());
}

TEST_CASE("known fault ROCm/aiter #5040: gfx942 8 heads bf16 q_len 2 claimed native", "[known_faults]") {
  KnownFaultQuery q;
  q.arch = Arch::gfx942;
  q.kernel = "mla_dec_stage1_bf16_a16w16_subQ16_mqa16_ps";
  q.persistent = true;
  q.q_len = 2;
  q.heads = 8;
  const auto hit = known_kernel_faults(q);
  REQUIRE(hit.size() == 1);
  CHECK(hit[0].id == KnownFaultId::aiter_5040);
  CHECK(hit[0].warning ==
        "gfx942 mla_dec_stage1_bf16_a16w16_subQ16_mqa16_ps at q_len 2, 8 heads: GPU memory fault (claimed native, no kernel "
        "built), reported upstream, ROCm/aiter #5040");
  q.heads = 16;
  CHECK(known_kernel_faults(q).empty());
  q.heads = 8;
  q.q_len = 1;
  CHECK(known_kernel_faults(q).empty());
  // vLLM R1 pads 8 heads to 16 before mla_decode_fwd (§V1 (d)): its batch never reaches the claim
  const RouteDecision v = route_decode(dense_input(Arch::gfx942, 8, 2, 2));
  CHECK(v.padded_heads == 16);
  CHECK(v.known_faults.empty());
}

TEST_CASE("known faults: a row fixed in a rule set warns before it, not from it on", "[known_faults]") {
  // no row of docs/known_faults.md has a fix in a rule set mlactl models; the rule on a row of the test's own
  KnownFaultEntry e;
  e.id = KnownFaultId::aiter_5679;
  e.name = "test-row";
  e.report = "ROCm/aiter #0";
  e.link = "https://example.invalid/0";
  e.state = "closed";
  e.fixed_in = AiterRules::r2026_08_pr4899;
  e.fault = "test fault";
  KnownFaultQuery q;
  q.kernel = "k";
  q.rules = AiterRules::r2026_08;
  const auto before = known_kernel_faults(q, {e});
  REQUIRE(before.size() == 1);
  CHECK(before[0].warning == "gfx950 k at q_len 1: test fault, ROCm/aiter #0");
  q.rules = AiterRules::r2026_08_pr4899;
  CHECK(known_kernel_faults(q, {e}).empty());
  // and the table itself: every row has a name, a link and a state
  for (const KnownFaultEntry& row : known_fault_table()) {
    CHECK(std::string(row.name).rfind("aiter-", 0) == 0);
    CHECK(std::string(row.link).rfind("https://github.com/ROCm/aiter/issues/", 0) == 0);
    CHECK_FALSE(std::string(row.state).empty());
  }
  CHECK(known_fault_table().size() == 4);
}

TEST_CASE("platform.vllm R1+57642: the persistent gate's heads >= 16 arm on gfx950 only", "[router][known_faults]") {
  // vllm#55609's batch: gfx942, 16 heads, bf16, causal q_len 8
  RouteInput in = dense_input(Arch::gfx942, 16, 8, 8);
  const RouteDecision r1 = route_decode(in);
  CHECK(r1.route == Route::refused);  // R1: persistent, no gfx942 kernel ("cannot get heuristic kernel!")
  CHECK(r1.error == kNoHeuristicKernel);
  in.vllm = VllmRules::r1_pr57642;
  const RouteDecision guarded = route_decode(in);
  CHECK(guarded.route == Route::asm_nonpersistent);
  REQUIRE(guarded.known_faults.size() == 1);
  CHECK(guarded.known_faults[0].id == "aiter-5679");
  // q_len 4 and gfx950 are untouched by the guard
  RouteInput q4 = dense_input(Arch::gfx942, 16, 4, 4);
  q4.vllm = VllmRules::r1_pr57642;
  CHECK(route_decode(q4).route == Route::asm_persistent);
  RouteInput g950 = dense_input(Arch::gfx950, 16, 8, 8);
  const Route before = route_decode(g950).route;
  g950.vllm = VllmRules::r1_pr57642;
  CHECK(route_decode(g950).route == before);
  // fp8 KV keeps its own arm
  RouteInput fp8 = dense_input(Arch::gfx942, 16, 8, 8);
  fp8.kv_cache_dtype = "fp8";
  fp8.kv_dtype = DType::fp8;
  fp8.vllm = VllmRules::r1_pr57642;
  CHECK(persistent_schedule_gate(fp8, false, false));
}
