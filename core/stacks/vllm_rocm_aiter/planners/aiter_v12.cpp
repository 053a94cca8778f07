// AITER get_mla_metadata_v1, v1.2 fast mode, serial planner (kn_get_mla_metadata_v1_2).
// Transcribed from docs/stacks/vllm-rocm-aiter.md §A2–§A3 with the corrections of §A10,
// checked line by line against csrc/kernels/mla/metadata/v1_2_device.cuh at aiter
// e4048607 (the commit the reference describes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/planners/planner_util.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"

namespace mlactl {

using planner_util::ceil_div;

namespace {

const char* kAiterHeadsError =
    "get_mla_metadata_v1_2_device: only supports #heads in [16, 64, 128], or (#head, uni_seqlen_qo) = (16*N, 1) "
    "where N is in [2, 8), or (#head, max_seqlen_qo) = (8, 4) where q and kv are fp8, or q and kv are bf16 on gfx950";

// The AITER_CHECK after the fold (v1_2_device.cuh), with H already folded.
bool aiter_heads_supported(const AiterFold& f, Arch arch, int H_folded, int L, bool q8, bool k8, bool hk_mtp) {
  const bool gfx950 = arch == Arch::gfx950, gfx942 = arch == Arch::gfx942;
  return f.native || H_folded == 16 || H_folded == 128 || (H_folded == 32 && q8 && k8) ||
         (H_folded == 64 && q8 && k8 && L == 1) || (gfx950 && H_folded == 8 && L == 4 && q8 && k8) ||
         (gfx942 && H_folded == 8 && L == 2 && !q8 && !k8) || (gfx950 && !q8 && !k8) ||
         (gfx950 && q8 && k8 && ((H_folded == 32 && L == 4) || H_folded == 64 || H_folded == 128)) || hk_mtp;
}

// maxSharedMemoryPerMultiProcessor: 64 KiB on MI300 (gfx942), 160 KiB on MI355 (gfx950).
// Only used to decide whether AITER would take its parallel planner (§A2 "Kernel choice").
int64_t lds_bytes(Arch arch) { return arch == Arch::gfx942 ? 64 * 1024 : 160 * 1024; }

std::string join_ints(const std::vector<int64_t>& v, size_t max_items = 8) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size() && i < max_items; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > max_items) os << ", ... (" << v.size() << " in all)";
  return os.str();
}

}  // namespace

float aiter_sum_sqrt_blocks_wave64(const std::vector<float>& unit_terms) {
  // mla_v12_compute_sum_blocks (ROCm/aiter#4899@7975419d89, v1_2_device.cuh): lane l adds the
  // batches l, l + 64, ... in order; aiter::warpReduce<AddFunctor, float, 64> then adds lanes
  // pairwise by xor strides 32, 16, ..., 1 (custom_all_reduce.cuh). The same float order here,
  // so lrintf sees the value AITER rounds.
  constexpr int kWave = 64;
  float lane[kWave] = {};
  for (size_t i = 0; i < unit_terms.size(); ++i) lane[i % kWave] += unit_terms[i];
  for (int stride = kWave / 2; stride > 0; stride >>= 1) {
    float next[kWave];
    for (int l = 0; l < kWave; ++l) next[l] = lane[l] + lane[l ^ stride];
    std::copy(next, next + kWave, lane);
  }
  return lane[0];
}

int64_t aiter_effective_splits(float sum_sqrt_blocks, int64_t num_splits) {
  // mla_v12_effective_splits (ROCm/aiter#4899@7975419d89): MLA_V12_SPLIT_COEF = 1.2f, lrintf
  // (round half to even), clamped to [1, num_splits].
  const float scaled = 1.2f * sum_sqrt_blocks;
  const int64_t eff = static_cast<int64_t>(std::lrint(scaled));
  return std::max<int64_t>(1, std::min(eff, num_splits));
}

WorkList plan_aiter_v12(const AiterPlanInput& in) {
  WorkList wl;
  wl.planner = "aiter_v12";
  const int64_t B0 = static_cast<int64_t>(in.kv_indptr.size()) - 1;
  if (B0 < 0 || static_cast<int64_t>(in.qo_indptr.size()) != B0 + 1)
    throw invalid_input("", "aiter planner: qo_indptr and kv_indptr must both have batch_size + 1 entries");
  if (in.page_size < 1 || (in.page_size & (in.page_size - 1)) != 0 || in.kv_granularity < 1 ||
      (in.kv_granularity & (in.kv_granularity - 1)) != 0)
    throw invalid_input("", "aiter planner: page_size and kv_granularity must be powers of 2");
  if (in.num_heads_k < 1) throw invalid_input("", "aiter planner: num_heads_k must be >= 1");
  if (in.page_size > 1 && static_cast<int64_t>(in.kv_last_page_len.size()) < B0)
    throw invalid_input("", "aiter planner: kv_last_page_len must have batch_size entries when page_size > 1");

  // Only "is fp8" matters; omitted dtypes are the C++ default bf16 (§A1.2, §A6).
  const bool q8 = in.dtypes_given && in.dtype_q == DType::fp8;
  const bool k8 = in.dtypes_given && in.dtype_kv == DType::fp8;
  if (!in.dtypes_given)
    wl.notes.push_back("dtypes not given: AITER plans as bf16/bf16 (its C++ default) whatever the real tensors are "
                       "(docs/stacks/vllm-rocm-aiter.md §A6)");
  const int msq = in.max_seqlen_qo;
  const int H = in.num_heads_k * in.num_heads;
  const bool exp = in.experimental;
  // cluster_multiplier (V32: all four dtypes fp8; we model nope == rope).
  const int cluster_mult = (exp && in.arch == Arch::gfx950 && H * msq == 64 && q8 && k8) ? 2 : 1;
  const int num_clusters = in.num_cu * cluster_mult / in.num_heads_k;
  const bool hk_mtp = q8 && k8 && H * msq == 128 && (H == 16 || H == 32 || H == 64 || H == 128) && exp;

  AiterFold fold = aiter_fold(in.arch, H, msq, q8, k8, exp);
  {  // qo_splits is keyed on num_heads_per_head_k, not Hk * it (differs only when Hk > 1).
    const int64_t packed = static_cast<int64_t>(msq) * in.num_heads;
    fold.qo_splits = !(packed > 0 && packed <= fold.wg);
  }
  if (!aiter_heads_supported(fold, in.arch, fold.heads, msq, q8, k8, hk_mtp))
    throw Error(kExitRefused, "", kAiterHeadsError);

  const int ratio = fold.ratio;
  const int Hq = fold.heads;  // heads per q row after the fold
  const int64_t num_batches_folded = B0 * ratio;
  const bool sparse = in.topk >= 0;
  const int page = in.page_size, gran = in.kv_granularity;
  const int64_t overhead = std::max<int64_t>(1, ceil_div(16, page));  // 16 blocks when page_size == 1 (§A2)
  const int tail_thr = msq;                                           // original max_seqlen_qo
  const int64_t topk_units = sparse ? ceil_div(in.topk, page) : in.topk;
  const int64_t num_splits = in.max_split_per_batch < 0
                                 ? num_clusters
                                 : std::min<int64_t>(num_clusters, int64_t(in.max_split_per_batch) * num_batches_folded);
  const bool uniform = in.uni_seqlen_qo > 0;  // kUniSeqlenQo >= 0: q ranges from uni * b
  const int uni = in.uni_seqlen_qo;
  // ori_seqlen_qo: sparse reads qo_indptr[1]-qo_indptr[0]; otherwise it is uni_seqlen_qo as given.
  const int ori_L = sparse ? (B0 > 0 ? in.qo_indptr[1] - in.qo_indptr[0] : 0) : in.uni_seqlen_qo;
  const int64_t nb = sparse ? num_batches_folded * ori_L : num_batches_folded;

  // The view AITER planned for: what mla_decode_fwd must match (§A5.1, §A6).
  KernelView& v = wl.planned_view;
  v.heads = Hq;
  v.fold_ratio = ratio;
  v.q_layout = sparse ? QLayout::per_token_sparse : QLayout::per_request;
  v.causal = in.causal;
  v.page_size = page;
  v.q_dtype = q8 ? DType::fp8 : (in.dtypes_given ? in.dtype_q : DType::bf16);
  v.kv_dtype = k8 ? DType::fp8 : (in.dtypes_given ? in.dtype_kv : DType::bf16);
  v.q_tokens_per_tile = 1;

  wl.num_workgroups = std::max(0, num_clusters);
  wl.work_indptr.assign(static_cast<size_t>(wl.num_workgroups) + 1, 0);
  wl.reduce_indptr.assign(1, 0);

  auto abandon = [&](const std::string& why) {
    wl.notes.push_back(why + " — mlactl plans nothing here (AITER's result is undefined)");
    return wl;
  };
  if (sparse && ori_L < 1 && B0 > 0) return abandon("sparse mode with qo_indptr[1]-qo_indptr[0] < 1 divides by zero");
  if (!sparse && ratio != 1 && ori_L == 0)
    return abandon("head fold with uni_seqlen_qo == 0: the fold's causal trim takes a modulo by zero");
  if (in.kv_indptr.size() > 0 && in.kv_indptr[0] != 0)
    wl.notes.push_back("kv_indptr[0] != 0: AITER's KV ranges are relative to kv_indptr[0] (docs/stacks/vllm-rocm-aiter.md §A10.6); "
                       "the ranges below are too");
  if (msq < 1)
    wl.notes.push_back("max_seqlen_qo < 1: the tail rule is off and q tiling is forced; AITER can emit gapped or "
                       "negative-length KV ranges (docs/stacks/vllm-rocm-aiter.md §A6, §A10.6)");
  if (ratio != 1 && !uniform && !sparse && B0 > 0)
    return abandon("head fold with non-uniform q_len (uni_seqlen_qo < 1): AITER indexes qo_indptr with the folded "
                   "batch index and reads past the array (docs/stacks/vllm-rocm-aiter.md §A5.1, §A10.6)");
  if (ratio != 1 && page > 1)
    wl.notes.push_back("head fold with page_size > 1: AITER indexes kv_last_page_lens with the folded batch index "
                       "(docs/stacks/vllm-rocm-aiter.md §A10.6); kv_offset of non-tail works reads other requests' last_page_len");

  // Per-batch accessors, QoState of v1_comm.cuh. b is the planner's batch (folded, sparse-expanded).
  auto kv_request_of = [&](int64_t b) -> int64_t { return sparse ? b / ori_L / ratio : b / ratio; };
  auto kv_len_of = [&](int64_t b) -> int64_t {
    const int64_t r = kv_request_of(b);
    const int64_t len = int64_t(in.kv_indptr[r + 1]) - in.kv_indptr[r];
    return sparse ? std::min(len, topk_units) : len;
  };
  // Non-uniform: the q length stored in LDS at slot x is that of request x_ori (bid_ori).
  auto lds_seqlen_qo = [&](int64_t x) -> int64_t {
    const int64_t r = sparse ? x / ori_L / ratio : x / ratio;
    return int64_t(in.qo_indptr[r + 1]) - in.qo_indptr[r];
  };
  auto qo_index_of = [&](int64_t b) -> int64_t { return sparse ? b / ori_L : b; };
  auto seqlen_qo = [&](int64_t b) -> int64_t { return uniform ? uni : lds_seqlen_qo(qo_index_of(b)); };
  auto qo_begin = [&](int64_t b) -> int64_t { return uniform ? int64_t(uni) * b : in.qo_indptr[qo_index_of(b)]; };
  auto qo_end = [&](int64_t b) -> int64_t { return uniform ? int64_t(uni) * (b + 1) : in.qo_indptr[qo_index_of(b) + 1]; };
  auto num_qo_tiles = [&](int64_t b) -> int64_t {
    if (!fold.qo_splits) return 1;
    const int64_t L = seqlen_qo(b);
    if (Hq * 2 > fold.wg) return L;
    return ceil_div(L * Hq, fold.wg);
  };
  if (!uniform && !sparse) {
    // get_begin reads qo_indptr[b]: out of range whenever b > B0 - 1 (folded or sparse-expanded indices).
    if (nb > B0) return abandon("AITER indexes qo_indptr past its end for this input (docs/stacks/vllm-rocm-aiter.md §A10.6)");
  }
  if (!uniform && sparse && nb > 0 && qo_index_of(nb - 1) + 1 > B0)
    return abandon("sparse mode with non-uniform q: AITER indexes qo_indptr past its end");
  if (!uniform && fold.qo_splits && nb > 0)
    wl.notes.push_back("non-uniform q_len with q tiling: AITER computes the total work from LDS before it stores the q "
                       "lengths (docs/stacks/vllm-rocm-aiter.md §A10.2), so its payload and whole plan depend on leftover memory; mlactl "
                       "plans with the true q lengths");

  // ---- Σ blocks and payload (mla_v12_compute_sum_blocks) ----
  int64_t sum_blocks = 0;
  int64_t max_tile_rows = 1;
  bool multi_token_tiles = false;
  std::vector<float> sqrt_terms;  // #4899: num_qo_tiles * sqrtf(max(1, unit_blocks)) a batch
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t nt = num_qo_tiles(b);
    if (nt < 1 && fold.qo_splits)
      return abandon("a batch with 0 q tokens under q tiling: AITER divides its q length by 0 tiles");
    const int64_t unit_blocks = ceil_div(kv_len_of(b), gran) + overhead;
    sum_blocks += unit_blocks * nt;
    sqrt_terms.push_back(static_cast<float>(nt) * std::sqrt(static_cast<float>(std::max<int64_t>(1, unit_blocks))));
    const int64_t T = ceil_div(seqlen_qo(b), nt);
    max_tile_rows = std::max(max_tile_rows, T);
    if (nt > 1 && T > 1) multi_token_tiles = true;
  }
  v.q_tokens_per_tile = static_cast<int>(max_tile_rows);
  if (nb > 0)
    wl.num_q_rows = uniform ? int64_t(uni) * nb : int64_t(in.qo_indptr[B0]);
  if (multi_token_tiles && in.causal && page == 1 && !in.is_cp_round_robin) {
    wl.stack_findings.push_back(StackFindingId::aiter_tile_trim);
    wl.notes.push_back("q tiles of several tokens with several tiles per request: AITER's causal trim counts tiles, not "
                       "tokens (batch_tail = num_qo_tiles-1-tile), so under the kernel's diagonal rule (docs/stacks/vllm-rocm-aiter.md §A7.1) "
                       "rows of a non-last tile see up to T-1 KV entries past their causal window");
  }
  if (num_splits <= 0 || nb == 0) {
    if (nb > 0) wl.notes.push_back("no split budget (num_splits <= 0): AITER emits no work");
    return wl;
  }
  // #4899 (rule set 2026.08+4899): in auto mode (max_split_per_batch < 0, vLLM's decode call)
  // the payload divides by a split count adapted to the workload; num_splits only caps it, so
  // get_mla_metadata_info_v1's buffer sizes are unchanged. Both AITER planners use the same count.
  int64_t splits_used = num_splits;
  if (in.rules == AiterRules::r2026_08_pr4899 && in.max_split_per_batch < 0) {
    const float sum_sqrt = aiter_sum_sqrt_blocks_wave64(sqrt_terms);
    splits_used = aiter_effective_splits(sum_sqrt, num_splits);
    std::ostringstream os;
    os << "aiter rules 2026.08+4899 (ROCm/aiter#4899): split count " << splits_used << " = clamp(lrintf(1.2 * "
       << sum_sqrt << "), 1, " << num_splits << ") from the per-tile sqrt of " << sum_blocks
       << " blocks; 2026.08 divides by " << num_splits << " (docs/stacks/vllm-rocm-aiter.md §A5.5)";
    wl.notes.push_back(os.str());
  }
  const int64_t payload = ceil_div(sum_blocks, splits_used) + overhead;

  // ---- §A10.1: would AITER run its parallel planner here, and does it differ? ----
  {
    const bool parallel_shape = msq == 1 && !fold.qo_splits && !sparse && page == 1 && ratio == 1;
    const int64_t lds_needed = 4 * (3 + 5 * nb) + (uniform ? 0 : 4 * nb);
    std::vector<int64_t> zero_kv;
    for (int64_t b = 0; b < nb && parallel_shape; ++b)
      if (kv_len_of(b) == 0) zero_kv.push_back(b);
    if (parallel_shape && lds_needed <= lds_bytes(in.arch) && !zero_kv.empty()) {
      // Phase-1 scan of kn_get_mla_metadata_v1_2_parallel: a zero-length batch reaching a CU with
      // remain_payload < overhead gets num_frags = 0, i.e. no work item.
      std::vector<int64_t> dropped;
      int64_t remain = payload;
      const int64_t per_cu = payload - overhead;
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t nblk = ceil_div(kv_len_of(b), gran);
        if (nblk + overhead <= remain) {
          remain -= nblk + overhead;
        } else if (remain > overhead) {
          const int64_t rest = nblk - (remain - overhead);
          const int64_t fresh = ceil_div(rest, per_cu);
          remain = payload - ((rest - (fresh - 1) * per_cu) + overhead);
        } else {
          const int64_t fresh = ceil_div(nblk, per_cu);
          if (fresh == 0) dropped.push_back(b);
          else remain = payload - ((nblk - (fresh - 1) * per_cu) + overhead);
        }
      }
      std::string n = "AITER would run its parallel planner here; it differs on zero-length KV requests (docs/stacks/vllm-rocm-aiter.md "
                      "§A10.1). Zero-length requests: " + join_ints(zero_kv) + ". ";
      if (dropped.empty())
        n += "In this batch none reaches a CU with less than the overhead left, so both planners agree.";
      else
        n += "The parallel planner gives request(s) " + join_ints(dropped) +
             " no work item (their output rows are never written) and shifts every later CU assignment.";
      wl.notes.push_back(n);
    }
  }

  // ---- the serial planner (kn_get_mla_metadata_v1_2) ----
  std::vector<WorkInfo>& works = wl.work_info;
  works.reserve(static_cast<size_t>(nb + num_clusters));
  int64_t curr_batch = 0, curr_kv_block = 0, curr_n_split_idx = 0, curr_qo_tile_idx = 0, curr_sub_head_idx = 0;
  int64_t curr_kv_begin = 0;
  int64_t curr_kv_end = kv_len_of(0);  // kLdsBatchInfo: the first batch's (clamped) KV length
  int64_t curr_kv_seqlen = curr_kv_end - curr_kv_begin;
  int64_t partial_idx = 0, tot_qo_tiles = 0, last_reduce_indptr = 0;
  bool cur_tail_done = false;
  bool negative_range = false;

  bool fold_trim_seen = false;
  // The fields both emission paths share: q range, kv_start, and the END() rule (§A3).
  auto make_work = [&](int64_t nt, int64_t T, int64_t nblocks, bool final_fragment) -> WorkInfo {
    WorkInfo w;
    const int64_t batch_kv = sparse ? curr_batch / ori_L / ratio : curr_batch;
    w.batch_idx = static_cast<int32_t>(batch_kv);
    const int64_t qs = qo_begin(curr_batch) + curr_qo_tile_idx * T;
    const int64_t qe = std::min(qs + T, qo_end(curr_batch));
    w.qo_start = static_cast<int32_t>(qs);
    w.qo_end = static_cast<int32_t>(qe);
    const int64_t ks = curr_kv_begin + curr_kv_block * gran;
    w.kv_start = static_cast<int32_t>(ks);
    int64_t ke = 0, koff = 0;
    if (page == 1) {
      int64_t bt = in.is_cp_round_robin ? 0 : (nt - 1 - curr_qo_tile_idx);
      if (!sparse && ratio != 1) {
        // §A10.3: under a fold the trim is recomputed from the folded q row (and overrides cp round-robin).
        bt = nt - (qs / ratio) % ori_L - 1;
      }
      bt = in.causal ? std::max<int64_t>(bt, 0) : 0;
      if (ratio != 1 && bt > 0) fold_trim_seen = true;
      ke = std::min(ks + nblocks * gran, curr_kv_end - bt);
      if (final_fragment) {
        if ((curr_kv_end - ke < tail_thr && curr_kv_end - ke > 0) || cur_tail_done)
          ke = std::min(curr_kv_end - bt, curr_kv_end);
      } else if (curr_kv_end - ke < tail_thr) {
        // Tail rule: a KV tail shorter than max_seqlen_qo is not left for another CU.
        cur_tail_done = true;
        ke = std::min(curr_kv_end, curr_kv_end - bt);
      }
      koff = curr_kv_end - ke;
      if (sparse && ratio == 1) {
        w.batch_idx = static_cast<int32_t>(curr_batch / ori_L);
        koff += ori_L - 1 - (curr_batch % ori_L);
      }
    } else {
      // Paged: no causal trim and no tail rule; kv_offset in tokens (§A3 END, page_size > 1).
      ke = std::min(ks + nblocks * gran, curr_kv_end);
      if (curr_kv_end - ke == 0) {
        koff = 0;
      } else {
        if (batch_kv >= static_cast<int64_t>(in.kv_last_page_len.size())) {
          koff = -1;  // read past kv_last_page_lens: flagged below
        } else {
          koff = (curr_kv_end - ke - 1) * page + in.kv_last_page_len[batch_kv];
        }
      }
    }
    w.kv_end = static_cast<int32_t>(ke);
    w.kv_offset = static_cast<int32_t>(koff);
    if (ke < ks) negative_range = true;
    return w;
  };
  bool read_past_last_page = false;

  for (int cid = 0; cid < num_clusters; ++cid) {
    int64_t remain_payload = payload;
    while (curr_batch < nb) {
      const int64_t nt = num_qo_tiles(curr_batch);
      const int64_t T = ceil_div(seqlen_qo(curr_batch), nt);
      const int64_t num_kv_blocks = ceil_div(curr_kv_seqlen, gran);
      const int64_t remain_kv_blocks = num_kv_blocks - curr_kv_block;

      if (remain_payload >= remain_kv_blocks + overhead || cur_tail_done) {
        // The rest of this q tile fits (or the tail rule forces it here): its last fragment.
        WorkInfo w = make_work(nt, T, remain_kv_blocks, /*final_fragment=*/true);
        if (page > 1 && w.kv_offset < 0) read_past_last_page = true;
        const int64_t num_splits_tile = curr_n_split_idx + 1;
        if (curr_n_split_idx > 0) {
          w.partial_qo_loc = static_cast<int32_t>(partial_idx);
          wl.reduce_indptr.push_back(static_cast<int32_t>(last_reduce_indptr + num_splits_tile));
          wl.reduce_final_map.push_back({w.qo_start, w.qo_end});
          for (int64_t s = 0; s < num_splits_tile; ++s)
            wl.reduce_partial_map.push_back(static_cast<int32_t>(partial_idx - (curr_n_split_idx - s) * T));
          partial_idx += T;
          last_reduce_indptr += num_splits_tile;
        } else {
          w.partial_qo_loc = -1;
          wl.reduce_indptr.push_back(static_cast<int32_t>(last_reduce_indptr));
          wl.reduce_final_map.push_back({-1, -1});  // v1.2 leaves unsplit tiles unwritten
        }
        works.push_back(w);
        ++tot_qo_tiles;
        remain_payload -= remain_kv_blocks + overhead;

        curr_qo_tile_idx = (curr_qo_tile_idx == nt - 1) ? 0 : curr_qo_tile_idx + 1;
        if (!fold.qo_splits || curr_qo_tile_idx == 0) {
          ++curr_batch;
          curr_sub_head_idx = (curr_sub_head_idx == ratio - 1) ? 0 : curr_sub_head_idx + 1;
          if (curr_batch < nb) {
            if (curr_sub_head_idx == 0) {  // head groups of one request share its KV range (§A5.1)
              curr_kv_seqlen = kv_len_of(curr_batch);
              curr_kv_begin = sparse ? curr_kv_begin + topk_units : curr_kv_end;
              curr_kv_end = curr_kv_begin + curr_kv_seqlen;
            }
            curr_kv_block = 0;
            curr_n_split_idx = 0;
            cur_tail_done = false;
          }
        } else {
          curr_kv_block = 0;
          curr_n_split_idx = 0;
          cur_tail_done = false;
        }
      } else {
        if (remain_payload > overhead) {
          const int64_t consuming = remain_payload - overhead;
          WorkInfo w = make_work(nt, T, consuming, /*final_fragment=*/false);
          if (page > 1 && w.kv_offset < 0) read_past_last_page = true;
          w.partial_qo_loc = static_cast<int32_t>(partial_idx);
          if (!cur_tail_done) {
            works.push_back(w);
            partial_idx += T;
            curr_kv_block += consuming;
            ++curr_n_split_idx;
          }
        }
        if (!cur_tail_done) break;  // close this CU ("waste" rule when remain <= overhead)
      }
    }
    wl.work_indptr[cid + 1] = static_cast<int32_t>(works.size());
  }

  wl.num_partial_rows = partial_idx;
  if (curr_batch < nb) {
    wl.notes.push_back("AITER ran out of workgroups: batches from " + std::to_string(curr_batch) + " of " +
                       std::to_string(nb) + " get no work item");
  }
  if (negative_range) wl.stack_findings.push_back(StackFindingId::aiter_negative_kv_range);
  if (negative_range)
    wl.notes.push_back("AITER emits negative-length KV ranges (kv_end < kv_start) here: the causal trim of a q tile "
                       "exceeds the request's KV length (e.g. zero-length KV with q tiling); kernels read nothing");
  if (read_past_last_page)
    wl.notes.push_back("AITER reads kv_last_page_lens past its end (folded batch index, docs/stacks/vllm-rocm-aiter.md §A10.6); those "
                       "works carry kv_offset -1 here");
  if (fold_trim_seen) wl.stack_findings.push_back(StackFindingId::aiter_fold_trim);
  if (fold_trim_seen)
    wl.notes.push_back("head fold with q tiling: AITER's fold trim (num_qo_tiles - (qo_start/ratio) % uni_seqlen_qo - 1) "
                       "is non-zero for some tiles (docs/stacks/vllm-rocm-aiter.md §A10.3); the tile's rows lose KV entries they should see");
  return wl;
}

}  // namespace mlactl
