// Test helpers for the numerics tests: small Batch structs built directly (block
// table filled here, as the parser would), and hand-built work lists.
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/batch.hpp"
#include "core/inputs.hpp"
#include "core/rng.hpp"
#include "core/worklist.hpp"
#include "tests/common/work_items.hpp"

namespace mlactl {
namespace testing {

struct BatchShape {
  std::vector<std::pair<int64_t, int64_t>> context_query;  // per request; query 0 with padding
  int num_padding = 0;      // padding requests appended at the end
  int heads = 16;
  bool causal = true;
  int block_size = 1;
  int spare_blocks = 0;     // unused blocks in the cache (NaN slots)
  bool shuffled = true;     // block ids a seeded permutation, else sequential
  DType model_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  DType q_dtype = DType::bf16;
  Arch arch = Arch::gfx950;
  double kv_scale = 1.0;
  uint64_t seed = 1;
};

inline Batch make_batch(const BatchShape& s) {
  Batch b;
  b.name = "test";
  b.platform.arch = s.arch;
  b.model.num_heads = s.heads;
  b.model.dtype = s.model_dtype;
  b.model.softmax_scale = 1.0 / std::sqrt(192.0);
  b.kv_cache.dtype = s.kv_dtype;
  b.kv_cache.dtype_auto = false;
  b.kv_cache.scale = s.kv_scale;
  b.kv_cache.block_size = s.block_size;
  b.kv_cache.layout = s.shuffled ? KvLayout::shuffled : KvLayout::sequential;
  b.decode.causal = s.causal;
  b.decode.q_dtype = s.q_dtype;
  b.decode.q_dtype_is_model = s.q_dtype != DType::fp8;
  b.seed = s.seed;
  int64_t max_q = 1, sum_q = 0, total_blocks = 0;
  for (const auto& cq : s.context_query) {
    Request r;
    r.context_len = cq.first;
    r.query_len = cq.second;
    b.requests.push_back(r);
    max_q = std::max(max_q, cq.second);
    sum_q += cq.second;
    total_blocks += (r.seq_len() + s.block_size - 1) / s.block_size;
  }
  for (int i = 0; i < s.num_padding; ++i) {
    Request r;
    r.padding = true;
    b.requests.push_back(r);
  }
  b.decode.mtp_qlen = max_q;
  b.decode.num_decode_tokens = sum_q + max_q * s.num_padding;
  b.decode.max_num_seqs = (int64_t)b.requests.size();
  b.kv_cache.num_blocks = total_blocks + s.spare_blocks;
  std::vector<int32_t> ids((size_t)b.kv_cache.num_blocks);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = (int32_t)i;
  if (s.shuffled) {
    Rng rng(s.seed, kStreamPlacement);
    for (int64_t i = (int64_t)ids.size() - 1; i > 0; --i) std::swap(ids[i], ids[rng.below((uint64_t)i + 1)]);
  }
  size_t next = 0;
  for (const Request& r : b.requests) {
    std::vector<int32_t> row;
    for (int64_t j = 0; j < (r.seq_len() + s.block_size - 1) / s.block_size; ++j) row.push_back(ids[next++]);
    b.kv_cache.block_table.push_back(row);
  }
  return b;
}

// The per-request token-slot index list a per_request kernel view reads:
// request r's KV positions [0, seq_len) at [kv_indptr[r], kv_indptr[r+1]).
struct SlotList {
  std::vector<int32_t> indices;
  std::vector<int64_t> indptr;
  std::vector<int64_t> row_begin;  // first q row of each request
};

inline SlotList slot_list(const Batch& b, int64_t pad_rows_per_padding = 0) {
  SlotList s;
  s.indptr.push_back(0);
  int64_t row = 0;
  for (size_t r = 0; r < b.requests.size(); ++r) {
    const Request& req = b.requests[r];
    for (int64_t j = 0; j < req.seq_len(); ++j) s.indices.push_back((int32_t)kv_slot_of(b, (int)r, j));
    s.indptr.push_back((int64_t)s.indices.size());
    s.row_begin.push_back(row);
    row += req.padding ? pad_rows_per_padding : req.query_len;
  }
  return s;
}


}  // namespace testing
}  // namespace mlactl
