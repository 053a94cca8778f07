// The SGLang stack's section, router and builders (docs/stacks/sglang.md §S1-§S11) against
// values worked from the upstream rules: the padding shape per backend and mode, each
// backend's arrays, the default backend and the refusals' texts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/batch_parse.hpp"
#include "core/stack_arrays.hpp"
#include "core/stacks/registry.hpp"
#include "core/stacks/sglang/builder.hpp"
#include "core/stacks/sglang/router.hpp"
#include "core/stacks/sglang/section.hpp"

using namespace mlactl;

namespace {

Batch sglang_batch(const std::string& arch, int heads, const std::string& section, const std::string& requests, const std::string& extra = "") {
  return parse_batch_text(R"({"schema": 1, "platform": {"stack": "sglang", "arch": ")" + arch + R"("}, "model": {"num_heads": )" +
                              std::to_string(heads) + "}, \"sglang\": " + section + ", \"requests\": " + requests + extra + "}",
                          "test");
}

std::vector<int64_t> array_of(const DecodeMetadata& md, const std::string& name) {
  for (const StackArray& a : md.stack_arrays)
    if (a.name == name) return a.values;
  FAIL("no array " << name);
  return {};
}

}  // namespace

TEST_CASE("sglang section: forward modes, padding shapes, the page size FlashMLA forces", "[sglang_stack]") {
  // decode padding: one row over seq_lens = 1 (get_cuda_graph_seq_len_fill_value)
  Batch b = sglang_batch("sm90", 16, "{}", R"([{"context_len": 9, "query_len": 1}, {"padding": true}])");
  CHECK(sglang::section_of(b).cuda_graph);
  CHECK(b.rows_per_padding_request() == 1);
  CHECK(b.padding_kv_len() == 1);
  CHECK(&stack_for(b) == &stack_for_platform(ServingStack::sglang, Arch::sm90));
  // target_verify: D rows over fill + D; aiter fills with D when speculating (§S11)
  b = sglang_batch("sm90", 16, R"({"forward_mode": "target_verify"})", R"([{"context_len": 9, "query_len": 3}, {"padding": true}])");
  CHECK(b.rows_per_padding_request() == 3);
  CHECK(b.padding_kv_len() == 1 + 3);
  b = sglang_batch("gfx942", 16, R"({"forward_mode": "target_verify"})", R"([{"context_len": 9, "query_len": 3}, {"padding": true}])");
  CHECK(b.padding_kv_len() == 3 + 3);
  // draft_extend: steps + 1 rows over the fill; FlashMLA forces page size 64 (R1)
  b = sglang_batch("sm90", 16, R"({"forward_mode": "draft_extend", "num_draft_tokens": 4, "attention_backend": "flashmla"})",
                   R"([{"context_len": 9, "query_len": 2}, {"padding": true}])");
  CHECK(b.rows_per_padding_request() == 4);
  CHECK(b.padding_kv_len() == 1);
  CHECK(b.kv_cache.block_size == 64);
  CHECK(sglang::section_of(b).rewrites.empty());  // not given: no rewrite to report
  b = sglang_batch("sm90", 16, R"({"attention_backend": "flashmla"})", R"([{"context_len": 9, "query_len": 1}])", R"(, "kv_cache": {"block_size": 16})");
  REQUIRE(sglang::section_of(b).rewrites.size() == 1);
  CHECK_THAT(sglang::section_of(b).rewrites[0], Catch::StartsWith("FlashMLA only supports a page_size of 64, change page_size to 64."));
}

TEST_CASE("sglang builders: each backend's arrays per forward mode", "[sglang_stack]") {
  SECTION("flashinfer target_verify: qo_indptr = arange * D, kv = cumsum(seq_lens + D), causal") {
    const Batch b = sglang_batch("sm90", 16, R"({"attention_backend": "flashinfer", "forward_mode": "target_verify"})",
                                 R"([{"context_len": 10, "query_len": 2}, {"context_len": 0, "query_len": 2}])");
    const DecodeMetadata md = sglang::build_sglang(b, sglang::Backend::flashinfer);
    CHECK(array_of(md, "qo_indptr") == std::vector<int64_t>{0, 2, 4});
    CHECK(array_of(md, "kv_indptr") == std::vector<int64_t>{0, 12, 14});
    CHECK(array_of(md, "kv_len_arr") == std::vector<int64_t>{12, 2});
    CHECK(array_of(md, "causal") == std::vector<int64_t>{1});
    CHECK(array_of(md, "forward_batch_seq_lens") == std::vector<int64_t>{10, 0});  // the prefix (§S3)
  }
  SECTION("flashmla: block_kv_indices hold each 64-token page, -1 past the end (eager), 1 under a CUDA graph") {
    const std::string reqs = R"([{"context_len": 99, "query_len": 1}, {"context_len": 9, "query_len": 1}])";
    const std::string seq = R"(, "kv_cache": {"layout": "sequential"})";
    Batch b = sglang_batch("sm90", 16, R"({"attention_backend": "flashmla"})", reqs, seq);
    DecodeMetadata md = sglang::build_sglang(b, sglang::Backend::flashmla);
    // sequential placement: request r's blocks r * stride + j, stride 2 (ceil(100 / 64))
    CHECK(array_of(md, "block_kv_indices") == std::vector<int64_t>{0, 1, 2, -1});
    CHECK(array_of(md, "cache_seqlens") == std::vector<int64_t>{100, 10});
    b = sglang_batch("sm90", 16, R"({"attention_backend": "flashmla", "cuda_graph": true})", reqs, seq);
    md = sglang::build_sglang(b, sglang::Backend::flashmla);
    CHECK(array_of(md, "block_kv_indices") == std::vector<int64_t>{0, 1, 2, 1});
  }
  SECTION("fa3 decode: page_table = the request's slots (page 1), cu_seqlens") {
    const Batch b = sglang_batch("sm90", 16, "{}", R"([{"context_len": 2, "query_len": 1}, {"context_len": 0, "query_len": 1}])",
                                 R"(, "kv_cache": {"layout": "sequential"})");
    const DecodeMetadata md = sglang::build_sglang(b, sglang::Backend::fa3);
    CHECK(array_of(md, "page_table") == std::vector<int64_t>{0, 1, 2, 3, 0, 0});
    CHECK(array_of(md, "cu_seqlens_k") == std::vector<int64_t>{0, 3, 4});
    CHECK(array_of(md, "max_seqlen_q") == std::vector<int64_t>{1});
  }
  SECTION("triton draft_extend: kv_indptr as built, cumsum of the post-accept seq_lens, with a note") {
    const Batch b = sglang_batch("sm90", 16, R"({"attention_backend": "triton", "forward_mode": "draft_extend", "num_draft_tokens": 3})",
                                 R"([{"context_len": 7, "query_len": 1}, {"context_len": 20, "query_len": 3}])");
    const DecodeMetadata md = sglang::build_sglang(b, sglang::Backend::triton);
    CHECK(array_of(md, "qo_indptr") == std::vector<int64_t>{0, 1, 4});
    CHECK(array_of(md, "kv_indptr") == std::vector<int64_t>{0, 8, 31});
    CHECK(array_of(md, "max_extend_len") == std::vector<int64_t>{3});
    REQUIRE(!md.notes.empty());
    CHECK_THAT(md.notes.back(), Catch::Contains("counts the accepted tokens"));
  }
}

TEST_CASE("sglang router: the default backend and SGLang's refusals", "[sglang_stack]") {
  auto route = [](const std::string& arch, int heads, const std::string& section, const std::string& extra = "") {
    return sglang::route_sglang(sglang_batch(arch, heads, section, R"([{"context_len": 5, "query_len": 1}])", extra), std::nullopt);
  };
  CHECK(route("sm90", 16, "{}").route == Route::flash_attn_mla);
  CHECK(route("gfx942", 16, "{}").route == Route::asm_nonpersistent);        // 16 kv heads: aiter, bf16: non-persistent
  CHECK(route("gfx950", 128, "{}", R"(, "kv_cache": {"dtype": "fp8"})").route == Route::asm_persistent);
  CHECK(route("gfx942", 24, "{}").route == Route::triton_mla);               // not 16 or 128: triton
  CHECK(route("gfx942", 24, R"({"kv_heads_per_rank": 128})").route == Route::refused);  // aiter, but 24 q heads
  CHECK(route("gfx942", 24, R"({"kv_heads_per_rank": 128})").error ==
        "Aiter MLA supports num_head of 4, 8, or multiples of 16 in [16, 128].\nProvided 24 number of heads.\nTry adjusting tensor_parallel_size value.");
  const RouteDecision t = route("sm90", 16, R"({"attention_backend": "tokenspeed_mla"})");
  CHECK(t.error_type == "ValueError");
  CHECK(t.error == "tokenspeed_mla backend is only supported on Blackwell GPUs (SM100/SM12x).");
  CHECK(route("gfx950", 16, R"({"attention_backend": "fa3"})").error_type == "NotModelled");
  // topk > 1 on triton at page size > 1 (R8)
  const Batch tree = sglang_batch("sm90", 16, R"({"attention_backend": "triton", "forward_mode": "target_verify", "speculative_topk": 2,
                                   "draft_trees": [{"parents": [-1, 0]}]})",
                                  R"([{"context_len": 5, "query_len": 2}])", R"(, "kv_cache": {"block_size": 16})");
  const RouteDecision r8 = sglang::route_sglang(tree, std::nullopt);
  CHECK(r8.error_type == "ValueError");
  CHECK_THAT(r8.error, Catch::StartsWith("speculative_eagle_topk > 1 with page_size > 1 is unstable"));
}
