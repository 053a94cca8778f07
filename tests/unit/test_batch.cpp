// Batch parsing: strictness, defaults, JSON pointers in every error (docs/design.md §2).
#include <catch2/catch.hpp>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"

using namespace mlactl;
using nlohmann::json;

namespace {
json minimal() {
  return json{{"schema", 1}, {"model", {{"num_heads", 16}}}, {"requests", json::array({{{"context_len", 10}, {"query_len", 1}}})}};
}
std::string error_of(const json& doc) {
  try {
    parse_batch(doc);
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitInvalidInput);
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("batch defaults resolve as docs/design.md §2 says", "[batch]") {
  Batch b = parse_batch(minimal());
  CHECK(b.platform.arch == Arch::gfx950);
  CHECK(b.platform.num_cu == 256);
  CHECK(b.platform.aiter == AiterRules::r2026_08_pr4899);
  CHECK(b.model.head_size() == 576);
  CHECK(b.model.softmax_scale == Approx(1.0 / std::sqrt(192.0)));
  CHECK(b.kv_cache.dtype == DType::bf16);
  CHECK(b.kv_cache.dtype_auto);
  CHECK(b.kv_cache.block_size == 1);
  CHECK(b.decode.causal);
  CHECK(b.decode.mtp_qlen == 1);
  CHECK(b.decode.q_dtype == DType::bf16);
  CHECK(b.decode.num_decode_tokens == 1);
  CHECK(b.decode.max_num_seqs == 1);
  REQUIRE(b.kv_cache.block_table.size() == 1);
  CHECK(b.kv_cache.block_table[0].size() == 11);
  CHECK(b.kv_cache.num_blocks == 11);

  json g = minimal();
  g["platform"] = {{"arch", "gfx942"}};
  CHECK(parse_batch(g).platform.num_cu == 304);
  json f = minimal();
  f["kv_cache"] = {{"dtype", "fp8"}};
  Batch bf = parse_batch(f);
  CHECK(bf.decode.q_dtype == DType::fp8);  // R1 quantizes decode q with an fp8 cache
  CHECK(bf.fp8_flavor() == Fp8Flavor::e4m3fn);
  f["decode"] = {{"q_dtype", "model"}};
  CHECK(parse_batch(f).decode.q_dtype == DType::bf16);  // a16w8 (seed 004's era)
}

TEST_CASE("seq_len form and padding slots", "[batch]") {
  json d = minimal();
  d["requests"] = json::array({{{"seq_len", 9}, {"query_len", 8}}, {{"padding", true}}});
  Batch b = parse_batch(d);
  CHECK(b.requests[0].context_len == 1);
  CHECK(b.requests[1].padding);
  CHECK(b.decode.mtp_qlen == 8);
  CHECK(b.decode.num_decode_tokens == 16);  // Σ query_len + K·#padding
}

TEST_CASE("errors name the JSON pointer", "[batch]") {
  json d = minimal();
  d["bogus"] = 1;
  CHECK_THAT(error_of(d), Catch::StartsWith("/bogus: unknown key"));

  d = minimal();
  d["model"]["num_heads"] = "sixteen";
  CHECK_THAT(error_of(d), Catch::StartsWith("/model/num_heads: must be an integer, got a string"));

  d = minimal();
  d["requests"][0]["query_len"] = -1;
  CHECK_THAT(error_of(d), Catch::StartsWith("/requests/0/query_len: must be >= 0"));

  d = minimal();
  d["requests"][0]["context_len"] = -5;
  CHECK_THAT(error_of(d), Catch::StartsWith("/requests/0/context_len: must be >= 0"));

  d = minimal();
  d["requests"][0] = {{"seq_len", 3}, {"query_len", 4}};
  CHECK_THAT(error_of(d), Catch::StartsWith("/requests/0/seq_len: must be >= query_len"));

  d = minimal();
  d["requests"][0]["context_len"] = 1.5;
  CHECK_THAT(error_of(d), Catch::StartsWith("/requests/0/context_len: must be an integer"));

  d = minimal();
  d["model"]["dtype"] = "fp32";
  CHECK_THAT(error_of(d), Catch::Contains("/model/dtype: must be one of bf16, fp16"));

  d = minimal();
  d["schema"] = 2;
  CHECK_THAT(error_of(d), Catch::StartsWith("/schema: must be <= 1"));

  d = minimal();
  d.erase("requests");
  CHECK_THAT(error_of(d), Catch::StartsWith("/requests: is required"));

  d = minimal();
  d["inject"] = json::array({"no-such-defect"});
  CHECK_THAT(error_of(d), Catch::StartsWith("/inject/0: unknown defect id"));

  d = minimal();
  d["kv_cache"] = {{"block_table", json::array({json::array({0, 1})})}};
  CHECK_THAT(error_of(d), Catch::StartsWith("/kv_cache/block_table/0: has 2 blocks but request 0 needs 11"));

  d = minimal();
  d["kv_cache"] = {{"num_blocks", 4}, {"block_size", 4}, {"block_table", json::array({json::array({0, 1, 7})})}};
  CHECK_THAT(error_of(d), Catch::StartsWith("/kv_cache/block_table/0/2: block id 7 is out of range [0, 4)"));

  d = minimal();
  d["requests"][0]["query_len"] = 4;
  d["decode"] = {{"mtp_qlen", 2}};
  CHECK_THAT(error_of(d), Catch::Contains("/requests/0/query_len: is 4, more than decode.mtp_qlen 2"));
}

TEST_CASE("head counts vLLM rejects exit 3 with vLLM's message", "[batch]") {
  for (int n : {0, -3, 129, 130, 143}) {
    json d = minimal();
    d["model"]["num_heads"] = n;
    CHECK_THAT(error_of(d), Catch::Contains("/model/num_heads: ROCM AITER MLA requires a positive multiple of 16 heads") &&
                                Catch::Contains("but got " + std::to_string(n)));
  }
  for (int n : {1, 12, 128, 144, 256}) {
    json d = minimal();
    d["model"]["num_heads"] = n;
    CHECK(parse_batch(d).model.num_heads == n);
  }
}

TEST_CASE("malformed JSON is exit 3 with the position", "[batch]") {
  try {
    parse_batch_text("{\"schema\": 1, ", "x.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitInvalidInput);
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("x.json: malformed JSON"));
  }
}

TEST_CASE("sparse explicit indices are range-checked", "[batch]") {
  json d = minimal();
  d["requests"] = json::array({{{"context_len", 3}, {"query_len", 2}}});
  d["decode"] = {{"mtp_qlen", 2}};
  d["sparse"] = {{"topk", 4}, {"indices", json::array({json::array({0, 3, -1}), json::array({4, 1})})}};
  Batch b = parse_batch(d);
  REQUIRE(b.sparse);
  CHECK(b.sparse->indices[0] == std::vector<int64_t>{0, 3});
  d["sparse"]["indices"][0] = json::array({0, 4});
  CHECK_THAT(error_of(d), Catch::StartsWith("/sparse/indices/0/1: index 4 is outside [0, 4)"));
}

TEST_CASE("set overrides any field", "[batch]") {
  json d = minimal();
  apply_set(d, "platform.arch=gfx942");
  apply_set(d, "requests.0.context_len=99");
  apply_set(d, "decode.causal=false");
  Batch b = parse_batch(d);
  CHECK(b.platform.arch == Arch::gfx942);
  CHECK(b.requests[0].context_len == 99);
  CHECK_FALSE(b.decode.causal);
  CHECK_THROWS_AS(apply_set(d, "nokey"), Error);
  CHECK_THROWS_AS(apply_set(d, "requests.5.context_len=1"), Error);
}

TEST_CASE("layouts place blocks as described", "[batch]") {
  json d = minimal();
  d["kv_cache"] = {{"layout", "sequential"}, {"block_size", 4}};
  d["requests"] = json::array({{{"context_len", 5}, {"query_len", 1}}, {{"context_len", 9}, {"query_len", 1}}});
  Batch b = parse_batch(d);
  // stride = ceil(max seq / Kb) = ceil(10/4) = 3
  CHECK(b.kv_cache.block_table[0] == std::vector<int32_t>{0, 1});
  CHECK(b.kv_cache.block_table[1] == std::vector<int32_t>{3, 4, 5});
  d["kv_cache"]["layout"] = "shuffled";
  Batch s1 = parse_batch(d), s2 = parse_batch(d);
  CHECK(s1.kv_cache.block_table == s2.kv_cache.block_table);  // seeded, deterministic
  std::vector<int32_t> all;
  for (auto& r : s1.kv_cache.block_table) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<int32_t>{0, 1, 2, 3, 4});  // a permutation of the 5 blocks needed
}
