#include "core/stacks/vllm_cuda/schedule_arrays.hpp"

#include "core/planners/planner_util.hpp"
#include "core/types.hpp"

namespace mlactl::vllm_cuda {

NoWorkMarker schedule_marker(const Batch& b) {
  // vLLM runs its fork (vllm-project/FlashMLA PR #3): -1; flashmla-no-work-marker models the
  // upstream kernel's begin_req = b (docs/stacks/vllm-cuda.md §C11)
  return b.has_defect("flashmla-no-work-marker") ? NoWorkMarker::batch_size : NoWorkMarker::minus_one;
}

FlashMlaEncoding flashmla_encoding(const Batch& b) {
  // an fp8 cache: get_mla_metadata_dense_fp8, the fork's fp8 metadata (docs/stacks/vllm-cuda.md §C7)
  return b.kv_cache.dtype == DType::fp8 ? FlashMlaEncoding::fp8_tokens : FlashMlaEncoding::blocks;
}

int64_t metadata_batch_size(const Batch& b) {
  const int64_t R = (int64_t)b.requests.size();
  if (!b.has_defect("flashmla-no-work-marker") || b.num_padding() == 0) return R;
  int64_t n = 0;
  while (n < R && !b.requests[n].padding) ++n;
  for (int64_t r = n; r < R; ++r)
    if (!b.requests[r].padding)
      throw Error(kExitRefused, "/requests/" + std::to_string(r),
                  "flashmla-no-work-marker models vLLM's cudagraph padding, which follows the batch's requests: request " + std::to_string(r) +
                      " comes after padding slot " + std::to_string(n));
  return n;
}

FlashMlaSchedule flashmla_vllm_schedule(const Batch& b, const std::vector<int64_t>& seqlens, int parts) {
  // flashmla-no-work-marker: the metadata of the n requests before the cudagraph padding
  // (built before padding, as before vLLM PR #28579), num_splits padded the way the builder
  // fills its persistent buffer: cg_buf_num_splits[n:].fill_(num_splits[-1])
  const int64_t n = metadata_batch_size(b);
  const std::vector<int64_t> lens(seqlens.begin(), seqlens.begin() + (ptrdiff_t)std::min<int64_t>(n, (int64_t)seqlens.size()));
  FlashMlaSchedule s = flashmla_get_mla_metadata(lens, parts, schedule_marker(b), flashmla_encoding(b));
  s.num_splits.resize(seqlens.size() + 1, s.num_splits.back());
  return s;
}

std::vector<StackArray> flashmla_arrays(const FlashMlaSchedule& s) {
  StackArray parts{"num_sm_parts", 0, true, {s.num_sm_parts}};
  StackArray tsm{"tile_scheduler_metadata", 8, false, {}};
  for (const auto& row : s.tile_scheduler_metadata)
    for (int32_t x : row) tsm.values.push_back(x);
  StackArray ns{"num_splits", 0, false, {s.num_splits.begin(), s.num_splits.end()}};
  return {parts, tsm, ns};
}

std::vector<std::string> flashmla_words(const FlashMlaSchedule& s, const std::vector<int64_t>& seqlens_k) {
  std::vector<std::string> out;
  const int64_t b = (int64_t)seqlens_k.size();
  auto range = [](int64_t a, int64_t e) { return "[" + std::to_string(a) + ", " + std::to_string(e) + ")"; };
  for (size_t p = 0; p < s.tile_scheduler_metadata.size(); ++p) {
    const auto& row = s.tile_scheduler_metadata[p];
    std::string line = "SM part " + std::to_string(p) + ": ";
    if (row[0] < 0 || row[0] >= b) {
      out.push_back(line + "no work (begin_req " + std::to_string(row[0]) + ")");
      continue;
    }
    for (int64_t r = row[0]; r <= row[2] && r < b; ++r) {
      const int64_t nb = planner_util::ceil_div(seqlens_k[r], kFlashMlaBlockN);
      const int64_t sb = r == row[0] ? flashmla_row_begin_block(s, row[1]) : 0, eb = r == row[2] ? flashmla_row_end_block(s, row[3]) : nb;
      const int64_t split = r == row[0] ? row[4] : 0;
      const int64_t splits = (int64_t)s.num_splits[r + 1] - s.num_splits[r];
      if (r != row[0]) line += "; ";
      line += "request " + std::to_string(r) + " blocks " + range(sb, eb);
      line += splits <= 1 ? " (whole, written directly)" : ", split " + std::to_string(split) + " of " + std::to_string(splits);
    }
    out.push_back(line);
  }
  return out;
}

Fa3SchedulerInput fa3_scheduler_input(const Batch& b, const DecodeMetadata& md) {
  Fa3SchedulerInput in;
  in.seqused_k = md.seq_k;
  in.q_lens = md.qo_len;
  in.num_heads = b.model.num_heads;
  in.num_sm = b.platform.num_cu;
  in.max_num_splits = (int)b.decode.max_num_splits;
  return in;
}

std::vector<StackArray> fa3_arrays(const Fa3Schedule& s) {
  StackArray ns{"num_splits", 0, true, {s.num_splits_static}};
  StackArray dyn{"num_splits_dynamic", 0, false, {s.splits.begin(), s.splits.end()}};
  StackArray md{"scheduler_metadata", 0, false, {s.scheduler_metadata.begin(), s.scheduler_metadata.end()}};
  return {ns, dyn, md};
}

}  // namespace mlactl::vllm_cuda
