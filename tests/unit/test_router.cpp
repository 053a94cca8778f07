// Router and AITER kernel lookup: the routing tables of reference
// docs/stacks/vllm-rocm-aiter.md §V3 and §V5.2–§V5.6, seeds 001–004, the defect switches of
// docs/design.md §7, and the manifest lookup of docs/stacks/vllm-rocm-aiter.md §A5.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"
#include "core/stacks/vllm_rocm_aiter/router.hpp"

using namespace mlactl;

namespace {

const std::vector<std::string> kFp8Caches = {"fp8", "fp8_e4m3", "fp8_e5m2"};
const std::vector<std::string> kBf16Caches = {"auto", "bfloat16"};

// A dense decode input as vLLM R1 would see it: fp8 caches quantize the decode q.
RouteInput dense(Arch arch, int heads, int64_t q_len, int64_t mtp_qlen, const std::string& kv = "auto") {
  RouteInput in;
  in.arch = arch;
  in.num_heads = heads;
  in.max_qo_len = q_len;
  in.mtp_qlen = mtp_qlen;
  in.kv_cache_dtype = kv;
  const bool fp8 = kv.rfind("fp8", 0) == 0;
  in.kv_dtype = fp8 ? DType::fp8 : DType::bf16;
  in.q_dtype = fp8 ? DType::fp8 : DType::bf16;
  in.num_cu = arch == Arch::gfx942 ? 304 : 256;
  return in;
}

RouteInput non_causal(RouteInput in) {
  in.causal = false;
  return in;
}

const Predicate* find_predicate(const RouteDecision& d, const std::string& name) {
  for (const auto& p : d.chain)
    if (p.name == name) return &p;
  return nullptr;
}

std::string chain_value(const RouteDecision& d, const std::string& name) {
  const Predicate* p = find_predicate(d, name);
  return p ? p->value : std::string("<absent>");
}

bool chain_mentions(const RouteDecision& d, const std::string& text) {
  for (const auto& p : d.chain)
    if (p.why.find(text) != std::string::npos || p.value.find(text) != std::string::npos) return true;
  return false;
}

bool has_finding(const RouteDecision& d, const std::string& text) {
  for (const auto& f : d.findings)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

AiterKernelQuery kq(Arch arch, DType q, DType kv, int heads, int q_len, bool persistent = true, bool causal = true,
                    bool lse = false) {
  AiterKernelQuery k;
  k.arch = arch;
  k.q_dtype = q;
  k.kv_dtype = kv;
  k.heads = heads;
  k.q_len = q_len;
  k.persistent = persistent;
  k.causal = causal;
  k.lse = lse;
  return k;
}

std::string kernel_of(const AiterKernelQuery& q) {
  const auto r = lookup_aiter_kernel(q);
  return r.found ? r.kernel : r.error;
}

const std::string kTwoTokenText =
    "AITER has no non-causal fp8 MLA kernel for this 2-token query block. "
    "Pin the draft to TRITON_MLA for this speculative config.";

}  // namespace

// ---------------------------------------------------------------------------
// §V5.2 test_rocm_aiter_mla_fp8_decode_routing.py
// ---------------------------------------------------------------------------

TEST_CASE("fp8 KV never routes to Gluon (§V5.2)", "[router]") {
  for (const auto& kv : kFp8Caches)
    for (int h : {1, 2, 4, 5, 6, 8, 12, 16, 32, 128})
      for (int q : {1, 2, 4, 5, 8, 15}) {
        const RouteInput in = dense(Arch::gfx950, h, q, q, kv);
        INFO(kv << " heads " << h << " qlen " << q);
        CHECK_FALSE(use_gluon_decode(in));
        CHECK_FALSE(use_gluon_verify(in));
      }
}

TEST_CASE("fp8 KV stays off Gluon under every small-head mode (§V5.2)", "[router]") {
  for (const auto& kv : kFp8Caches)
    for (int h : {1, 2, 4, 8, 12})
      for (const char* mode : {"auto", "gluon", "asm"}) {
        RouteInput decode = dense(Arch::gfx950, h, 1, 1, kv);
        decode.small_head_mode = mode;
        RouteInput verify = dense(Arch::gfx950, h, 8, 8, kv);
        verify.small_head_mode = mode;
        INFO(kv << " heads " << h << " mode " << mode);
        CHECK_FALSE(use_gluon_decode(decode));
        CHECK_FALSE(use_gluon_verify(verify));
      }
}

TEST_CASE("16 or more heads never take Gluon (§V5.2)", "[router]") {
  std::vector<std::string> caches = kFp8Caches;
  caches.insert(caches.end(), kBf16Caches.begin(), kBf16Caches.end());
  for (const auto& kv : caches)
    for (int h : {16, 17, 32, 64, 128})
      for (int q : {1, 4, 8}) {
        const RouteInput in = dense(Arch::gfx950, h, q, q, kv);
        INFO(kv << " heads " << h << " qlen " << q);
        CHECK_FALSE(use_gluon_decode(in));
        CHECK_FALSE(use_gluon_verify(in));
      }
}

TEST_CASE("divisors of 16 keep Gluon decode in auto mode (§V5.2)", "[router]") {
  for (const auto& kv : kBf16Caches)
    for (int h : {1, 2, 4, 8}) {
      INFO(kv << " heads " << h);
      CHECK(use_gluon_decode(dense(Arch::gfx950, h, 1, 1, kv)));
    }
}

TEST_CASE("non-divisor small heads go to ASM decode (§V5.2)", "[router]") {
  for (Arch arch : {Arch::gfx942, Arch::gfx950})
    for (const auto& kv : kBf16Caches)
      for (int h : {3, 5, 6, 7, 9, 12, 15}) {
        INFO(to_string(arch) << " " << kv << " heads " << h);
        CHECK_FALSE(use_gluon_decode(dense(arch, h, 1, 1, kv)));
        const RouteDecision d = route_decode(dense(arch, h, 1, 1, kv));
        CHECK(d.route == Route::asm_persistent);
        CHECK(d.padded_heads == 16);
      }
}

TEST_CASE("small-head causal verify takes Gluon (§V5.2)", "[router]") {
  for (const auto& kv : kBf16Caches)
    for (int h : {5, 8, 12})
      for (int q : {2, 4, 8, 15}) {
        const RouteInput in = dense(Arch::gfx950, h, q, q, kv);
        INFO(kv << " heads " << h << " qlen " << q);
        CHECK(use_gluon_verify(in));
        CHECK_FALSE(use_gluon_decode(in));
        CHECK(route_decode(in).route == Route::gluon_verify);
      }
}

TEST_CASE("Gluon decode and verify are disjoint (§V5.2)", "[router]") {
  std::vector<std::string> caches = kFp8Caches;
  caches.insert(caches.end(), kBf16Caches.begin(), kBf16Caches.end());
  for (Arch arch : {Arch::gfx942, Arch::gfx950})
    for (const auto& kv : caches)
      for (int h : {5, 8, 12, 16, 32})
        for (int q : {1, 2, 8})
          for (const char* mode : {"auto", "gluon", "asm"}) {
            RouteInput in = dense(arch, h, q, q, kv);
            in.small_head_mode = mode;
            INFO(to_string(arch) << " " << kv << " heads " << h << " qlen " << q << " mode " << mode);
            CHECK_FALSE((use_gluon_decode(in) && use_gluon_verify(in)));
          }
}

TEST_CASE("ASM pads small heads to 16 (§V5.2 padded Q)", "[router]") {
  for (int h : {1, 2, 3, 5, 6, 7, 8, 9, 12, 15}) {
    RouteInput in = dense(Arch::gfx950, h, 1, 1);
    in.small_head_mode = "asm";
    const RouteDecision d = route_decode(in);
    INFO("heads " << h);
    CHECK(d.route == Route::asm_persistent);
    CHECK(d.padded_heads == 16);
  }
}

TEST_CASE("a non-causal block never routes to Gluon (§V5.2, seed 001)", "[router]") {
  for (const char* kv : {"fp8", "auto"})
    for (int h : {8, 12, 16, 32}) {
      const RouteInput in = non_causal(dense(Arch::gfx950, h, 8, 8, kv));
      INFO(kv << " heads " << h);
      CHECK_FALSE(use_gluon_verify(in));
      const RouteDecision d = route_decode(in);
      CHECK(d.route != Route::gluon_verify);
      CHECK(d.route != Route::gluon_decode);
    }
  // and the causal twin still takes Gluon
  CHECK(use_gluon_verify(dense(Arch::gfx950, 12, 8, 8, "auto")));
}

// ---------------------------------------------------------------------------
// §V5.3 test_rocm_aiter_mla_mtp_split.py: the persistent-schedule gate
// ---------------------------------------------------------------------------

namespace {
struct GateRow {
  int64_t k, q;
  int heads;
  const char* kv;
  bool persistent;
};
bool gate_for(const RouteInput& in) { return persistent_schedule_gate(in, use_gluon_decode(in), use_gluon_verify(in)); }
}  // namespace

TEST_CASE("persistent-schedule gate with a Gluon build (§V5.3)", "[router]") {
  const std::vector<GateRow> rows = {
      {1, 1, 16, "auto", true},  {4, 2, 16, "auto", true},  {4, 4, 16, "auto", true}, {1, 1, 24, "auto", true},
      {2, 4, 16, "auto", false}, {1, 1, 8, "auto", false},  {4, 4, 8, "auto", false}, {1, 1, 12, "auto", true},
      {8, 8, 12, "auto", false}, {1, 1, 8, "fp8", true},    {1, 1, 12, "fp8", true},  {1, 1, 16, "fp8", true},
      {8, 8, 8, "fp8", true},    {8, 8, 12, "fp8", true},
  };
  for (const auto& r : rows) {
    const RouteInput in = dense(Arch::gfx950, r.heads, r.q, r.k, r.kv);
    INFO("K " << r.k << " qlen " << r.q << " heads " << r.heads << " " << r.kv);
    CHECK(gate_for(in) == r.persistent);
    const RouteDecision d = route_decode(in);
    CHECK(chain_value(d, "use_persistent_schedule") == (r.persistent ? "true" : "false"));
    if (d.route != Route::refused) CHECK(d.persistent_schedule == r.persistent);
  }
  // 24 heads pad to 32 on the ASM route
  CHECK(route_decode(dense(Arch::gfx950, 24, 1, 1)).padded_heads == 32);
}

TEST_CASE("persistent-schedule gate without a Gluon build (gfx942, §V5.3)", "[router]") {
  const std::vector<GateRow> rows = {
      {1, 1, 12, "auto", true}, {4, 4, 12, "auto", true},  {1, 1, 12, "fp8", true},
      {8, 8, 12, "fp8", true},  {8, 8, 12, "auto", false}, {8, 8, 16, "auto", true},
  };
  for (const auto& r : rows) {
    const RouteInput in = dense(Arch::gfx942, r.heads, r.q, r.k, r.kv);
    INFO("K " << r.k << " qlen " << r.q << " heads " << r.heads << " " << r.kv);
    CHECK(gate_for(in) == r.persistent);
    CHECK(chain_value(route_decode(in), "use_persistent_schedule") == (r.persistent ? "true" : "false"));
  }
}

// ---------------------------------------------------------------------------
// §V5.4 test_rocm_aiter_mla_head_padding.py: Gluon decode, arch gate, env modes
// ---------------------------------------------------------------------------

TEST_CASE("Gluon decode shapes (§V5.4)", "[router]") {
  const std::vector<std::pair<int, int>> off = {{12, 1}, {6, 1}, {16, 1}, {24, 1}, {8, 4}, {12, 4}};
  for (auto [h, q] : off) {
    INFO("heads " << h << " qlen " << q);
    CHECK_FALSE(use_gluon_decode(dense(Arch::gfx950, h, q, q)));
  }
}

TEST_CASE("Gluon decode arch gate (§V5.4)", "[router]") {
  for (int h : {8, 4, 1}) {
    INFO("heads " << h);
    CHECK(use_gluon_decode(dense(Arch::gfx950, h, 1, 1)));
    CHECK_FALSE(use_gluon_decode(dense(Arch::gfx942, h, 1, 1)));
    CHECK(route_decode(dense(Arch::gfx942, h, 1, 1)).route == Route::asm_persistent);
  }
}

TEST_CASE("VLLM_ROCM_AITER_MLA_ASM_PADDING modes (§V5.4)", "[router]") {
  for (Arch arch : {Arch::gfx942, Arch::gfx950})
    for (int h : {1, 2, 4, 8, 12}) {
      INFO(to_string(arch) << " heads " << h);
      RouteInput asm_mode = dense(arch, h, 1, 1);
      asm_mode.small_head_mode = "asm";
      CHECK_FALSE(use_gluon_decode(asm_mode));
      RouteInput gluon_mode = dense(arch, h, 1, 1);
      gluon_mode.small_head_mode = "gluon";
      CHECK(use_gluon_decode(gluon_mode) == (arch == Arch::gfx950));
    }
  // auto: 8 heads follow the arch, 12 never
  CHECK(use_gluon_decode(dense(Arch::gfx950, 8, 1, 1)));
  CHECK_FALSE(use_gluon_decode(dense(Arch::gfx942, 8, 1, 1)));
  CHECK_FALSE(use_gluon_decode(dense(Arch::gfx950, 12, 1, 1)));
  // the default is auto, and the env is case-insensitive
  CHECK(RouteInput{}.small_head_mode == "auto");
  RouteInput upper = dense(Arch::gfx950, 12, 1, 1);
  upper.small_head_mode = "GLUON";
  CHECK(route_decode(upper).route == Route::gluon_decode);
  // gluon on gfx942 warns and uses the ASM decode
  RouteInput warn = dense(Arch::gfx942, 12, 1, 1);
  warn.small_head_mode = "gluon";
  const RouteDecision d = route_decode(warn);
  CHECK(d.route == Route::asm_persistent);
  CHECK(chain_mentions(d, "Gluon requires gfx950"));
  // unknown values are rejected like env_with_choices does
  RouteInput bad = dense(Arch::gfx950, 12, 1, 1);
  bad.small_head_mode = "fast";
  const RouteDecision r = route_decode(bad);
  CHECK(r.route == Route::refused);
  CHECK(r.error_type == "ValueError");
  CHECK_THAT(r.error, Catch::Contains("VLLM_ROCM_AITER_MLA_ASM_PADDING"));
}

TEST_CASE("Gluon's 2 GiB KV-cache bound (R1, §V1 (d))", "[router]") {
  RouteInput in = dense(Arch::gfx950, 8, 1, 1);
  in.kv_cache_bytes = int64_t(1) << 31;
  CHECK(use_gluon_decode(in));
  in.kv_cache_bytes = (int64_t(1) << 31) + 1;
  CHECK_FALSE(use_gluon_decode(in));
  const RouteDecision d = route_decode(in);
  CHECK(d.route == Route::asm_persistent);
  CHECK(chain_mentions(d, "past the 2 GiB where the Gluon MLA kernel drops its KV bounds mask"));
  RouteInput verify = dense(Arch::gfx950, 12, 8, 8);
  verify.kv_cache_bytes = int64_t(3) << 30;
  CHECK_FALSE(use_gluon_verify(verify));
  CHECK(route_decode(verify).route == Route::asm_nonpersistent);  // row 8: Q >= 5, not Gluon-capable
}

TEST_CASE("head-count validity (§V1 (d), §V5.4)", "[router]") {
  for (int h = 1; h <= 128; ++h) {
    INFO("heads " << h);
    CHECK(route_decode(dense(Arch::gfx950, h, 1, 1)).error_type != "AssertionError");
  }
  CHECK(route_decode(dense(Arch::gfx950, 144, 1, 1)).route != Route::refused);
  for (int h : {0, 129, 143}) {
    const RouteDecision d = route_decode(dense(Arch::gfx950, h, 1, 1));
    INFO("heads " << h);
    CHECK(d.route == Route::refused);
    CHECK(d.error_type == "AssertionError");
    CHECK(d.error ==
          "ROCM AITER MLA requires a positive multiple of 16 heads, or an unaligned head count up to 128 "
          "(padded to the next multiple of 16), but got " +
              std::to_string(h) + ". Try adjusting tensor_parallel_size value.");
  }
  CHECK(actual_mla_num_heads(24, false) == 32);
  CHECK(actual_mla_num_heads(24, true) == 24);
  CHECK(actual_mla_num_heads(17, false) == 32);
  CHECK(actual_mla_num_heads(1, false) == 16);
}

// ---------------------------------------------------------------------------
// §V3 decision table rows 1–13 (DCP rows not modelled)
// ---------------------------------------------------------------------------

TEST_CASE("R1 routing table rows 1-13 (§V3)", "[router]") {
  // 1: divisor heads, Q 1, bf16, Gluon-capable: Gluon decode, raw heads, no schedule
  RouteDecision d = route_decode(dense(Arch::gfx950, 8, 1, 1));
  CHECK(d.route == Route::gluon_decode);
  CHECK(d.padded_heads == 8);
  CHECK_FALSE(d.persistent_schedule);
  // 2: non-divisor, mode gluon
  RouteInput in = dense(Arch::gfx950, 12, 1, 1);
  in.small_head_mode = "gluon";
  CHECK(route_decode(in).route == Route::gluon_decode);
  // 3: non-divisor, auto: ASM padded to 16 with a schedule
  d = route_decode(dense(Arch::gfx950, 12, 1, 1));
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.padded_heads == 16);
  CHECK(d.persistent_schedule);
  CHECK(d.aiter_kernel == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps");
  // 4: gfx942, or KV past 2 GiB
  d = route_decode(dense(Arch::gfx942, 8, 1, 1));
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.aiter_kernel == "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps");
  // 5: mode asm: persistent iff Q <= 4 and Q <= K
  in = dense(Arch::gfx950, 8, 2, 4);
  in.small_head_mode = "asm";
  CHECK(route_decode(in).route == Route::asm_persistent);
  in = dense(Arch::gfx950, 8, 8, 8);
  in.small_head_mode = "asm";
  d = route_decode(in);
  CHECK(d.route == Route::asm_nonpersistent);
  CHECK(d.aiter_kernel == "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1");
  // 6: small-head causal verify on Gluon
  CHECK(route_decode(dense(Arch::gfx950, 12, 4, 4)).route == Route::gluon_verify);
  // 7: not Gluon-capable, Q 2..4: persistent ASM
  for (int q : {2, 3, 4}) CHECK(route_decode(dense(Arch::gfx942, 12, q, 4)).route == Route::asm_persistent);
  // 8: not Gluon-capable, Q >= 5: non-persistent ASM
  d = route_decode(dense(Arch::gfx942, 12, 6, 8));
  CHECK(d.route == Route::asm_nonpersistent);
  CHECK_FALSE(d.persistent_schedule);
  // 9: non-causal small heads, Q >= 2: padded ASM with a schedule even for Q > 4
  d = route_decode(non_causal(dense(Arch::gfx950, 12, 8, 8)));
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.persistent_schedule);
  CHECK(d.aiter_kernel == "mla_a16w16_qh32_qseqlen4_gqaratio32_msk0_ps");
  // 10: small heads with fp8 KV: padded ASM with a schedule, mode ignored
  in = dense(Arch::gfx950, 8, 1, 1, "fp8");
  in.small_head_mode = "gluon";
  d = route_decode(in);
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.aiter_kernel == "mla_a8w8_qh16_qseqlen1_gqaratio16_ps");
  // 11: 16 or more heads: next multiple of 16
  d = route_decode(dense(Arch::gfx950, 24, 1, 1));
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.padded_heads == 32);
  in = dense(Arch::gfx950, 24, 1, 1);
  in.native_h24 = true;
  CHECK(route_decode(in).padded_heads == 24);
  d = route_decode(dense(Arch::gfx942, 128, 1, 1, "fp8"));
  CHECK(d.padded_heads == 128);
  CHECK(d.aiter_kernel == "mla_a8w8_qh128_m32x4_n16x2_msk0_ps");
  // 12: fp8 2-token non-causal refusal (seed 001 cases below)
  CHECK(route_decode(non_causal(dense(Arch::gfx950, 16, 2, 8, "fp8"))).error == kTwoTokenText);
  // 13: Q > K: ASM without a schedule
  d = route_decode(dense(Arch::gfx950, 16, 4, 2));
  CHECK(d.route == Route::asm_nonpersistent);
  CHECK_FALSE(d.persistent_schedule);
  CHECK(d.aiter_kernel == "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1");
}

TEST_CASE("the chain explains the decision in evaluation order", "[router]") {
  const RouteDecision d = route_decode(dense(Arch::gfx950, 12, 1, 1));
  std::vector<std::string> names;
  for (const auto& p : d.chain) names.push_back(p.name);
  const std::vector<std::string> expected = {"backend", "use_gluon_decode", "use_gluon_verify",
                                             "use_persistent_schedule", "head_padding", "mla_py_fold",
                                             "aiter_kernel"};
  CHECK(names == expected);
  CHECK_THAT(find_predicate(d, "use_gluon_decode")->why, Catch::Contains("divisors of 16"));
  CHECK(d.aiter_rules == "2026.08");
}

// ---------------------------------------------------------------------------
// §V5.5 test_rocm_aiter_mla_fp8_support.py: non-causal probe, validate_configuration
// ---------------------------------------------------------------------------

TEST_CASE("an AITER without causal= fails closed (§V5.5, seed 001)", "[router]") {
  for (Arch arch : {Arch::gfx942, Arch::gfx950}) {
    RouteInput in = non_causal(dense(arch, 16, 4, 4));
    in.aiter_has_causal_arg = false;
    const RouteDecision d = route_decode(in);
    INFO(to_string(arch));
    CHECK(d.route == Route::refused);
    CHECK(d.error_type == "RuntimeError");
    CHECK_THAT(d.error, Catch::Contains("causal-only"));
    CHECK(d.findings.empty());
  }
  // a causal batch does not ask the probe
  RouteInput causal = dense(Arch::gfx950, 16, 4, 4);
  causal.aiter_has_causal_arg = false;
  CHECK(route_decode(causal).route == Route::asm_persistent);
}

TEST_CASE("supports_non_causal needs gfx950's kernels (§V5.5)", "[router]") {
  // causal= present but no msk0 kernels: the backend is skipped, TRITON_MLA takes it
  RouteDecision d = route_decode(non_causal(dense(Arch::gfx942, 16, 4, 4)));
  CHECK(d.route == Route::triton_mla);
  CHECK(chain_value(d, "_aiter_mla_non_causal_asm_kernels") == "false");
  CHECK(chain_mentions(d, "non-causal not supported"));
  CHECK(d.padded_heads == 16);
  // both present: AITER MLA runs the block with causal=False
  d = route_decode(non_causal(dense(Arch::gfx950, 16, 4, 4)));
  CHECK(d.route == Route::asm_persistent);
  CHECK(chain_value(d, "mla_decode_supports_non_causal") == "true");
}

TEST_CASE("validate_configuration: non-causal fp16 falls through to TRITON_MLA (§V5.5)", "[router]") {
  for (const char* kv : {"auto", "float16"}) {
    RouteInput in = non_causal(dense(Arch::gfx950, 16, 4, 4, kv));
    in.model_dtype = DType::fp16;
    in.q_dtype = DType::fp16;
    in.kv_dtype = DType::fp16;
    const RouteDecision d = route_decode(in);
    INFO(kv);
    CHECK(d.route == Route::triton_mla);
    CHECK(chain_mentions(d, "non-causal fp16 MLA decode not supported"));
  }
  // non-causal bf16 + auto: no reasons
  CHECK(route_decode(non_causal(dense(Arch::gfx950, 16, 4, 4))).route == Route::asm_persistent);
  // causal fp16 + auto: no reasons
  RouteInput causal = dense(Arch::gfx950, 16, 4, 4);
  causal.model_dtype = causal.q_dtype = causal.kv_dtype = DType::fp16;
  const RouteDecision d = route_decode(causal);
  CHECK(d.route == Route::asm_persistent);
  CHECK(find_predicate(d, "validate_configuration") == nullptr);
}

// ---------------------------------------------------------------------------
// Seed 001: the fp8 2-token non-causal refusal
// ---------------------------------------------------------------------------

TEST_CASE("fp8 two-token non-causal blocks without a fold are refused (seed 001)", "[router]") {
  for (int h : {12, 16, 48}) {
    const RouteDecision d = route_decode(non_causal(dense(Arch::gfx950, h, 2, 8, "fp8")));
    INFO("heads " << h);
    CHECK(d.route == Route::refused);
    CHECK(d.error_type == "ValueError");
    CHECK(d.error == kTwoTokenText);
  }
  // 32 heads fold onto the non-causal 16x4 kernel
  RouteDecision d = route_decode(non_causal(dense(Arch::gfx950, 32, 2, 8, "fp8")));
  CHECK(d.route == Route::asm_persistent);
  CHECK(d.aiter_kernel == "mla_a8w8_qh16_qseqlen4_gqaratio16_msk0_v3_ps");
  for (int h : {64, 128}) {
    d = route_decode(non_causal(dense(Arch::gfx950, h, 2, 8, "fp8")));
    INFO("heads " << h);
    CHECK(d.route == Route::asm_persistent);
  }
  // bf16 is unaffected
  for (int h : {12, 16, 48}) {
    d = route_decode(non_causal(dense(Arch::gfx950, h, 2, 8)));
    INFO("bf16 heads " << h);
    CHECK(d.route == Route::asm_persistent);
  }
  // other lengths are unaffected
  CHECK(route_decode(non_causal(dense(Arch::gfx950, 16, 4, 8, "fp8"))).route == Route::asm_persistent);
  // the causal twin is fine
  CHECK(route_decode(dense(Arch::gfx950, 16, 2, 8, "fp8")).route == Route::asm_persistent);
}

TEST_CASE("96 heads pass vLLM's 2-token whitelist but AITER 2026.08 folds them to 16x2", "[router]") {
  // §A5.1: gfx950 fp8/fp8 96 is not native, so it folds to 16 heads x 2 tokens, whose
  // key has no causal=0 row (§A5.2): the launch raises.
  const RouteDecision d = route_decode(non_causal(dense(Arch::gfx950, 96, 2, 8, "fp8")));
  CHECK(chain_value(d, "has_fp8_non_causal_qlen2_kernel") == "true");
  CHECK(d.route == Route::refused);
  CHECK(d.error == "cannot get heuristic kernel!");
  CHECK(d.error_type == "RuntimeError");
}

TEST_CASE("a non-causal small-head block keeps its persistent schedule (seed 001)", "[router]") {
  const RouteDecision d = route_decode(non_causal(dense(Arch::gfx950, 12, 8, 8)));
  CHECK(d.persistent_schedule);
  CHECK(d.route == Route::asm_persistent);
}

// ---------------------------------------------------------------------------
// §V5.6 test_rocm_glm5next_sparse.py: _use_rocm_sparse_triton
// ---------------------------------------------------------------------------

namespace {
struct SparseRow {
  const char* kv;
  int head;
  int64_t prefills, decodes, decode_tokens, max_qlen;
  bool expected, legacy_expected;
};
const std::vector<SparseRow> kSparseRows = {
    {"auto", 512, 1, 0, 0, 32, true, true},   {"auto", 512, 1, 2, 2, 32, true, true},
    {"auto", 512, 0, 2, 2, 1, true, true},    {"fp8", 512, 1, 0, 0, 32, false, false},
    {"auto", 576, 1, 0, 0, 32, false, false}, {"auto", 512, 0, 2, 4, 2, true, false},
    {"auto", 512, 0, 2, 12, 6, true, false},  {"auto", 512, 0, 0, 0, 0, false, false},
};
}  // namespace

TEST_CASE("_use_rocm_sparse_triton, post-#55239 and legacy (§V5.6, seed 002)", "[router]") {
  for (const auto& r : kSparseRows) {
    INFO(r.kv << " head " << r.head << " prefills " << r.prefills << " decodes " << r.decodes << " tokens "
              << r.decode_tokens << " max qlen " << r.max_qlen);
    CHECK(use_rocm_sparse_triton(r.kv, r.head, 512, r.prefills, r.decodes, r.decode_tokens, r.max_qlen, false) ==
          r.expected);
    CHECK(use_rocm_sparse_triton(r.kv, r.head, 512, r.prefills, r.decodes, r.decode_tokens, r.max_qlen, true) ==
          r.legacy_expected);
  }
}

namespace {
RouteInput sparse_mtp(const char* kv, int head_size) {
  RouteInput in = dense(Arch::gfx950, 16, 2, 2, kv);
  in.sparse = true;
  in.topk = 2048;
  in.head_size = head_size;
  in.kv_lora_rank = 512;
  in.num_decodes = 2;
  in.num_decode_tokens = 4;
  in.max_query_len = 2;
  return in;
}
}  // namespace

TEST_CASE("sparse routing through the router", "[router]") {
  RouteDecision d = route_decode(sparse_mtp("auto", 512));
  CHECK(d.route == Route::sparse_triton);
  CHECK(chain_value(d, "_use_rocm_sparse_triton") == "true");
  CHECK(d.padded_heads == 16);
  CHECK_FALSE(d.persistent_schedule);
  // rope geometry keeps AITER, with a schedule and an ASM kernel
  d = route_decode(sparse_mtp("auto", 576));
  CHECK(d.route == Route::aiter_sparse);
  CHECK(d.persistent_schedule);
  CHECK_FALSE(d.aiter_kernel.empty());
  CHECK(d.findings.empty());
  d = route_decode(sparse_mtp("fp8", 576));
  CHECK(d.route == Route::aiter_sparse);
  // a dense --kernel cannot run a sparse batch
  RouteInput forced = sparse_mtp("auto", 512);
  forced.forced_route = "asm_persistent";
  CHECK(route_decode(forced).route == Route::refused);
  forced.forced_route = "aiter_sparse";
  d = route_decode(forced);
  CHECK(d.route == Route::aiter_sparse);
  CHECK(has_finding(d, "seed 002"));
}

// vLLM's sparse builder calls get_mla_metadata_v1 without dtype_q/dtype_kv (docs/stacks/vllm-rocm-aiter.md §V1 (c),
// (e)), so AITER plans bf16/bf16 with max_seqlen_qo 1; mla.py folds with the real dtypes.
// Where the plan folds more heads into batches than the kernel runs, its works address
// q rows past the q tensor (docs/stacks/vllm-rocm-aiter.md §A6: "garbage output or out-of-bounds access"): refused.
TEST_CASE("aiter_sparse: a metadata fold the kernel does not make is refused (grid-110)", "[router]") {
  auto sparse_fp8 = [](Arch arch, int heads) {
    RouteInput in = sparse_mtp("fp8", 576);
    in.arch = arch;
    in.num_heads = heads;
    in.num_decodes = 1;
    in.num_decode_tokens = 2;
    in.num_cu = 10;
    return in;
  };
  // grid-110: gfx942, fp8 q and KV, 128 heads: the bf16 plan folds x8, the kernel runs 128 native
  RouteDecision d = route_decode(sparse_fp8(Arch::gfx942, 128));
  CHECK(d.route == Route::refused);
  CHECK(d.error.find("without dtype_q/dtype_kv") != std::string::npos);
  CHECK(d.error.find("out of bounds") != std::string::npos);
  CHECK(d.error.find("16 heads x 8") != std::string::npos);
  // gfx942 fp8 64 heads: mla.py is native at L == 1 (the sparse kernel's q_len), the plan folds x4
  d = route_decode(sparse_fp8(Arch::gfx942, 64));
  CHECK(d.route == Route::refused);
  CHECK(d.error.find("16 heads x 4") != std::string::npos);
  // both fold alike: the plan fits the kernel
  CHECK(route_decode(sparse_fp8(Arch::gfx942, 48)).route == Route::aiter_sparse);
  CHECK(route_decode(sparse_fp8(Arch::gfx942, 32)).route == Route::aiter_sparse);
  CHECK(route_decode(sparse_fp8(Arch::gfx942, 16)).route == Route::aiter_sparse);
  // gfx950: bf16 never folds and fp8 32/64/128 are native
  CHECK(route_decode(sparse_fp8(Arch::gfx950, 128)).route == Route::aiter_sparse);
  CHECK(route_decode(sparse_fp8(Arch::gfx950, 64)).route == Route::aiter_sparse);
  // a bf16 q over fp8 KV (a16w8) folds x8 in mla.py too, as the dtype-less plan does
  RouteInput a16w8 = sparse_fp8(Arch::gfx942, 128);
  a16w8.q_dtype = DType::bf16;
  CHECK(route_decode(a16w8).route == Route::aiter_sparse);
  // bf16 KV: planner and kernel see the same dtypes
  RouteInput bf16 = sparse_mtp("auto", 576);
  bf16.arch = Arch::gfx942;
  bf16.num_heads = 128;
  CHECK(route_decode(bf16).route == Route::aiter_sparse);
}

// ---------------------------------------------------------------------------
// Defect switches (docs/design.md §7): each flips its routing symptom
// ---------------------------------------------------------------------------

TEST_CASE("defect noncausal-probe-silent: silent fallback instead of refusal", "[router]") {
  RouteInput in = non_causal(dense(Arch::gfx950, 16, 4, 4));
  in.aiter_has_causal_arg = false;
  CHECK(route_decode(in).route == Route::refused);
  in.defect_noncausal_probe_silent = true;
  const RouteDecision d = route_decode(in);
  CHECK(d.route == Route::triton_mla);
  CHECK(has_finding(d, "silent fallback"));
  CHECK(d.error.empty());
  // with a causal= AITER the switch changes nothing
  RouteInput modern = non_causal(dense(Arch::gfx950, 16, 4, 4));
  modern.defect_noncausal_probe_silent = true;
  CHECK(route_decode(modern).route == Route::asm_persistent);
}

TEST_CASE("defect sparse-route-legacy: MTP rows go to aiter_sparse on rope-free geometry", "[router]") {
  RouteInput in = sparse_mtp("auto", 512);
  CHECK(route_decode(in).route == Route::sparse_triton);
  in.defect_sparse_route_legacy = true;
  const RouteDecision d = route_decode(in);
  CHECK(d.route == Route::aiter_sparse);
  CHECK(has_finding(d, "wrong stride"));
  // plain decode rows are routed the same either way
  in.num_decode_tokens = 2;
  in.max_query_len = 1;
  in.max_qo_len = 1;
  CHECK(route_decode(in).route == Route::sparse_triton);
}

TEST_CASE("defect pad-repeat-noop: 12 heads stay unpadded (seed 003)", "[router]") {
  // gfx950: the route stays on Gluon (the seed 003 slowdown)
  RouteInput in = dense(Arch::gfx950, 12, 1, 1);
  CHECK(route_decode(in).route == Route::asm_persistent);
  in.defect_pad_repeat_noop = true;
  RouteDecision d = route_decode(in);
  CHECK(d.route == Route::gluon_decode);
  CHECK(d.padded_heads == 12);
  // gfx942: Gluon is chosen and asserts
  RouteInput g942 = dense(Arch::gfx942, 12, 1, 1);
  g942.defect_pad_repeat_noop = true;
  d = route_decode(g942);
  CHECK(d.route == Route::refused);
  CHECK(d.error == "mla_gluon requires gfx950");
  // forced onto ASM (env asm or --kernel): 12 heads reach a 16-head kernel
  g942.small_head_mode = "asm";
  d = route_decode(g942);
  CHECK(d.route == Route::refused);
  CHECK_THAT(d.error, Catch::Contains("multiple of 16"));
  CHECK(d.padded_heads == 12);
  in.forced_route = "asm_persistent";
  d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK_THAT(d.error, Catch::Contains("head count"));
  // fp8 never takes Gluon, so the unpadded heads reach ASM
  RouteInput fp8 = dense(Arch::gfx950, 12, 1, 1, "fp8");
  fp8.defect_pad_repeat_noop = true;
  CHECK(route_decode(fp8).route == Route::refused);
  // divisors are unaffected
  RouteInput divisor = dense(Arch::gfx942, 8, 1, 1);
  divisor.defect_pad_repeat_noop = true;
  CHECK(route_decode(divisor).route == Route::asm_persistent);
}

TEST_CASE("defect pad-append-only: 6 heads pad to 12 and the ASM route refuses (seed 003)", "[router]") {
  for (Arch arch : {Arch::gfx942, Arch::gfx950}) {
    RouteInput in = dense(arch, 6, 1, 1);
    RouteDecision d = route_decode(in);
    INFO(to_string(arch));
    CHECK(d.route == Route::asm_persistent);
    CHECK(d.padded_heads == 16);
    in.defect_pad_append_only = true;
    d = route_decode(in);
    CHECK(d.route == Route::refused);
    CHECK(d.padded_heads == 12);
    CHECK_THAT(d.error, Catch::Contains("head count that is a multiple of 16"));
  }
  // Gluon takes raw heads, so the padding defect does not touch it
  RouteInput gluon = dense(Arch::gfx950, 6, 1, 1);
  gluon.small_head_mode = "gluon";
  gluon.defect_pad_append_only = true;
  CHECK(route_decode(gluon).route == Route::gluon_decode);
}

TEST_CASE("defect gluon-arch-ungated: Gluon chosen on gfx942 asserts (seed 003)", "[router]") {
  RouteInput in = dense(Arch::gfx942, 8, 1, 1);
  CHECK(route_decode(in).route == Route::asm_persistent);
  in.defect_gluon_arch_ungated = true;
  RouteDecision d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK(d.error == "mla_gluon requires gfx950");
  CHECK(d.error_type == "AssertionError");
  // the verify call site too
  RouteInput verify = dense(Arch::gfx942, 12, 4, 4);
  verify.defect_gluon_arch_ungated = true;
  CHECK(route_decode(verify).error == "mla_gluon requires gfx950");
  // gfx950 is unaffected
  RouteInput g950 = dense(Arch::gfx950, 8, 1, 1);
  g950.defect_gluon_arch_ungated = true;
  CHECK(route_decode(g950).route == Route::gluon_decode);
}

TEST_CASE("defect metadata-dtype-omitted: same route, planner plans bf16/bf16 (seed 004)", "[router]") {
  // seed 004: gfx950, 32 heads, fp8 KV with a bf16 (model) q
  RouteInput in = dense(Arch::gfx950, 32, 1, 1, "fp8");
  in.q_dtype = DType::bf16;
  const RouteDecision clean = route_decode(in);
  in.defect_metadata_dtype_omitted = true;
  const RouteDecision d = route_decode(in);
  CHECK(d.route == clean.route);
  CHECK(d.aiter_kernel == clean.aiter_kernel);
  CHECK(d.aiter_kernel == "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps");
  CHECK(chain_value(d, "get_mla_metadata_v1 dtypes") == "omitted");
  CHECK(chain_mentions(d, "bf16/bf16"));
  CHECK(has_finding(d, "fold mismatch"));
  CHECK(clean.findings.empty());
  // gfx942 fp8 128 heads: the planner folds by 8, the kernel runs native
  RouteInput g942 = dense(Arch::gfx942, 128, 1, 1, "fp8");
  g942.defect_metadata_dtype_omitted = true;
  CHECK(has_finding(route_decode(g942), "fold mismatch"));
  // a shape where both agree (gfx950 fp8/fp8 16) gets the note but no mismatch
  RouteInput agree = dense(Arch::gfx950, 16, 1, 1, "fp8");
  agree.defect_metadata_dtype_omitted = true;
  const RouteDecision a = route_decode(agree);
  CHECK(chain_value(a, "get_mla_metadata_v1 dtypes") == "omitted");
  CHECK(a.findings.empty());
  // gfx950 fp8 16 heads with L 5..7: same fold, but bf16 planning tiles by 64 rows, fp8 by 128 (§A6)
  RouteInput tiles = dense(Arch::gfx950, 16, 5, 8, "fp8");
  tiles.defect_metadata_dtype_omitted = true;
  CHECK(has_finding(route_decode(tiles), "q-tile mismatch"));
}

// ---------------------------------------------------------------------------
// Forced routes (--kernel)
// ---------------------------------------------------------------------------

TEST_CASE("forced routes", "[router]") {
  RouteInput in = dense(Arch::gfx942, 8, 1, 1);
  in.forced_route = "gluon_decode";
  RouteDecision d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK(d.error == "mla_gluon requires gfx950");
  CHECK(chain_value(d, "forced_route") == "gluon_decode");
  CHECK(chain_mentions(d, "vLLM would answer asm_persistent"));

  in = dense(Arch::gfx950, 16, 1, 1);
  in.forced_route = "gluon-decode";  // hyphens accepted
  d = route_decode(in);
  CHECK(d.route == Route::gluon_decode);
  CHECK(d.padded_heads == 16);

  in = dense(Arch::gfx950, 12, 4, 4);
  in.forced_route = "gluon_decode";
  CHECK(route_decode(in).error_type == "ValueError");

  in = non_causal(dense(Arch::gfx950, 12, 4, 4));
  in.forced_route = "gluon_verify";
  d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK(d.error == "AITER MLA small-head verify MTP is causal-only");

  in = dense(Arch::gfx950, 8, 1, 1);
  in.forced_route = "triton_mla";
  d = route_decode(in);
  CHECK(d.route == Route::triton_mla);
  CHECK(d.padded_heads == 8);

  in = dense(Arch::gfx950, 16, 1, 1);
  in.forced_route = "asm_nonpersistent";
  d = route_decode(in);
  CHECK(d.route == Route::asm_nonpersistent);
  CHECK(d.aiter_kernel == "mla_dec_stage1_bf16_a16w16_subQ16_mqa16");

  in = dense(Arch::gfx950, 16, 4, 2);
  in.forced_route = "asm_persistent";
  CHECK(route_decode(in).route == Route::refused);

  // forcing AITER past vLLM's gfx942 non-causal guard reaches the manifest gap
  in = non_causal(dense(Arch::gfx942, 16, 4, 4));
  in.forced_route = "asm_persistent";
  d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK(d.error == "cannot get heuristic kernel!");

  in = dense(Arch::gfx950, 16, 1, 1);
  in.forced_route = "sparse_triton";
  CHECK(route_decode(in).route == Route::refused);
  in.forced_route = "fastest";
  d = route_decode(in);
  CHECK(d.route == Route::refused);
  CHECK(d.error_type == "ValueError");
  in.forced_route = "refused";
  CHECK(route_decode(in).error_type == "ValueError");
}

TEST_CASE("route ids round-trip", "[router]") {
  for (Route r : {Route::gluon_decode, Route::gluon_verify, Route::asm_persistent, Route::asm_nonpersistent,
                  Route::triton_mla, Route::sparse_triton, Route::aiter_sparse, Route::refused}) {
    const auto back = route_from_string(to_string(r));
    REQUIRE(back);
    CHECK(*back == r);
  }
  CHECK_FALSE(route_from_string("gluon"));
}

// ---------------------------------------------------------------------------
// AITER kernel manifest (docs/stacks/vllm-rocm-aiter.md §A5.1, §A5.2)
// ---------------------------------------------------------------------------

TEST_CASE("mla.py head fold (§A5.1)", "[router]") {
  auto fold = [](Arch a, int h, int l, bool q8, bool k8) { return mla_py_head_fold(a, h, l, q8, k8); };
  CHECK(fold(Arch::gfx942, 32, 1, false, false).gqa == 16);
  CHECK(fold(Arch::gfx942, 32, 1, false, false).ratio == 2);
  CHECK(fold(Arch::gfx942, 128, 1, true, true).native);
  CHECK(fold(Arch::gfx942, 64, 1, true, true).native);
  CHECK(fold(Arch::gfx942, 64, 2, true, true).ratio == 4);
  CHECK(fold(Arch::gfx950, 48, 1, true, true).ratio == 3);
  CHECK(fold(Arch::gfx950, 32, 2, true, true).native);
  CHECK(fold(Arch::gfx950, 96, 2, true, true).gqa == 16);
  CHECK(fold(Arch::gfx950, 48, 4, false, false).native);
  CHECK(fold(Arch::gfx950, 32, 1, false, true).ratio == 2);  // bf16 q / fp8 kv is not bf16/bf16
  CHECK(fold(Arch::gfx950, 8, 4, true, true).native);
  CHECK(fold(Arch::gfx942, 8, 2, false, false).native);
  CHECK_FALSE(fold(Arch::gfx942, 12, 1, false, false).ok);
  CHECK_FALSE(fold(Arch::gfx942, 144, 1, false, false).ok);
}

TEST_CASE("mla.py's fold agrees with the metadata planner's on the real dtypes (§A5.1)", "[router]") {
  // "The metadata's native predicate (§A2) is meant to be the same set": with the
  // dtypes passed (the fixed stack) the planner and the kernel fold alike.
  for (Arch arch : {Arch::gfx942, Arch::gfx950})
    for (auto [q8, k8] : std::vector<std::pair<bool, bool>>{{false, false}, {false, true}, {true, true}})
      for (int h = 16; h <= 128; h += 16)
        for (int l = 1; l <= 8; ++l) {
          INFO(to_string(arch) << " q8 " << q8 << " k8 " << k8 << " H " << h << " L " << l);
          const MlaPyFold kernel = mla_py_head_fold(arch, h, l, q8, k8);
          const AiterFold planner = aiter_fold(arch, h, l, q8, k8, false);
          REQUIRE(kernel.ok);
          CHECK(kernel.ratio == planner.ratio);
          CHECK(kernel.gqa == planner.heads);
        }
}

TEST_CASE("AITER kernel lookup: persistent rows (§A5.2)", "[router]") {
  using A = Arch;
  using D = DType;
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, 2)) == "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 8, 2)) == "mla_dec_stage1_bf16_a16w16_subQ16_mqa16_ps");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::fp8, 16, 3)) == "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, 1)) == "mla_a8w8_qh16_qseqlen1_gqaratio16_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, 2)) == "mla_a8w8_qh16_qseqlen2_gqaratio16_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, 3)) == "mla_a8w8_qh64_qseqlen4_gqaratio16_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 64, 1)) == "mla_a8w8_qh64_qseqlen1_gqaratio64_v3_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 64, 1, true, true, true)) ==
        "mla_a8w8_qh64_qseqlen1_gqaratio64_lse_v3_ps");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 128, 3)) == "mla_a8w8_qh128_m32x4_n16x2_msk0_ps");
  // gfx950 bf16: overrides 1 and 2
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 16, 1)) == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 16, 8)) == "mla_a16w16_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 48, 4)) == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 128, 1)) == "mla_a16w16_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 8, 8)) == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::fp8, 16, 2)) == "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps");
  // gfx950 fp8: per-gqa keys and overrides 3 and 4
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 16, 2)) == "mla_a8w8_qh16_qseqlen2_gqaratio16_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 16, 3)) == "mla_a8w8_qh16_qseqlen4_gqaratio16_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 16, 6)) == "mla_a8w8_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 32, 1)) == "mla_a8w8_qh32_qseqlen1_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 32, 2)) == "mla_a8w8_qh16_qseqlen4_gqaratio16_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 32, 4)) == "mla_a8w8_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 64, 1)) == "mla_a8w8_qh16_qseqlen4_gqaratio16_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 64, 2)) == "mla_a8w8_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 128, 1)) == "mla_a8w8_qh32_qseqlen4_gqaratio32_ps");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 8, 4)) == "mla_a8w8_qh32_qseqlen4_gqaratio8_ps");
  // the msk0 rows a non-causal block reaches on gfx950
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 32, 2, true, false)) == "mla_a8w8_qh16_qseqlen4_gqaratio16_msk0_v3_ps");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 16, 2, true, false)) ==
        "mla_a16w16_qh64_qseqlen1_gqaratio64_msk0_v3_ps");
}

TEST_CASE("AITER kernel lookup: non-persistent rows (§A5.2)", "[router]") {
  using A = Arch;
  using D = DType;
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, 1, false)) == "mla_dec_stage1_bf16_a16w16_subQ16_mqa16");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, 3, false)) == "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, 9, false)) == "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 32, 2, false)) == "MLA_A16W16_1TG_4W_32mx1_16nx1_Coex0_Msk1_QH16");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 128, 1, false)) == "mla_dec_stage1_bf16_a16w16_subQ128_mqa128");
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 128, 4, false)) == "mla_a8w8_qh128_m32x4_n16x2_msk1");
  CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, 64, 1, false)) == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3");
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 64, 1, false)) == "cannot get heuristic kernel!");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 16, 4, false, false)) == "mla_a8w8_qh64_qseqlen4_gqaratio16_msk0");
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 64, 1, false)) == "cannot get heuristic kernel!");
  // bf16 on gfx942 sends gqa 128 to the non-persistent row even when ps was asked for
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 128, 1, true)) == "mla_dec_stage1_bf16_a16w16_subQ128_mqa128");
}

TEST_CASE("AITER kernel lookup: the 'cannot get heuristic kernel!' gaps (§A5.2)", "[router]") {
  using A = Arch;
  using D = DType;
  // non-causal L > 1 on gfx942: no decode msk0 rows
  for (int l : {2, 3, 4}) {
    INFO("L " << l);
    CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, l, true, false)) == "cannot get heuristic kernel!");
    CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, l, true, false)) == "cannot get heuristic kernel!");
    CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 128, l, true, false)) == "cannot get heuristic kernel!");
  }
  // L == 1 forces causal = 1, so a one-token non-causal block still finds a kernel
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, 1, true, false)) == "mla_a8w8_qh16_qseqlen1_gqaratio16_ps");
  // gfx950 fp8 16 x 2 non-causal
  CHECK(kernel_of(kq(A::gfx950, D::fp8, D::fp8, 16, 2, true, false)) == "cannot get heuristic kernel!");
  // gfx950 bf16 H < 16 with H*L < 64
  for (auto [h, l] : std::vector<std::pair<int, int>>{{8, 1}, {8, 2}, {4, 8}, {12, 5}}) {
    INFO("H " << h << " L " << l);
    CHECK(kernel_of(kq(A::gfx950, D::bf16, D::bf16, h, l)) == "cannot get heuristic kernel!");
  }
  // gfx942 bf16 16 with L > 4 persistent has no row
  CHECK(kernel_of(kq(A::gfx942, D::bf16, D::bf16, 16, 8)) == "cannot get heuristic kernel!");
  // fp8 16 with L > 4 errors off gfx950
  const auto r = lookup_aiter_kernel(kq(A::gfx942, D::fp8, D::fp8, 16, 5));
  CHECK_FALSE(r.found);
  CHECK(r.error == "cannot get heuristic kernel!");
  CHECK_FALSE(r.key.empty());
  // persistent return_lse on gfx942: only 64x1
  CHECK(kernel_of(kq(A::gfx942, D::fp8, D::fp8, 16, 1, true, true, true)) == "cannot get heuristic kernel!");
}

TEST_CASE("AITER kernel lookup: fp16 (seed 001)", "[router]") {
  // non-causal fp16 aborts in AITER; causal fp16 runs on the 16-bit rows
  auto nc = lookup_aiter_kernel(kq(Arch::gfx950, DType::fp16, DType::fp16, 16, 4, true, false));
  CHECK_FALSE(nc.found);
  CHECK(nc.error == "unsupport Q dtype:fp16");
  CHECK(kernel_of(kq(Arch::gfx950, DType::fp16, DType::fp16, 16, 4)) == "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps");
}

TEST_CASE("route reports a manifest gap as a refusal", "[router]") {
  // gfx942 bf16 16 heads with K = Q = 8 passes the gate but has no L > 4 row
  const RouteDecision d = route_decode(dense(Arch::gfx942, 16, 8, 8));
  CHECK(chain_value(d, "use_persistent_schedule") == "true");
  CHECK(d.route == Route::refused);
  CHECK(d.error == "cannot get heuristic kernel!");
  CHECK(d.error_type == "RuntimeError");
  CHECK(d.aiter_kernel.empty());
  CHECK(chain_value(d, "aiter_kernel") == "cannot get heuristic kernel!");
}
