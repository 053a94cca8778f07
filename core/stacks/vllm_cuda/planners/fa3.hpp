// FA3's scheduler for FLASH_ATTN_MLA (docs/stacks/vllm-cuda.md §C5): get_scheduler_metadata's
// static split count (get_num_splits / num_splits_heuristic), prepare_varlen_num_blocks'
// per-batch dynamic splits, and the KV block range each (m block, split) tile of the forward
// kernel reads (BlockMN::get_n_block_min_max), turned into mlactl's one work-list format
// (docs/design.md §4.3). Plain index arrays in, so a captured call can be replayed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl::vllm_cuda {

// vllm-project/flash-attention hopper/ at 2adfc8c2 (the commit vLLM's cmake pins)
constexpr int kFa3HeadDim = 64;                 // headdim = qk_rope_head_dim (q_pe · k_pe)
constexpr int kFa3HeadDimV = 512;               // headdim_v = kv_lora_rank (q_nope rides as q_v)
constexpr int kFa3MaxBatches1Cta = 992;         // PREPARE_VARLEN_MAX_BATCHES_1CTA
constexpr int kFa3HeuristicMaxSplits = 128;     // get_num_splits' max_splits
constexpr int kFa3MaxSplits = 256;              // mha_fwd: "num_splits > 256 not supported"

// tile_size_fwd_sm90(headdim, headdim_v, ...) for 2-byte elements: {kBlockM, kBlockN}.
// Only the MLA shape (64, 512) and the shapes it is compared with are needed here.
struct Fa3Tile {
  int block_m = 0, block_n = 0;
};
Fa3Tile fa3_tile_size_sm90(int headdim, int headdim_v);

// num_splits_heuristic (hopper/heuristics.h), host code, float arithmetic as upstream.
int fa3_num_splits_heuristic(int total_mblocks, int num_sms, int num_n_blocks, int num_m_blocks, int64_t size_one_kv_head,
                             bool is_causal_or_local, int max_splits);

struct Fa3SchedulerInput {
  std::vector<int64_t> seqused_k;  // cache_seqlens: the decode rows' seq_lens (padding included)
  std::vector<int64_t> q_lens;     // from cu_seqlens_q
  int num_heads = 16;              // num_heads_q (num_heads_kv = 1)
  int num_sm = 132;                // multiProcessorCount - sm_margin (0)
  int max_num_splits = 0;          // num_splits argument: <= 0 = the heuristic
};

struct Fa3Schedule {
  Fa3Tile tile;
  bool is_causal = false;          // false when max_seqlen_q == 1 (headdim <= 64)
  int64_t max_seqlen_q = 0, max_seqlen_k = 0;
  int num_splits_static = 1;       // params.num_splits as the forward kernel runs it
  bool dynamic_split = false;      // use_dynamic_split: per-batch num_splits_dynamic written
  int64_t total_blocks = 0;        // Σ m_blocks·n_blocks (prepare_varlen_num_blocks)
  int blocks_per_sm = 0;           // ceil(total·1.1·1 / num_sm)
  std::vector<int32_t> num_m_blocks, num_n_blocks;  // per batch
  std::vector<int32_t> splits;     // per batch: the splits the kernel runs (1 when not split)
  // the int32 tensor get_scheduler_metadata returns: prepare_seqlen_q [b_rounded],
  // num_splits_dynamic [b_rounded] (dynamic split only), num_nheads_in_l2 [b_rounded]
  // (causal only), tile_count_semaphore [1]; entries past b are torch.empty's (shown 0)
  std::vector<int32_t> scheduler_metadata;
  std::vector<std::string> notes;
};

// get_scheduler_metadata + prepare_varlen_num_blocks for an MLA decode batch (pack_gqa on,
// no sorting: varlen_sort_batches = false).
Fa3Schedule fa3_get_scheduler_metadata(const Fa3SchedulerInput& in);

// The forward kernel's tiles as works. q rows of request r are [qo_indptr[r], +q_len);
// entries of request r's KV list start at kv_indptr[r]. One work per (request, m block,
// split) over the q tokens the m block owns (a token belongs to the m block holding its
// first head); the m blocks that hold only later heads of a token read the same KV
// ranges and are folded into it (checked: a batch where they would differ is refused as
// not modelled). Split tiles write fp32 partial rows split·total_q + q_row, merged by one
// combine tile per split (request, m block); unsplit requests are written directly.
struct Fa3WorkInput {
  std::vector<int64_t> seqlens;    // seqused_k as the kernel sees them
  std::vector<int32_t> kv_indptr;
  std::vector<int32_t> qo_indptr;
  int heads = 16;
};
struct Fa3TileInfo {
  int32_t request = 0, m_block = 0, m_blocks_folded = 1, split = 0, splits = 1;
  int32_t token_begin = 0, token_end = 0;
  int32_t n_block_min = 0, n_block_max = 0;  // KV blocks of 64 tokens, [min, max)
};
struct Fa3WorkList {
  WorkList work;
  std::vector<Fa3TileInfo> tiles;  // one per work, same order
  int64_t kernel_tiles = 0;        // Σ m_blocks · splits: the tile scheduler's work tiles
  int block_n = 64;
};
Fa3WorkList fa3_work_list(const Fa3Schedule& s, const Fa3WorkInput& in);

// "tile 3: request 1 m block 0 (q tokens [0, 4)), split 1 of 3: KV blocks [5, 10) = entries [320, 640)"
std::vector<std::string> fa3_words(const Fa3WorkList& wl, const std::vector<int64_t>& seqlens);

}  // namespace mlactl::vllm_cuda
