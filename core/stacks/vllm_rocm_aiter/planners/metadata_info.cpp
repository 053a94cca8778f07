// get_mla_metadata_info_v1: the buffer sizes the caller allocates (see
// docs/stacks/vllm-rocm-aiter.md §A1.1; aiter/ops/attention.py at e4048607).
#include <algorithm>
#include <cstdint>

#include "core/planners/planner_util.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"

namespace mlactl {

MetadataInfo mla_metadata_info_v1(Arch arch, int num_cu, int64_t batch_size, int max_seqlen_qo, int num_head_qo,
                                  DType q_dtype, DType kv_dtype, bool is_sparse, bool fast_mode, int num_kv_splits,
                                  bool intra_batch_mode, int max_split_per_batch, bool experimental) {
  using planner_util::ceil_div;
  if (num_head_qo % 8 != 0)
    throw Error(kExitRefused, "", "get_mla_metadata_info_v1: assert num_head_qo % 8 == 0 failed");
  const bool gfx950 = arch == Arch::gfx950, gfx942 = arch == Arch::gfx942;
  const bool q8 = q_dtype == DType::fp8, k8 = kv_dtype == DType::fp8;
  const bool q_bf16 = q_dtype == DType::bf16, kv_bf16 = kv_dtype == DType::bf16;
  const int64_t H = num_head_qo;

  // get_mla_decode_fwd_occupancy: 2 only for the experimental HK m16x4 case.
  const int occupancy = (gfx950 && q8 && k8 && H * max_seqlen_qo == 64 && experimental) ? 2 : 1;
  const int64_t max_splits = int64_t(num_cu) * occupancy;

  const int64_t eff_L = is_sparse ? 1 : max_seqlen_qo;
  const int64_t P = eff_L * H;
  int64_t tiles = ceil_div(P, 16);  // rule 4, the default
  if ((gfx950 && q_bf16 && kv_bf16 && P >= 64 && H <= 64 && (P < 128 || H == 48)) ||
      (gfx950 && q8 && k8 && H == 32 && eff_L == 3)) {
    tiles = (H * 2 > 64) ? eff_L : ceil_div(P, 64);  // rule 1: 64-row tiles
  } else if (H == 16 || (gfx942 && H == 128 && q8 && k8) ||
             (gfx942 && (H == 16 || H == 32 || H == 64) && P == 128 && q8 && k8 && experimental) ||
             (gfx950 && q8 && k8 && ((H == 32 && eff_L == 4) || H == 64 || H == 128)) ||
             ((gfx942 || gfx950) && H == 64 && q8 && k8 && eff_L == 1)) {
    tiles = ceil_div(P, 128);  // rule 2: 128-row tiles
  } else if (gfx950 && (P >= 128 || H > 64) && q_bf16 && kv_bf16 && H != 48) {
    tiles = (H * 2 > 128) ? eff_L : ceil_div(P, 128);  // rule 3: bf16 on gfx950
  }

  const int64_t B = is_sparse ? batch_size * max_seqlen_qo : batch_size;
  const int64_t tile_cnt = B * tiles;
  int64_t max_work = 0, max_split_tiles = 0;
  if (fast_mode) {
    max_work = (B + max_splits - 1) * tiles;
    max_split_tiles = std::min(B + max_splits - 1, (max_splits - 1) * 2) * tiles;
  } else {
    max_work = tile_cnt * max_splits;
    max_split_tiles = tile_cnt * max_splits;
  }
  if (max_split_per_batch > 0) {
    const int64_t per_tile_cap = std::min<int64_t>(max_splits, int64_t(max_split_per_batch) * B);
    max_split_tiles = std::max(max_split_tiles, tile_cnt + per_tile_cap);
  }

  MetadataInfo info;
  info.max_splits = max_splits;
  info.tiles_per_batch = tiles;
  info.work_indptr = max_splits + 1;
  info.reduce_indptr = tile_cnt + 1;
  info.reduce_final_map = tile_cnt;
  if (intra_batch_mode) {
    info.work_info_set = tile_cnt * num_kv_splits;
    info.reduce_partial_map = tile_cnt * num_kv_splits;
  } else {
    info.work_info_set = max_work;
    info.reduce_partial_map = max_split_tiles;
  }
  return info;
}

}  // namespace mlactl
