// What FlashMLA's split kernel and combine index from tile_scheduler_metadata, num_splits
// and seq_lens (vllm-project/FlashMLA csrc/sm90/decode/dense/splitkv_mla.cu@46d64a8: the
// part's row, begin/end request and block, split index num_splits[r] + n_split; the
// combine's num_splits[r + 1] - num_splits[r]; accumulators of b + num_sm_parts entries,
// deepseek-ai/FlashMLA csrc/api/dense_decode.h@1aeef780), checked against the batch.
#include "core/stacks/vllm_cuda/captured_flashmla.hpp"

#include <algorithm>
#include <string>

#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/types.hpp"

namespace mlactl::vllm_cuda {

namespace {

std::string req_name(const Batch& b, int64_t r) {
  return "request " + std::to_string(r) + (b.requests[(size_t)r].padding ? " (a padding slot)" : "");
}

}  // namespace

void validate_flashmla_captured(const Batch& b, const std::vector<int64_t>& kernel_seqlens, int parts, FlashMlaEncoding encoding,
                                const StackArray* tsm, const StackArray* ns, const StackArray* sl) {
  const bool fp8 = encoding == FlashMlaEncoding::fp8_tokens;
  const int64_t R = (int64_t)b.requests.size();
  const int64_t Kb = b.kv_cache.block_size;
  // vLLM's persistent buffers (flashmla.py): num_splits max_num_seqs + 1, seq_lens
  // max_num_seqs, tile_scheduler_metadata (num_sms, 8); a dump may carry their stale tails
  const int64_t max_seqs = b.decode.max_num_seqs;
  if (sl) {
    const std::string p = "/captured/seq_lens";
    if ((int64_t)sl->values.size() > std::max(max_seqs, R))
      throw invalid_input(p, "has " + std::to_string(sl->values.size()) + " entries, more than vLLM's seq_lens buffer of decode.max_num_seqs = " +
                                 std::to_string(max_seqs) + " (set decode.max_num_seqs to the server's)");
    for (int64_t r = 0; r < std::min<int64_t>(R, (int64_t)sl->values.size()); ++r) {
      const int64_t s = sl->values[(size_t)r];
      if (s < 0) throw invalid_input(p + "/" + std::to_string(r), "seq_len " + std::to_string(s) + " of " + req_name(b, r) + " is negative");
      if (b.requests[(size_t)r].padding) continue;  // its table row is the pad value's
      const int64_t have = (int64_t)b.kv_cache.block_table[(size_t)r].size() * Kb;
      if (s > have)
        throw invalid_input(p + "/" + std::to_string(r), "seq_len " + std::to_string(s) + " of " + req_name(b, r) + " needs " +
                                                             std::to_string((s + Kb - 1) / Kb) + " blocks of " + std::to_string(Kb) +
                                                             ", but its block table has " + std::to_string(b.kv_cache.block_table[(size_t)r].size()));
    }
  }
  std::vector<int64_t> splits;  // per request, from the captured num_splits
  if (ns) {
    const std::string p = "/captured/num_splits";
    const auto& v = ns->values;
    if ((int64_t)v.size() < R + 1)
      throw invalid_input(p, "has " + std::to_string(v.size()) + " entries, fewer than the batch's " + std::to_string(R + 1) + " (b + 1)");
    if ((int64_t)v.size() > std::max(max_seqs, R) + 1)
      throw invalid_input(p, "has " + std::to_string(v.size()) + " entries, more than vLLM's num_splits buffer of decode.max_num_seqs + 1 = " +
                                 std::to_string(max_seqs + 1) + " (set decode.max_num_seqs to the server's)");
    if (v[0] != 0) throw invalid_input(p + "/0", "is " + std::to_string(v[0]) + ": the prefix sum of split counts starts at 0");
    for (int64_t r = 0; r < R; ++r) {
      const int64_t c = v[(size_t)r + 1] - v[(size_t)r];
      if (c < 0)
        throw invalid_input(p + "/" + std::to_string(r + 1), "is " + std::to_string(v[(size_t)r + 1]) + ", below num_splits[" + std::to_string(r) + "] = " +
                                                                 std::to_string(v[(size_t)r]) + ": " + req_name(b, r) + " would have " + std::to_string(c) +
                                                                 " splits (num_splits is a prefix sum and never decreases)");
      if (c == 0 && !b.requests[(size_t)r].padding)
        throw invalid_input(p + "/" + std::to_string(r + 1), "gives " + req_name(b, r) + " 0 splits: no part writes its rows and the combine skips it");
      splits.push_back(c);
    }
    // split partials go to accumulator num_splits[r] + split, of b + num_sm_parts entries
    if (v[(size_t)R] > R + parts)
      throw invalid_input(p + "/" + std::to_string(R), "is " + std::to_string(v[(size_t)R]) + " splits in all, more than the " + std::to_string(R + parts) +
                                                           " accumulators (b + num_sm_parts) the split kernel writes");
  }
  if (tsm) {
    const std::string p = "/captured/tile_scheduler_metadata";
    const int64_t rows = (int64_t)tsm->values.size() / 8;
    if (rows > std::max<int64_t>(parts, b.platform.num_cu))
      throw invalid_input(p, "has " + std::to_string(rows) + " rows, more than vLLM's (num_sms = " + std::to_string(b.platform.num_cu) + ", 8) buffer");
    auto at = [&](int64_t i, int k) { return tsm->values[(size_t)(i * 8 + k)]; };
    // blocks as the metadata counts them (bf16: max(s - 1, 0) / 64 + 1; fp8 rows are token
    // offsets within [0, s])
    auto meta_blocks = [&](int64_t r) { return std::max<int64_t>(kernel_seqlens[(size_t)r] - 1, 0) / kFlashMlaBlockN + 1; };
    const char* unit = fp8 ? "token" : "block";
    auto limit = [&](int64_t r) { return fp8 ? kernel_seqlens[(size_t)r] : meta_blocks(r); };
    auto what = [&](int64_t r) {
      return fp8 ? std::to_string(kernel_seqlens[(size_t)r]) + " tokens" : std::to_string(meta_blocks(r)) + " blocks of 64 (seq_len " +
                                                                               std::to_string(kernel_seqlens[(size_t)r]) + ")";
    };
    // the kernel runs the first num_sm_parts rows; later ones are the buffer's stale tail
    for (int64_t i = 0; i < std::min<int64_t>(rows, parts); ++i) {
      const std::string rp = p + "/" + std::to_string(i);
      const std::string part = "SM part " + std::to_string(i);
      const int64_t br = at(i, 0), bb = at(i, 1), er = at(i, 2), eb = at(i, 3), bs = at(i, 4);
      if (br == -1 || br == R) continue;  // no work: the fork's -1, upstream's b (both return)
      if (br < 0 || br > R)
        throw invalid_input(rp + "/0", "begin_req " + std::to_string(br) + " of " + part + " is neither a request of the batch's " + std::to_string(R) +
                                           " nor a no-work marker (-1, or b upstream)");
      if (er < br || er >= R)
        throw invalid_input(rp + "/2", "end_req " + std::to_string(er) + " of " + part + " is not a request in [" + std::to_string(br) + ", " + std::to_string(R) +
                                           ") (it begins at request " + std::to_string(br) + ")");
      const bool bb_ok = fp8 ? bb >= 0 && bb % kFlashMlaBlockN == 0 && (bb < limit(br) || (bb == 0 && limit(br) == 0)) : bb >= 0 && bb < limit(br);
      if (!bb_ok)
        throw invalid_input(rp + "/1", std::string("begin_") + (fp8 ? "seqlen " : "block ") + std::to_string(bb) + " of " + part + " is outside " +
                                           req_name(b, br) + "'s " + what(br) + (fp8 ? " (a multiple of 64 below the seq_len)" : ""));
      if (eb < 0 || eb > limit(er) || (er == br && eb < bb))
        throw invalid_input(rp + "/3", std::string("end_") + (fp8 ? "seqlen " : "block ") + std::to_string(eb) + " of " + part + " is outside " +
                                           req_name(b, er) + "'s " + unit + "s [" + std::to_string(er == br ? bb : 0) + ", " + std::to_string(limit(er)) + "]");
      if (bs < 0) throw invalid_input(rp + "/4", "begin_split " + std::to_string(bs) + " of " + part + " is negative");
      if (!splits.empty() && bs >= std::max<int64_t>(1, splits[(size_t)br]))
        throw invalid_input(rp + "/4", "begin_split " + std::to_string(bs) + " of " + part + " is not one of " + req_name(b, br) + "'s " +
                                           std::to_string(splits[(size_t)br]) + " splits (num_splits): its partial would land in another request's accumulator");
    }
  }
}

}  // namespace mlactl::vllm_cuda
