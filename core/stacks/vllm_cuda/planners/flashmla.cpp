// FlashMLA get_mla_metadata (vllm-project/FlashMLA csrc/smxx/get_mla_metadata.cu@9140b54,
// docs/stacks/vllm-cuda.md §C4) and its kernel's walk over the schedule (§C6).
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"

#include <algorithm>
#include <string>

#include "core/planners/planner_util.hpp"
#include "core/types.hpp"

namespace mlactl::vllm_cuda {

int flashmla_num_sm_parts(int sm_count, int h_kv, int64_t num_q_tokens_per_head_k) {
  const int64_t m_tiles = std::max<int64_t>(1, planner_util::ceil_div(num_q_tokens_per_head_k, kFlashMlaBlockM));
  return (int)std::max<int64_t>(sm_count / std::max(1, h_kv) / m_tiles, 1);
}

int64_t flashmla_row_begin_block(const FlashMlaSchedule& s, int64_t value) {
  return s.encoding == FlashMlaEncoding::fp8_tokens ? value / kFlashMlaBlockN : value;
}
int64_t flashmla_row_end_block(const FlashMlaSchedule& s, int64_t value) {
  return s.encoding == FlashMlaEncoding::fp8_tokens ? planner_util::ceil_div(value, kFlashMlaBlockN) : value;
}

FlashMlaSchedule flashmla_get_mla_metadata(const std::vector<int64_t>& seqlens_k, int num_sm_parts, NoWorkMarker marker,
                                           FlashMlaEncoding encoding) {
  const bool fp8 = encoding == FlashMlaEncoding::fp8_tokens;
  if (fp8) marker = NoWorkMarker::batch_size;  // the fp8 metadata writes now_idx
  if (num_sm_parts < 1) throw invalid_input("", "flashmla planner: num_sm_parts must be >= 1");
  const int64_t b = (int64_t)seqlens_k.size();
  FlashMlaSchedule out;
  out.num_sm_parts = num_sm_parts;
  out.encoding = encoding;
  out.num_splits.assign((size_t)b + 1, 0);
  if (b == 0) {
    // the kernel is never called for an empty decode batch (vLLM skips the decode path)
    out.tile_scheduler_metadata.assign((size_t)num_sm_parts, {marker == NoWorkMarker::minus_one ? -1 : 0, 0, -1, 0, 0, 0, 0, 0});
    return out;
  }
  // per request: blocks [first, last] with first = 0 and last = max(s-1, 0) / 64, so a
  // zero-length request still counts one block (the kernel corrects it when writing rows)
  std::vector<int64_t> num_blocks(b), last_block(b);
  int64_t total = 0;
  for (int64_t i = 0; i < b; ++i) {
    if (seqlens_k[i] < 0) throw invalid_input("", "flashmla planner: seqlens_k must be >= 0");
    last_block[i] = std::max<int64_t>(seqlens_k[i] - 1, 0) / kFlashMlaBlockN;
    num_blocks[i] = fp8 ? planner_util::ceil_div(seqlens_k[i], kFlashMlaBlockN) : last_block[i] + 1;
    total += num_blocks[i] + kFlashMlaFixedOverhead;
  }
  const int64_t payload = planner_util::ceil_div(total, num_sm_parts) + kFlashMlaFixedOverhead;
  int64_t now_idx = 0, now_block = 0, now_split = 0, cum = 0;
  out.tile_scheduler_metadata.resize((size_t)num_sm_parts);
  for (int part = 0; part < num_sm_parts; ++part) {
    auto& row = out.tile_scheduler_metadata[part];
    row = {0, 0, 0, 0, 0, 0, 0, 0};
    const bool no_work = now_idx >= b;
    row[0] = (int32_t)(no_work && marker == NoWorkMarker::minus_one ? -1 : now_idx);
    // begin_block = now_block + first_block_idx_shared[now_idx]; for a part with no work
    // that index is one past the shared array, which in the kernel's layout is
    // last_block_idx_shared[0] (docs/stacks/vllm-cuda.md §C4 "no-work rows")
    row[1] = (int32_t)(fp8 ? now_block * kFlashMlaBlockN : now_block + (no_work ? last_block[0] : 0));
    row[4] = (int32_t)now_split;
    int64_t remain = payload;
    while (now_idx < b) {
      const int64_t left = num_blocks[now_idx] - now_block;
      if (remain >= left + kFlashMlaFixedOverhead) {
        cum += now_split + 1;
        out.num_splits[now_idx + 1] = (int32_t)cum;
        remain -= left + kFlashMlaFixedOverhead;
        ++now_idx;
        now_block = 0;
        now_split = 0;
      } else {
        if (remain - kFlashMlaFixedOverhead > 0) {
          now_block += remain - kFlashMlaFixedOverhead;
          ++now_split;
        }
        break;
      }
    }
    row[2] = (int32_t)(now_block > 0 ? now_idx : now_idx - 1);
    if (fp8) row[3] = (int32_t)(now_block > 0 ? now_block * kFlashMlaBlockN : seqlens_k[now_idx - 1]);
    else row[3] = (int32_t)(now_block > 0 ? now_block : (seqlens_k[now_idx - 1] == 0 ? 0 : last_block[now_idx - 1] + 1));
  }
  // FLASH_DEVICE_ASSERT(now_idx == batch_size && now_block == 0 && now_n_split_idx == 0)
  if (now_idx != b || now_block != 0 || now_split != 0)
    throw Error(kExitDevice, "", "flashmla planner: the schedule left work unassigned (FlashMLA's device assert)");
  return out;
}

WorkList flashmla_work_list(const FlashMlaSchedule& s, const FlashMlaWorkInput& in) {
  const int64_t b = (int64_t)in.kernel_seqlens.size();
  if ((int64_t)in.kv_indptr.size() != b + 1 || (int64_t)in.qo_indptr.size() != b + 1 || (int64_t)s.num_splits.size() != b + 1)
    throw invalid_input("", "flashmla work list: kv_indptr, qo_indptr and num_splits need b + 1 entries");
  WorkList wl;
  wl.planner = "flashmla_get_mla_metadata";
  KernelView& v = wl.planned_view;
  v.heads = in.heads;
  v.q_layout = QLayout::per_request;
  v.q_tokens_per_tile = in.s_q;
  v.causal = true;  // vLLM always calls the decode causal (moot at s_q 1)
  wl.num_q_rows = in.qo_indptr.back();
  const int parts = std::max(0, std::min<int>(in.kernel_parts, (int)s.tile_scheduler_metadata.size()));
  wl.num_workgroups = parts;
  wl.work_indptr.assign((size_t)parts + 1, 0);
  for (int p = 0; p < parts; ++p) {
    const auto& row = s.tile_scheduler_metadata[p];
    const int64_t br = row[0], bb = row[1], er = row[2], eb = row[3], bs = row[4];
    // the fork's early return: begin_req >= b || begin_req < 0
    if (br >= 0 && br < b) {
      for (int64_t r = br; r <= er && r < b; ++r) {
        const int64_t sk = in.kernel_seqlens[r];
        const int64_t start_block = r == br ? flashmla_row_begin_block(s, bb) : 0;
        const int64_t end_block = r == er ? flashmla_row_end_block(s, eb) : planner_util::ceil_div(sk, kFlashMlaBlockN);
        const int64_t n_split = r == br ? bs : 0;
        const int64_t splits = (int64_t)s.num_splits[r + 1] - s.num_splits[r];
        const int32_t q0 = in.qo_indptr[r], q1 = in.qo_indptr[r + 1];
        if (q1 <= q0) continue;  // a request with no q rows has nothing to write
        WorkInfo w;
        w.batch_idx = (int32_t)r;
        // the fork skips requests with <= 1 split in the combine; they are written directly
        w.partial_qo_loc = splits <= 1 ? -1 : (int32_t)((s.num_splits[r] + n_split) * (q1 - q0));
        w.qo_start = q0;
        w.qo_end = q1;
        const int64_t kb = std::min(start_block * kFlashMlaBlockN, sk), ke = std::max(kb, std::min(end_block * kFlashMlaBlockN, sk));
        w.kv_start = (int32_t)(in.kv_indptr[r] + kb);
        w.kv_end = (int32_t)(in.kv_indptr[r] + ke);
        w.kv_offset = (int32_t)(sk - ke);
        wl.work_info.push_back(w);
      }
    }
    wl.work_indptr[p + 1] = (int32_t)wl.work_info.size();
  }
  // the combine: one tile per request, its partials in split order
  int64_t partial_rows = 0;
  for (int64_t r = 0; r < b; ++r) {
    const int64_t splits = (int64_t)s.num_splits[r + 1] - s.num_splits[r];
    const int32_t q0 = in.qo_indptr[r], q1 = in.qo_indptr[r + 1];
    if (splits <= 1 || q1 <= q0) {
      planner_util::add_unsplit_tile(wl);
      continue;
    }
    std::vector<int32_t> plocs;
    for (int64_t k = 0; k < splits; ++k) plocs.push_back((int32_t)((s.num_splits[r] + k) * (q1 - q0)));
    planner_util::add_reduce_tile(wl, q0, q1, plocs);
    partial_rows = std::max<int64_t>(partial_rows, (int64_t)(s.num_splits[r] + splits) * (q1 - q0));
    if (splits > kFlashMlaCombineMaxSplits)
      wl.notes.push_back("request " + std::to_string(r) + " has " + std::to_string(splits) +
                         " splits: FlashMLA's combine asserts above 160 (docs/stacks/vllm-cuda.md §C6)");
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_partial_rows = partial_rows;
  return wl;
}

}  // namespace mlactl::vllm_cuda
