// Captured FlashMLA arrays validated as a plan of this batch (docs/stacks/vllm-cuda.md §C12):
// every class of violation is exit 3 naming /captured/<field>/<index> and the request or SM
// part it hurts; fresh arrays (with a stale buffer tail) pass.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/captured.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "core/stacks/vllm_cuda/captured_flashmla.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/schedule_arrays.hpp"

using namespace mlactl;
using namespace mlactl::vllm_cuda;

namespace {

const std::vector<int64_t> kLens = {65, 129, 3000};

Batch batch() {
  return parse_batch_text(R"({"schema": 1, "platform": {"arch": "sm90"}, "model": {"num_heads": 16},
      "kv_cache": {"dtype": "auto"}, "decode": {"attention_backend": "FLASHMLA", "max_num_seqs": 7},
      "requests": [{"seq_len": 65, "query_len": 1}, {"seq_len": 129, "query_len": 1}, {"seq_len": 3000, "query_len": 1}]})",
                          "test");
}

struct Arrays {
  StackArray tsm{"tile_scheduler_metadata", 8, false, {}};
  StackArray ns{"num_splits", 0, false, {}};
  StackArray sl{"seq_lens", 0, false, {65, 129, 3000}};
};

// the fresh schedule (132 parts), num_splits with the persistent buffer's stale tail
Arrays fresh() {
  Arrays a;
  const auto s = flashmla_get_mla_metadata(kLens, 132);
  for (const auto& row : s.tile_scheduler_metadata)
    for (int32_t x : row) a.tsm.values.push_back(x);
  for (int32_t x : s.num_splits) a.ns.values.push_back(x);
  for (int k = 0; k < 4; ++k) a.ns.values.push_back(77);
  return a;
}

std::string error_of(const Arrays& a, bool tsm = true, bool ns = true, bool sl = true) {
  try {
    validate_flashmla_captured(batch(), {a.sl.values.begin(), a.sl.values.begin() + 3}, 132, FlashMlaEncoding::blocks, tsm ? &a.tsm : nullptr,
                               ns ? &a.ns : nullptr, sl ? &a.sl : nullptr);
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitInvalidInput);
    return e.what();
  }
  return "";
}

void set_row(Arrays& a, int row, int col, int64_t v) { a.tsm.values[(size_t)(row * 8 + col)] = v; }

}  // namespace

TEST_CASE("flashmla captured: fresh arrays with a stale buffer tail are a plan of the batch", "[cuda][captured]") {
  CHECK(error_of(fresh()).empty());
}

TEST_CASE("flashmla captured: num_splits violations", "[cuda][captured]") {
  SECTION("too short") {
    Arrays a = fresh();
    a.ns.values.resize(3);
    CHECK_THAT(error_of(a), Catch::Contains("/captured/num_splits: has 3 entries, fewer than the batch's 4 (b + 1)"));
  }
  SECTION("longer than vLLM's max_num_seqs + 1 buffer") {
    Arrays a = fresh();
    a.ns.values.resize(9, 77);
    CHECK_THAT(error_of(a), Catch::Contains("/captured/num_splits: has 9 entries, more than vLLM's num_splits buffer of decode.max_num_seqs + 1 = 8"));
  }
  SECTION("not starting at 0") {
    Arrays a = fresh();
    a.ns.values[0] = 1;
    CHECK_THAT(error_of(a), Catch::Contains("/captured/num_splits/0: is 1"));
  }
  SECTION("decreasing") {
    Arrays a = fresh();
    a.ns.values[2] = 1;  // below num_splits[1] = 2
    CHECK_THAT(error_of(a, false), Catch::Contains("/captured/num_splits/2: is 1, below num_splits[1] = 2: request 1 would have -1 splits"));
  }
  SECTION("a real request with 0 splits") {
    Arrays a = fresh();
    a.ns.values[2] = a.ns.values[1];
    CHECK_THAT(error_of(a, false), Catch::Contains("/captured/num_splits/2: gives request 1 0 splits"));
  }
  SECTION("more splits than accumulators") {
    Arrays a = fresh();
    a.ns.values[3] = 3 + 132 + 1;
    CHECK_THAT(error_of(a, false), Catch::Contains("/captured/num_splits/3: is 136 splits in all, more than the 135 accumulators"));
  }
}

TEST_CASE("flashmla captured: tile_scheduler_metadata violations", "[cuda][captured]") {
  SECTION("begin_req outside the batch") {
    Arrays a = fresh();
    set_row(a, 3, 0, 5);
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata/3/0: begin_req 5 of SM part 3 is neither a request"));
  }
  SECTION("end_req before begin_req") {
    Arrays a = fresh();
    set_row(a, 3, 2, 0);  // part 3 begins at request 1
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata/3/2: end_req 0 of SM part 3 is not a request in [1, 3)"));
  }
  SECTION("begin_block past the request's blocks") {
    Arrays a = fresh();
    set_row(a, 2, 1, 3);  // request 1 has 3 blocks of 64 (129 tokens)
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata/2/1: begin_block 3 of SM part 2 is outside request 1's 3 blocks"));
  }
  SECTION("end_block past the request's blocks") {
    Arrays a = fresh();
    set_row(a, 0, 3, 3);  // request 0 has 2 blocks
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata/0/3: end_block 3 of SM part 0 is outside request 0's blocks [0, 2]"));
  }
  SECTION("begin_split beyond the request's splits") {
    Arrays a = fresh();
    set_row(a, 1, 4, 2);  // request 0 has 2 splits
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata/1/4: begin_split 2 of SM part 1 is not one of request 0's 2 splits"));
  }
  SECTION("more rows than the (num_sms, 8) buffer") {
    Arrays a = fresh();
    a.tsm.values.resize(a.tsm.values.size() + 8, 0);
    CHECK_THAT(error_of(a), Catch::Contains("/captured/tile_scheduler_metadata: has 133 rows, more than vLLM's (num_sms = 132, 8) buffer"));
  }
  SECTION("no-work markers pass: -1 and upstream's b") {
    Arrays a = fresh();
    const int64_t rows = (int64_t)a.tsm.values.size() / 8;
    set_row(a, (int)rows - 1, 0, 3);
    CHECK(error_of(a).empty());
  }
}

TEST_CASE("flashmla captured: seq_lens violations", "[cuda][captured]") {
  SECTION("negative") {
    Arrays a = fresh();
    a.sl.values[1] = -1;
    CHECK_THAT(error_of(a, false, false), Catch::Contains("/captured/seq_lens/1: seq_len -1 of request 1 is negative"));
  }
  SECTION("beyond the request's block table") {
    Arrays a = fresh();
    a.sl.values[0] = 200;  // 4 blocks of 64; its table has 2
    CHECK_THAT(error_of(a, false, false), Catch::Contains("/captured/seq_lens/0: seq_len 200 of request 0 needs 4 blocks of 64, but its block table has 2"));
  }
}

TEST_CASE("flashmla captured: fp8 rows are token offsets", "[cuda][captured]") {
  const Batch b = parse_batch_text(R"({"schema": 1, "platform": {"arch": "sm90"}, "model": {"num_heads": 16},
      "kv_cache": {"dtype": "fp8"}, "requests": [{"seq_len": 65, "query_len": 1}, {"seq_len": 129, "query_len": 1}, {"seq_len": 3000, "query_len": 1}]})",
                                   "test");
  const auto s = flashmla_get_mla_metadata(kLens, 132, NoWorkMarker::minus_one, FlashMlaEncoding::fp8_tokens);
  StackArray tsm{"tile_scheduler_metadata", 8, false, {}};
  for (const auto& row : s.tile_scheduler_metadata)
    for (int32_t x : row) tsm.values.push_back(x);
  // the fp8 metadata: part 0 ends request 0 mid-way at token 64, part 1 finishes it at its seq_len
  CHECK(s.tile_scheduler_metadata[0][3] == 64);
  CHECK(s.tile_scheduler_metadata[1][1] == 64);
  CHECK(s.tile_scheduler_metadata[1][3] == 65);
  CHECK(s.tile_scheduler_metadata.back()[0] == 3);  // no work: begin_req = b, never -1
  validate_flashmla_captured(b, kLens, 132, FlashMlaEncoding::fp8_tokens, &tsm, nullptr, nullptr);
  tsm.values[1 * 8 + 1] = 65;  // not a block start
  try {
    validate_flashmla_captured(b, kLens, 132, FlashMlaEncoding::fp8_tokens, &tsm, nullptr, nullptr);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("/captured/tile_scheduler_metadata/1/1: begin_seqlen 65 of SM part 1 is outside request 0's 65 tokens"));
  }
}

TEST_CASE("flashmla captured: plan_captured validates before anything runs", "[cuda][captured]") {
  Batch b = batch();
  Arrays a = fresh();
  a.ns.values[2] = 1;
  nlohmann::json c;
  c["num_splits"] = a.ns.values;
  b.captured = c;
  const auto rows = oracle_windows(b);
  const RoutedBatch rb = route_batch(b);
  const CapturedMetadata cap = parse_captured(b, b.captured, (int64_t)rows.size());
  try {
    (void)plan_captured(b, rb, rows, cap);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitInvalidInput);
    CHECK_THAT(std::string(e.what()), Catch::Contains("/captured/num_splits/2"));
  }
}
