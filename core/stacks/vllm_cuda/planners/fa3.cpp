// FA3's scheduler as vLLM's FLASH_ATTN_MLA runs it (docs/stacks/vllm-cuda.md §C5), read in
// vllm-project/flash-attention at 2adfc8c2 (vLLM's pin): hopper/flash_api.cpp
// (mha_fwd_get_scheduler_metadata, get_num_splits, get_pack_gqa, mha_fwd), hopper/heuristics.h
// (num_splits_heuristic), hopper/tile_size.h (tile_size_fwd_sm90), hopper/flash_prepare_scheduler.cu
// (prepare_varlen_num_blocks_kernel), hopper/block.h (BlockMN::get_n_block_min_max),
// hopper/epilogue_fwd.hpp (is_split) and hopper/flash_fwd_combine_kernel.h (num_splits <= 1 skipped).
#include "core/stacks/vllm_cuda/planners/fa3.hpp"

#include <algorithm>
#include <cmath>

#include "core/planners/planner_util.hpp"
#include "core/types.hpp"

namespace mlactl::vllm_cuda {

namespace {

// cute::ceil_div on ints: (a + b - 1) / b with C++'s truncating division (a may be negative
// in get_n_block_min_max's causal bound)
int64_t cute_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t round_multiple(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

Fa3Tile fa3_tile_size_sm90(int headdim, int headdim_v) {
  // tile_size_fwd_sm90, element_size 2, headdim <= 64 branch: headdim_v 512 -> {64, 64}
  // (MmaPV_is_RS false, IntraWGOverlap false) whatever the causal/paged flags are
  if (headdim <= 64 && headdim_v == 512) return {64, 64};
  throw Error(kExitRefused, "", "FA3 tile size for headdim " + std::to_string(headdim) + " / headdim_v " + std::to_string(headdim_v) +
                                    " is not modelled (MLA runs 64 / 512)");
}

int fa3_num_splits_heuristic(int total_mblocks, int num_sms, int num_n_blocks, int num_m_blocks, int64_t size_one_kv_head,
                             bool is_causal_or_local, int max_splits) {
  // enough m blocks to almost fill the SMs: 1 split, unless one KV head exceeds L2 (50 MB)
  // and there are queries to read it at least twice (never when causal)
  if ((float)total_mblocks >= 0.8f * (float)num_sms) {
    const int64_t size_l2 = 50LL * 1024 * 1024;
    if (size_one_kv_head > size_l2 && num_m_blocks >= num_sms * 2 && !is_causal_or_local)
      return (int)std::min<int64_t>((size_one_kv_head + size_l2 - 1) / size_l2, max_splits);
    return 1;
  }
  if (num_n_blocks <= 4) return 1;
  max_splits = std::min({max_splits, num_sms, num_n_blocks});
  float max_efficiency = 0.f;
  std::vector<float> efficiency;
  efficiency.reserve((size_t)std::max(0, max_splits));
  for (int ns = 1; ns <= max_splits; ++ns) {
    const float n_waves = float(total_mblocks * ns) / (float)num_sms;
    const float eff = n_waves / std::ceil(n_waves);
    if (eff > max_efficiency) max_efficiency = eff;
    efficiency.push_back(eff);
  }
  // the smallest split count within 85 % of the best wave efficiency (a double comparison upstream)
  for (int ns = 1; ns <= max_splits; ++ns)
    if ((double)efficiency[ns - 1] >= 0.85 * (double)max_efficiency) return ns;
  return 1;
}

Fa3Schedule fa3_get_scheduler_metadata(const Fa3SchedulerInput& in) {
  const int64_t b = (int64_t)in.seqused_k.size();
  if ((int64_t)in.q_lens.size() != b) throw invalid_input("", "fa3 planner: q_lens and seqused_k need one entry per request");
  if (in.num_heads < 1 || in.num_sm < 1) throw invalid_input("", "fa3 planner: num_heads and num_sm must be >= 1");
  Fa3Schedule s;
  s.tile = fa3_tile_size_sm90(kFa3HeadDim, kFa3HeadDimV);
  const int h = in.num_heads;
  for (int64_t r = 0; r < b; ++r) {
    if (in.seqused_k[r] < 0 || in.q_lens[r] < 0) throw invalid_input("", "fa3 planner: lengths must be >= 0");
    s.max_seqlen_q = std::max(s.max_seqlen_q, in.q_lens[r]);
    s.max_seqlen_k = std::max(s.max_seqlen_k, in.seqused_k[r]);
  }
  // causal=True is the same as causal=False at max_seqlen_q 1: reset for headdim <= 64
  s.is_causal = s.max_seqlen_q != 1;
  // get_num_splits: the varlen heuristic pretends batch = 1 (num_splits_dynamic_ptr is set),
  // one KV head (h_k = 1), q packed with its heads (pack_gqa: varlen q always packs)
  const int64_t seqlen_q_packgqa = s.max_seqlen_q * h;
  const int64_t num_n_blocks = cute_ceil_div(s.max_seqlen_k, s.tile.block_n);
  const int64_t num_m_blocks = cute_ceil_div(seqlen_q_packgqa, s.tile.block_m);
  const int64_t size_one_kv_head = s.max_seqlen_k * (kFa3HeadDim + kFa3HeadDimV) * 2;
  s.num_splits_static = in.max_num_splits > 0
                            ? in.max_num_splits
                            : fa3_num_splits_heuristic((int)num_m_blocks, in.num_sm, (int)num_n_blocks, (int)num_m_blocks, size_one_kv_head,
                                                       s.is_causal, kFa3HeuristicMaxSplits);
  s.dynamic_split = b <= kFa3MaxBatches1Cta && s.num_splits_static > 1;
  // mha_fwd: "disable split for varlen and >992 batches for now"
  if (b > kFa3MaxBatches1Cta) s.num_splits_static = 1;

  // prepare_varlen_num_blocks_kernel: per batch m blocks of the packed q, n blocks of seqused_k
  s.num_m_blocks.resize((size_t)b);
  s.num_n_blocks.resize((size_t)b);
  s.splits.assign((size_t)b, 1);
  for (int64_t r = 0; r < b; ++r) {
    s.num_m_blocks[r] = (int32_t)cute_ceil_div(in.q_lens[r] * h, s.tile.block_m);
    s.num_n_blocks[r] = (int32_t)cute_ceil_div(in.seqused_k[r], s.tile.block_n);
    s.total_blocks += (int64_t)s.num_m_blocks[r] * s.num_n_blocks[r];
  }
  std::vector<int32_t> n_per_split(s.num_n_blocks);
  if (s.dynamic_split) {
    // blocks_per_sm = ceilf(float(total) * 1.1f * float(num_head = h_k = 1) / float(num_sm)), device
    // code built with --use_fast_math: docs/stacks/vllm-cuda.md §C5 on the division
    s.blocks_per_sm = (int)std::ceil((float)s.total_blocks * 1.1f * 1.0f / (float)in.num_sm);
    for (int64_t r = 0; r < b; ++r) {
      int64_t d = 1;
      if (s.blocks_per_sm > 0) d = (s.num_n_blocks[r] + s.blocks_per_sm - 1) / s.blocks_per_sm;
      s.splits[r] = (int32_t)std::max<int64_t>(std::min<int64_t>(d, s.num_splits_static), 1);
      n_per_split[r] = (int32_t)cute_ceil_div(s.num_n_blocks[r], s.splits[r]);
    }
    if (s.blocks_per_sm == 0)
      s.notes.push_back("every seq_len is 0 under a forced num_splits: prepare_varlen_num_blocks divides by blocks_per_sm = 0 (undefined on the device); modelled as 1 split");
  }
  // the returned tensor: {prepare_seqlen_q, num_splits_dynamic, num_nheads_in_l2} vectors of
  // round_up(b, 4) and the semaphore (the kernel zeroes it)
  const int64_t b_rounded = round_multiple(b, 4);
  const int vectors = 1 + (s.dynamic_split ? 1 : 0) + (s.is_causal ? 1 : 0);
  s.scheduler_metadata.assign((size_t)(b_rounded * vectors + 1), 0);
  int64_t off = 0;
  for (int64_t r = 0; r < b; ++r) s.scheduler_metadata[off + r] = (int32_t)(in.q_lens[r] * h);
  off += b_rounded;
  if (s.dynamic_split) {
    for (int64_t r = 0; r < b; ++r) s.scheduler_metadata[off + r] = s.splits[r];
    off += b_rounded;
  }
  if (s.is_causal) {
    // get_nheads_in_l2(...) is capped by num_head = h_k = 1 under pack_gqa
    for (int64_t r = 0; r < b; ++r) s.scheduler_metadata[off + r] = 1;
  }
  return s;
}

Fa3WorkList fa3_work_list(const Fa3Schedule& s, const Fa3WorkInput& in) {
  const int64_t b = (int64_t)in.seqlens.size();
  if ((int64_t)in.kv_indptr.size() != b + 1 || (int64_t)in.qo_indptr.size() != b + 1 || (int64_t)s.splits.size() != b)
    throw invalid_input("", "fa3 work list: kv_indptr and qo_indptr need b + 1 entries, the schedule b splits");
  Fa3WorkList out;
  WorkList& wl = out.work;
  out.block_n = s.tile.block_n;
  wl.planner = "fa3_get_scheduler_metadata";
  KernelView& v = wl.planned_view;
  v.heads = in.heads;
  v.q_layout = QLayout::per_request;
  v.q_tokens_per_tile = std::max(1, s.tile.block_m / in.heads);
  v.causal = s.is_causal;
  const int64_t total_q = in.qo_indptr.back();
  wl.num_q_rows = total_q;
  const int64_t BM = s.tile.block_m, BN = s.tile.block_n, h = in.heads;
  int64_t max_splits = 1;
  for (int64_t r = 0; r < b; ++r) {
    const int64_t q0 = in.qo_indptr[r], L = in.qo_indptr[r + 1] - q0, sk = in.seqlens[r];
    const int64_t S = std::max<int32_t>(1, s.splits[r]);
    if (L <= 0) continue;
    const int64_t M = cute_ceil_div(L * h, BM);
    out.kernel_tiles += M * S;
    // get_n_block_min_max before the split: causal bound from the m block's last token
    auto n_block_max = [&](int64_t k) {
      int64_t n = cute_ceil_div(sk, BN);
      if (s.is_causal) {
        const int64_t m_idx_max = ((k + 1) * BM - 1) / h + 1;  // PackGQA: divide(m_idx_max - 1) + 1
        n = std::min(n, cute_ceil_div(m_idx_max + sk - L, BN));
      }
      return n;
    };
    for (int64_t k = 0; k < M; ++k) {
      // tokens whose first head is in m block k; the m blocks up to the next owner hold
      // only later heads of the same tokens
      const int64_t ta = std::min(L, cute_ceil_div(k * BM, h)), tb = std::min(L, cute_ceil_div((k + 1) * BM, h));
      if (tb <= ta) continue;
      const int64_t nmax = n_block_max(k);
      int64_t folded = 1;
      for (int64_t k2 = k + 1; k2 < M && k2 * BM < tb * h; ++k2) {
        ++folded;
        if (n_block_max(k2) != nmax)
          wl.notes.push_back("request " + std::to_string(r) + ": m block " + std::to_string(k2) + " holds later heads of q token " +
                             std::to_string(tb - 1) + " with KV blocks up to " + std::to_string(n_block_max(k2)) + ", not " +
                             std::to_string(nmax) + "; mlactl gives every head of a q row the ranges of the m block of its first head (the same window)");
      }
      const int64_t per = nmax <= 0 ? 0 : cute_ceil_div(nmax, S);
      // the combine for these rows: their partials in split order (FA3 merges per row and
      // head; one tile per m block's rows keeps every fragment a whole work)
      std::vector<int32_t> plocs;
      for (int64_t j = 0; j < S; ++j) {
        const int64_t bmin = j * per, bmax = std::min(bmin + per, nmax);
        const int64_t kb = std::clamp<int64_t>(bmin * BN, 0, sk);
        const int64_t ke = std::max(kb, std::clamp<int64_t>(bmax * BN, 0, sk));
        WorkInfo w;
        w.batch_idx = (int32_t)r;
        w.partial_qo_loc = S > 1 ? (int32_t)(j * total_q + q0 + ta) : -1;
        w.qo_start = (int32_t)(q0 + ta);
        w.qo_end = (int32_t)(q0 + tb);
        w.kv_start = (int32_t)(in.kv_indptr[r] + kb);
        w.kv_end = (int32_t)(in.kv_indptr[r] + ke);
        // the work list's causal rule counts from the last row's window end (s - L + tb);
        // negative when the block-rounded range runs past it (the kernel masks those)
        w.kv_offset = (int32_t)((s.is_causal ? sk - L + tb : sk) - ke);
        wl.work_info.push_back(w);
        if (S > 1) plocs.push_back(w.partial_qo_loc);
        Fa3TileInfo t;
        t.request = (int32_t)r;
        t.m_block = (int32_t)k;
        t.m_blocks_folded = (int32_t)folded;
        t.split = (int32_t)j;
        t.splits = (int32_t)S;
        t.token_begin = (int32_t)ta;
        t.token_end = (int32_t)tb;
        t.n_block_min = (int32_t)bmin;
        t.n_block_max = (int32_t)std::max(bmin, bmax);
        out.tiles.push_back(t);
      }
      if (S > 1) planner_util::add_reduce_tile(wl, (int32_t)(q0 + ta), (int32_t)(q0 + tb), plocs);
      else planner_util::add_unsplit_tile(wl);
    }
    max_splits = std::max(max_splits, S);
  }
  // FA3's persistent scheduler hands tiles to CTAs dynamically: one workgroup per tile
  wl.num_workgroups = (int)wl.work_info.size();
  wl.work_indptr.resize(wl.work_info.size() + 1);
  for (size_t i = 0; i <= wl.work_info.size(); ++i) wl.work_indptr[i] = (int32_t)i;
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_partial_rows = max_splits > 1 ? max_splits * total_q : 0;
  for (const auto& n : s.notes) wl.notes.push_back(n);
  return out;
}

std::vector<std::string> fa3_words(const Fa3WorkList& fw, const std::vector<int64_t>& seqlens) {
  std::vector<std::string> out;
  auto range = [](int64_t a, int64_t e) { return "[" + std::to_string(a) + ", " + std::to_string(e) + ")"; };
  for (size_t i = 0; i < fw.tiles.size(); ++i) {
    const Fa3TileInfo& t = fw.tiles[i];
    const int64_t sk = seqlens[(size_t)t.request];
    std::string line = "tile " + std::to_string(i) + ": request " + std::to_string(t.request) + " m block " + std::to_string(t.m_block);
    if (t.m_blocks_folded > 1) line += "-" + std::to_string(t.m_block + t.m_blocks_folded - 1);
    line += " (q tokens " + range(t.token_begin, t.token_end) + ")";
    line += t.splits <= 1 ? ", whole, written directly" : ", split " + std::to_string(t.split) + " of " + std::to_string(t.splits);
    const int64_t kb = std::min<int64_t>((int64_t)t.n_block_min * fw.block_n, sk), ke = std::max(kb, std::min<int64_t>((int64_t)t.n_block_max * fw.block_n, sk));
    line += ": KV blocks " + range(t.n_block_min, t.n_block_max) + " = tokens " + range(kb, ke);
    if (ke <= kb) line += " (empty: writes LSE -inf)";
    out.push_back(line);
  }
  return out;
}

}  // namespace mlactl::vllm_cuda
