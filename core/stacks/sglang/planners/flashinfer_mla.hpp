// FlashInfer's MLA planner, MLAPlan (docs/stacks/sglang.md §S12), as a pure function: the
// host arrays SGLang's flashinfer MLA backend hands it in, every array it writes out.
// Upstream: flashinfer-ai/flashinfer/include/flashinfer/attention/scheduler.cuh@fb28d724
// (MLAPlan lines 1579-1848, packed_causal_kv_end 951-958, cost_function 939) and
// include/flashinfer/attention/heap.h@fb28d724 (MinHeap).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mlactl::sglang {

constexpr int kMlaCtaTileQ = 64;             // cta_tile_q: packed q rows per CTA
constexpr int kMlaMaxTotalNumWorks = 16384;  // max_total_num_works: entries allocated per work array
constexpr int kMlaDefaultNumSm = 132;        // cudaDevAttrMultiProcessorCount on H100 SXM / H200

struct MlaPlanInput {
  std::vector<int32_t> qo_indptr;  // [B+1] q tokens per request (prefix sum)
  std::vector<int32_t> kv_indptr;  // [B+1] the request's first KV page (copied into the works only)
  std::vector<int32_t> kv_len;     // [B]   kv_len_arr: KV tokens per request
  int num_heads = 0;               // H: q heads (packed rows per token)
  int num_sm = kMlaDefaultNumSm;
  bool causal = false;
  // false = packed_causal_kv_end before flashinfer #1533 (480d1ae0): no max(…, 0), so a
  // non-last causal tile of a request with qo_len > kv_len can get a negative KV end
  // (docs/stacks/sglang.md §S15.6)
  bool clamp_causal_kv_end = true;
};

// Everything MLAPlan computes, under its upstream names. Works are listed as upstream
// flattens them: cluster 0's works in the order they were assigned, then cluster 1's, ….
struct MlaPlan {
  // -- shape (plan_info.num_blks_x / num_blks_y) --
  int num_sm = 0;
  int avg_packed_qo_len = 0;  // Σ qo_len·H / B, integer division: picks cluster_size
  int cluster_size = 0;       // 2 if avg_packed_qo_len > 64 else 1 (CTAs per cluster)
  int num_clusters = 0;       // num_sm / cluster_size
  int cluster_tile_q = 0;     // 64 · cluster_size packed q rows per tile
  int64_t total_kv_lens = 0;  // Σ over every q tile of its effective KV length
  int kv_len_limit = 0;       // the KV chunk length; a tile with more KV is split

  // -- per work, total_num_works entries, cluster order --
  std::vector<int32_t> work_indptr;     // [num_clusters+1] cluster c runs works [work_indptr[c], work_indptr[c+1])
  std::vector<int32_t> q_indptr;        // qo_indptr of the work's request
  std::vector<int32_t> kv_indptr;       // kv_indptr of the work's request
  std::vector<int32_t> partial_indptr;  // first partial row of a split tile's chunk; -1: not split
  std::vector<int32_t> q_len;           // the request's qo_len
  std::vector<int32_t> kv_len;          // the request's kv_len (not the chunk's)
  std::vector<int32_t> q_start;         // first packed q row of the tile, within the request
  std::vector<int32_t> kv_start;        // the chunk's KV range [kv_start, kv_end) of the request;
  std::vector<int32_t> kv_end;          //   kv_start == kv_end: a zero-length tile (write_empty_o)
  std::vector<int32_t> work_cluster;    // mlactl: the cluster the work went to
  std::vector<int32_t> work_request;    // mlactl: the batch index of the work's request
  int total_num_works = 0;
  // upstream copies every work into arrays of max_total_num_works entries without a check:
  // more works overwrite the next array in the workspace (the works are still listed here)
  bool overflows_work_arrays = false;

  // -- per merge CTA: num_sm entries each as upstream, entries past merge_cta_counter 0 --
  // merge CTA m combines packed q rows [merge_packed_offset_start[m], …_end[m]) (batch-wide
  // packed rows, qo_indptr·H + row) from partial rows merge_partial_packed_offset_start[m] +
  // k·merge_partial_stride[m] for k while below merge_partial_packed_offset_end[m]
  std::vector<int32_t> merge_packed_offset_start;
  std::vector<int32_t> merge_packed_offset_end;
  std::vector<int32_t> merge_partial_packed_offset_start;
  std::vector<int32_t> merge_partial_packed_offset_end;
  std::vector<int32_t> merge_partial_stride;
  int merge_cta_counter = 0;
  int partial_o_nnz = 0;        // partial rows written by the split tiles' works
  int64_t partial_o_rows = 0;   // rows the float workspace holds: 2·num_clusters·cluster_tile_q (not checked upstream)

  // mlactl: each cluster's final cost in the heap (Σ cost_function over its works, in float)
  std::vector<float> cluster_cost;
};

// MLAPlan. Throws Error(kExitRefused) with upstream's text where upstream raises (a
// negative q length; merge_cta_counter > num_sm), invalid_input where upstream has no
// guard and would divide by zero or overflow its int arithmetic (an empty batch, no
// cluster, lengths of 2^30 or more) or for arrays of the wrong size.
MlaPlan flashinfer_mla_plan(const MlaPlanInput& in);

// cost_function(qo_len, kv_len) = 2·float(qo_len) + kv_len, in float (scheduler.cuh line 939).
float flashinfer_mla_cost(int qo_len, int kv_len);

// packed_causal_kv_end: the KV a causal q tile needs. The last tile gets kv_len; tile t
// otherwise kv_len − qo_len + ceil((t+1)·cluster_tile_q / group_size), at most kv_len and,
// with clamp_at_zero (flashinfer #1533), at least 0.
int64_t packed_causal_kv_end(int qo_len, int kv_len, int qo_tile_idx, int cluster_tile_q, int num_qo_tiles,
                             int group_size, bool clamp_at_zero = true);

// heap.h's MinHeap over (cluster, cost) pairs: pop = std::pop_heap + pop_back, insert =
// push_back + std::push_heap, compare(a, b) = a.second > b.second. The heap steps are
// libstdc++'s (bits/stl_heap.h: __push_heap, __adjust_heap, __pop_heap) written out, so
// which of several equal-cost clusters pops first does not depend on the library mlactl
// is built with.
class FlashinferMlaMinHeap {
 public:
  using Element = std::pair<int, float>;  // first: cluster, second: accumulated cost
  // [(0, 0.f), (1, 0.f), …, (capacity−1, 0.f)], taken as a heap as it stands (all ties)
  explicit FlashinferMlaMinHeap(int capacity);
  void insert(const Element& element);
  Element pop();  // the heap must not be empty
  const std::vector<Element>& elements() const { return heap_; }

 private:
  static bool compare(const Element& a, const Element& b) { return a.second > b.second; }
  void sift_up(std::ptrdiff_t hole, std::ptrdiff_t top, Element value);       // __push_heap
  void adjust_down(std::ptrdiff_t hole, std::ptrdiff_t len, Element value);   // __adjust_heap
  std::vector<Element> heap_;
};

}  // namespace mlactl::sglang
