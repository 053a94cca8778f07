// vLLM CUDA stack (docs/stacks/vllm-cuda.md): FlashMLA's get_mla_metadata against the
// hand-worked cases of §C4, an exhaustive sweep over small batches with lengths around the
// 64-token block edges, the walk into mlactl's work list (checked by check_invariants),
// and the backend selection with vLLM's reasons and errors.
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/invariants.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "core/stacks/vllm_cuda/backends.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/schedule_arrays.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

using namespace mlactl;
using namespace mlactl::vllm_cuda;

namespace {

using Row5 = std::array<int32_t, 5>;
Row5 head5(const std::array<int32_t, 8>& r) { return {r[0], r[1], r[2], r[3], r[4]}; }

std::vector<int32_t> indptr_of(const std::vector<int64_t>& lens, int64_t per = -1) {
  std::vector<int32_t> p{0};
  for (int64_t l : lens) p.push_back(p.back() + (int32_t)(per < 0 ? l : per));
  return p;
}

// The work list of a schedule for q_len s_q, checked against per-request causal windows.
InvariantReport check_walk(const FlashMlaSchedule& s, const std::vector<int64_t>& lens, int s_q, int kernel_parts) {
  FlashMlaWorkInput in;
  in.kernel_seqlens = lens;
  in.kv_indptr = indptr_of(lens);
  in.qo_indptr = indptr_of(lens, s_q);
  in.s_q = s_q;
  in.heads = 16;
  in.kernel_parts = kernel_parts;
  const WorkList wl = flashmla_work_list(s, in);
  std::vector<RowExpectation> rows;
  for (size_t r = 0; r < lens.size(); ++r)
    for (int t = 0; t < s_q; ++t) {
      RowExpectation e;
      e.q_row = in.qo_indptr[r] + t;
      e.kv_begin = in.kv_indptr[r];
      e.kv_end = std::max<int64_t>(in.kv_indptr[r], in.kv_indptr[r + 1] - (s_q - 1 - t));
      rows.push_back(e);
    }
  return check_invariants(wl, wl.planned_view, rows);
}

Batch sm90_batch(const std::string& extra_json, const std::string& requests = R"([{"context_len": 100, "query_len": 1}])") {
  return parse_batch_text(R"({"schema": 1, "platform": {"arch": "sm90"}, "model": {"num_heads": 16}, "requests": )" + requests +
                              (extra_json.empty() ? "" : ", " + extra_json) + "}",
                          "test");
}

}  // namespace

TEST_CASE("flashmla num_sm_parts: 132 SMs over heads x q_len / 64", "[cuda][flashmla]") {
  CHECK(flashmla_num_sm_parts(132, 1, 16 * 1) == 132);
  CHECK(flashmla_num_sm_parts(132, 1, 128 * 1) == 66);
  CHECK(flashmla_num_sm_parts(132, 1, 128 * 2) == 33);
  CHECK(flashmla_num_sm_parts(132, 1, 16 * 4) == 132);
  CHECK(flashmla_num_sm_parts(132, 1, 128 * 4) == 16);
  CHECK(flashmla_num_sm_parts(4, 1, 128 * 8) == 1);  // max(.., 1)
}

TEST_CASE("flashmla get_mla_metadata: the hand-worked cases", "[cuda][flashmla]") {
  SECTION("[1000, 64, 5000, 0] over 66 parts") {
    const auto s = flashmla_get_mla_metadata({1000, 64, 5000, 0}, 66);
    CHECK(s.num_splits == std::vector<int32_t>{0, 8, 9, 49, 50});
    REQUIRE(s.tile_scheduler_metadata.size() == 66);
    CHECK(head5(s.tile_scheduler_metadata[0]) == Row5{0, 0, 0, 2, 0});
    CHECK(head5(s.tile_scheduler_metadata[1]) == Row5{0, 2, 0, 4, 1});
    CHECK(head5(s.tile_scheduler_metadata[7]) == Row5{0, 14, 0, 16, 7});  // payload 7: the last 2 blocks + overhead close request 0
    CHECK(head5(s.tile_scheduler_metadata[8]) == Row5{1, 0, 1, 1, 0});    // request 1 whole; 1 left, too little for request 2
    CHECK(head5(s.tile_scheduler_metadata[9]) == Row5{2, 0, 2, 2, 0});
    CHECK(head5(s.tile_scheduler_metadata[48]) == Row5{2, 78, 2, 79, 39});  // request 2's 40th split; 1 left, too little for request 3
    CHECK(head5(s.tile_scheduler_metadata[49]) == Row5{3, 0, 3, 0, 0});     // a zero-length request: end_block 0
    CHECK(s.tile_scheduler_metadata[50][0] == -1);                          // no work left: vLLM's fork writes -1
    CHECK(s.tile_scheduler_metadata[50][1] == 15);                          // begin_block read one past first_block_idx: last_block_idx[0]
  }
  SECTION("[4096] x 8 over 66 parts: 8 splits of 9 blocks each") {
    const auto s = flashmla_get_mla_metadata(std::vector<int64_t>(8, 4096), 66);
    CHECK(s.num_splits == std::vector<int32_t>{0, 8, 16, 24, 32, 40, 48, 56, 64});
    CHECK(head5(s.tile_scheduler_metadata[0]) == Row5{0, 0, 0, 9, 0});
    CHECK(head5(s.tile_scheduler_metadata[1]) == Row5{0, 9, 0, 18, 1});
  }
  SECTION("[100000] over 132 parts: 131 splits of 12 blocks") {
    const auto s = flashmla_get_mla_metadata({100000}, 132);
    CHECK(s.num_splits == std::vector<int32_t>{0, 131});
    CHECK(head5(s.tile_scheduler_metadata[0]) == Row5{0, 0, 0, 12, 0});
    CHECK(s.tile_scheduler_metadata[131][0] == -1);
  }
  SECTION("[1, 2, 3] over 132 parts") {
    const auto s = flashmla_get_mla_metadata({1, 2, 3}, 132);
    CHECK(s.num_splits == std::vector<int32_t>{0, 1, 2, 3});
    CHECK(head5(s.tile_scheduler_metadata[0]) == Row5{0, 0, 0, 1, 0});
    CHECK(head5(s.tile_scheduler_metadata[1]) == Row5{1, 0, 1, 1, 0});
    CHECK(head5(s.tile_scheduler_metadata[2]) == Row5{2, 0, 2, 1, 0});
    CHECK(s.tile_scheduler_metadata[3][0] == -1);
  }
  SECTION("upstream's marker: begin_req = b for a part with no work") {
    const auto s = flashmla_get_mla_metadata({1, 2, 3}, 132, NoWorkMarker::batch_size);
    CHECK(s.tile_scheduler_metadata[3][0] == 3);
  }
}

TEST_CASE("flashmla words per tile row", "[cuda][flashmla]") {
  const std::vector<int64_t> lens = {1000, 64, 5000, 0};
  const auto s = flashmla_get_mla_metadata(lens, 66);
  const auto w = flashmla_words(s, lens);
  REQUIRE(w.size() == 66);
  CHECK(w[1] == "SM part 1: request 0 blocks [2, 4), split 1 of 8");
  CHECK(w[8] == "SM part 8: request 1 blocks [0, 1) (whole, written directly)");
  CHECK(w[50] == "SM part 50: no work (begin_req -1)");
}

// Every batch of up to 4 requests over lengths around the block edges, and of up to 8
// requests over {0, 1, 64, 65}, under several part counts and q_lens: the schedule's
// own properties, and the kernel's walk covering every row's causal window exactly once.
TEST_CASE("flashmla exhaustive: small batches around the 64-token block edges", "[cuda][flashmla][exhaustive]") {
  int64_t batches = 0;
  std::vector<int> part_counts = {1, 2, 3, 7, 66, 132}, q_lens = {1, 2};
  auto check_one = [&](const std::vector<int64_t>& lens) {
    for (int parts : part_counts) {
      const auto s = flashmla_get_mla_metadata(lens, parts);
      const int64_t b = (int64_t)lens.size();
      // num_splits: a prefix sum of per-request split counts >= 1, the last one the total
      REQUIRE(s.num_splits.front() == 0);
      int64_t total_blocks = 0;
      for (int64_t r = 0; r < b; ++r) {
        REQUIRE(s.num_splits[r + 1] - s.num_splits[r] >= 1);
        total_blocks += std::max<int64_t>(lens[r] - 1, 0) / 64 + 1 + 5;
      }
      const int64_t payload = (total_blocks + parts - 1) / parts + 5;
      // rows: consecutive, begin_split counts up within a request, loads within the payload
      int64_t next_req = 0, next_block = 0, next_split = 0;
      for (int p = 0; p < parts; ++p) {
        const auto& row = s.tile_scheduler_metadata[p];
        if (next_req >= b) {
          REQUIRE(row[0] == -1);
          continue;
        }
        REQUIRE(row[0] == next_req);
        REQUIRE(row[1] == next_block);
        REQUIRE(row[4] == next_split);
        int64_t load = 0;
        for (int64_t r = row[0]; r <= row[2]; ++r) {
          const int64_t nb = std::max<int64_t>(lens[r] - 1, 0) / 64 + 1;
          const int64_t sb = r == row[0] ? row[1] : 0;
          const int64_t eb = r == row[2] ? (row[3] == 0 && lens[r] == 0 ? 1 : row[3]) : nb;
          load += (eb - sb) + 5;
        }
        REQUIRE(load <= payload);
        const int64_t nb_end = std::max<int64_t>(lens[row[2]] - 1, 0) / 64 + 1;
        const bool finished = lens[row[2]] == 0 ? row[3] == 0 : row[3] == nb_end;
        next_req = finished ? row[2] + 1 : row[2];
        next_block = finished ? 0 : row[3];
        next_split = finished ? 0 : (row[2] == row[0] ? row[4] + 1 : 1);
      }
      REQUIRE(next_req == b);
      for (int s_q : q_lens) {
        const auto rep = check_walk(s, lens, s_q, parts);
        INFO("parts " << parts << " s_q " << s_q << " lens[0] " << lens[0] << " b " << b
                      << (rep.violations.empty() ? std::string() : ": " + rep.violations.front().message));
        REQUIRE(rep.ok);
      }
    }
    ++batches;
  };
  std::function<void(std::vector<int64_t>&, size_t, const std::vector<int64_t>&)> rec = [&](std::vector<int64_t>& cur, size_t n,
                                                                                             const std::vector<int64_t>& vals) {
    if (cur.size() == n) {
      check_one(cur);
      return;
    }
    for (int64_t v : vals) {
      cur.push_back(v);
      rec(cur, n, vals);
      cur.pop_back();
    }
  };
  const std::vector<int64_t> edges = {0, 1, 2, 63, 64, 65, 127, 128, 129, 640};
  for (size_t n = 1; n <= 4; ++n) {
    std::vector<int64_t> cur;
    rec(cur, n, edges);
  }
  // 87,040 more batches: fewer part counts to keep the test in seconds
  part_counts = {7, 132};
  q_lens = {1};
  const std::vector<int64_t> few = {0, 1, 64, 65};
  for (size_t n = 5; n <= 8; ++n) {
    std::vector<int64_t> cur;
    rec(cur, n, few);
  }
  CHECK(batches == 10 + 100 + 1000 + 10000 + 1024 + 4096 + 16384 + 65536);
}

TEST_CASE("flashmla walk: requests with one split write directly, split ones index num_splits[r] + split", "[cuda][flashmla]") {
  const std::vector<int64_t> lens = {1000, 64, 5000, 0};
  const auto s = flashmla_get_mla_metadata(lens, 66);
  FlashMlaWorkInput in;
  in.kernel_seqlens = lens;
  in.kv_indptr = indptr_of(lens);
  in.qo_indptr = indptr_of(lens, 1);
  in.kernel_parts = 66;
  const WorkList wl = flashmla_work_list(s, in);
  REQUIRE(wl.num_workgroups == 66);
  // part 1: request 0 blocks [2, 4) = entries [128, 256), split 1 -> partial row 1
  const WorkInfo& w = wl.work_info[wl.work_indptr[1]];
  CHECK(w.as_array() == std::array<int32_t, 8>{0, 1, 0, 1, 128, 256, 1000 - 256, 0});
  // part 8: request 1, one split: written directly
  const WorkInfo& w1 = wl.work_info[wl.work_indptr[8]];
  CHECK(w1.as_array() == std::array<int32_t, 8>{1, -1, 1, 2, 1000, 1064, 0, 0});
  // parts with no work run nothing
  CHECK(wl.work_indptr[50] == wl.work_indptr[66]);
  // combine tiles: request 0 merges its 8 partials 0..7, request 1 none
  CHECK(wl.reduce_indptr[1] - wl.reduce_indptr[0] == 8);
  CHECK(wl.reduce_indptr[2] == wl.reduce_indptr[1]);
}

TEST_CASE("vllm-cuda routing: sm90 priorities and validate_configuration reasons", "[cuda][router]") {
  SECTION("bf16 cache: FLASH_ATTN_MLA, the Hopper default") {
    const Batch b = sm90_batch("");
    CHECK(b.platform.num_cu == 132);
    CHECK(b.kv_cache.block_size == 64);
    const RoutedBatch rb = route_batch(b);
    CHECK(rb.decision.route == Route::flash_attn_mla);
    CHECK(rb.decision.backend == "FLASH_ATTN_MLA");
    REQUIRE(rb.decision.chain.size() >= 5);
    CHECK(rb.decision.chain[0].name == "priority 1: FLASH_ATTN_MLA.validate_configuration");
    CHECK(rb.decision.chain[0].value == "[] (valid)");
    CHECK(rb.decision.chain[2].value == "['compute capability not supported']");  // FLASHINFER_MLA
    CHECK(rb.decision.chain[4].value == "['non-sparse not supported']");          // FLASHMLA_SPARSE
  }
  SECTION("fp8 cache: FLASH_ATTN_MLA has no fp8 KV, FLASHMLA wins") {
    const RoutedBatch rb = route_batch(sm90_batch(R"("kv_cache": {"dtype": "fp8"})"));
    CHECK(rb.decision.route == Route::flashmla);
    CHECK(rb.decision.chain[0].value == "['kv_cache_dtype not supported']");
  }
  SECTION("a forced backend that fails validation raises vLLM's error") {
    const RoutedBatch rb = route_batch(sm90_batch(R"("kv_cache": {"dtype": "bf16"}, "decode": {"attention_backend": "FLASHMLA"})"));
    CHECK(rb.refused());
    CHECK(rb.refusal() ==
          "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: ['kv_cache_dtype not supported']");
  }
  SECTION("Blackwell-only backends are refused on sm90") {
    for (const char* name : {"FLASHINFER_MLA", "CUTLASS_MLA"}) {
      const RoutedBatch rb = route_batch(sm90_batch(std::string(R"("decode": {"attention_backend": ")") + name + "\"}"));
      CHECK(rb.refusal() == std::string("ValueError: Selected backend AttentionBackendEnum.") + name +
                                " is not valid for this configuration. Reason: ['compute capability not supported']");
    }
  }
  SECTION("sparse batches route to FLASHMLA_SPARSE, and stop there") {
    const Batch b = sm90_batch(R"("sparse": {"topk": 64})");
    const RoutedBatch rb = route_batch(b);
    CHECK(rb.decision.route == Route::flashmla_sparse);
    try {
      plan_batch(b, rb, oracle_windows(b));
      FAIL("planned a sparse route");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitRefused);
      CHECK(std::string(e.what()).find("not modelled yet") != std::string::npos);
    }
  }
  SECTION("FLASHMLA needs kernel block size 64") {
    const RoutedBatch rb = route_batch(sm90_batch(R"("kv_cache": {"dtype": "fp8", "block_size": 16})"));
    CHECK(rb.refusal() == "ConfigMismatch: FLASHMLA runs with kernel block size 64 (get_supported_kernel_block_sizes; vLLM sets the cache "
                          "block size for it at startup), but kv_cache.block_size is 16");
  }
  SECTION("FLASHMLA decodes one q_len for every row") {
    const RoutedBatch rb = route_batch(sm90_batch(R"("kv_cache": {"dtype": "fp8"})",
                                                  R"([{"context_len": 100, "query_len": 1}, {"context_len": 10, "query_len": 2}])"));
    CHECK(rb.refused());
    CHECK(rb.decision.error_type == "NotModelled");
  }
  SECTION("attention_backend off sm90 is an input error naming the field") {
    try {
      parse_batch_text(R"({"schema": 1, "model": {"num_heads": 16}, "decode": {"attention_backend": "FLASHMLA"}, "requests": [{"context_len": 1, "query_len": 1}]})",
                       "t");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitInvalidInput);
      CHECK(std::string(e.what()) ==
            "/decode/attention_backend: names a vLLM CUDA backend; only vllm on sm90 reads it (this batch is vllm on gfx950)");
    }
  }
}

TEST_CASE("vllm-cuda padding contract: seq_len 0 / block -1, FlashMLA fp8 1 / 0", "[cuda][padding]") {
  const std::string reqs = R"([{"context_len": 100, "query_len": 1}, {"padding": true}])";
  const RoutedBatch bf = route_batch(sm90_batch("", reqs));
  CHECK(bf.metadata.seq_k == std::vector<int64_t>{101, 0});
  const Batch b8 = sm90_batch(R"("kv_cache": {"dtype": "fp8"})", reqs);
  const RoutedBatch f8 = route_batch(b8);
  CHECK(f8.decision.route == Route::flashmla);
  CHECK(f8.metadata.seq_k == std::vector<int64_t>{101, 1});
  CHECK(f8.metadata.paged_kv_indices.back() == 0);  // block 0, slot 0
  const RoutePlan p = plan_batch(b8, f8, oracle_windows(b8));
  CHECK(check_plan_invariants(p, f8.metadata.max_qo_len).ok);
}

TEST_CASE("flashmla combine: more than 160 splits of one request is noted", "[cuda][flashmla]") {
  // 200 SM parts over one long request: 199 splits, above the combine's 160-split bucket
  const auto s = flashmla_get_mla_metadata({200000}, 200);
  REQUIRE(s.num_splits.back() > kFlashMlaCombineMaxSplits);
  FlashMlaWorkInput in;
  in.kernel_seqlens = {200000};
  in.kv_indptr = {0, 200000};
  in.qo_indptr = {0, 1};
  in.kernel_parts = 200;
  const WorkList wl = flashmla_work_list(s, in);
  REQUIRE(wl.notes.size() == 1);
  CHECK(wl.notes[0] == "request 0 has " + std::to_string(s.num_splits.back()) +
                           " splits: FlashMLA's combine asserts above 160 (docs/stacks/vllm-cuda.md §C6)");
}
