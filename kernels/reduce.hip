// The reduce (docs/stacks/vllm-rocm-aiter.md §A7.1 stage 2): ONE launch for every
// route, two kernels behind it — mla_reduce_few_kernel<NMAX> for tiles of <= 32
// splits with v_dim 512, mla_reduce_kernel for the rest. Written once for hipcc
// and nvcc against kernels/gpu.hpp.
#include <algorithm>

#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/reduce_combine.cuh"

namespace mla {
namespace {

// Reduce (§A7.1 stage 2). Grid: x = tile, y strides over (row, head, column
// slice) of the tile:
//   LSE = M + ln Σ exp(lse_k − M) (+inf when the sum is 0 or NaN, as AITER);
//   out = Σ exp(lse_k − LSE) · partial[rpm[k] + r].
// The block's 256 threads are `groups` split-groups × (256 / groups) columns;
// groups grows with the split count (reduce_split_groups), so a tile with
// hundreds of splits is read by many threads in parallel and a 2-split tile
// costs one load per thread. Every wave computes the LSE itself (no barrier).
constexpr int kReduceThreads = 256;

// Reduce tile t's splits [s, e) and final rows [q0, q0 + rows). False (the block
// returns) for an unsplit tile (stage 1 wrote it), a tile with nothing to write,
// or one whose maps are out of range or that has more than max_splits splits
// (recorded once as kErrReduceMap). Every partial map entry is checked by the
// block's threads together (one thread walking 256 splits was a chain of 256
// loads in every block); all threads must call it (a block-wide barrier).
struct ReduceTile {
  int32_t s, e, q0, rows;
};
__device__ inline bool reduce_tile(const ReduceParams& p, int t, int max_splits, ReduceTile* out) {
  const int32_t s = p.reduce_indptr[t], e = p.reduce_indptr[t + 1];
  if (e - s <= 1) return false;
  const int32_t q0 = p.reduce_final_map[2 * t], q1 = p.reduce_final_map[2 * t + 1];
  if (q0 < 0) return false;  // {-1, -1}
  const int rows = q1 - q0;
  bool bad = s < 0 || e > p.num_partial_map || rows < 0 || q1 > p.num_q_rows || e - s > max_splits;
  for (int32_t k = s + int32_t(threadIdx.x); !bad && k < e; k += int32_t(blockDim.x)) {
    const int32_t r0 = p.reduce_partial_map[k];
    bad = r0 < 0 || int64_t(r0) + rows > p.num_partial_rows;
  }
  if (__syncthreads_or(bad)) {
    if (threadIdx.x == 0 && blockIdx.y == 0) record_error(p.error, kErrReduceMap, t, q0);
    return false;
  }
  *out = ReduceTile{s, e, q0, rows};
  return true;
}

__global__ void __launch_bounds__(kReduceThreads) mla_reduce_kernel(ReduceParams p) {
  __shared__ float scratch[kReduceThreads];
  grid_dependency_wait();  // stage 1's partials (launched with gpu_launch_dependent)
  const int t = blockIdx.x, tid = threadIdx.x;
  ReduceTile tile;
  if (!reduce_tile(p, t, INT32_MAX, &tile)) return;  // any number of splits
  const int32_t s = tile.s, e = tile.e, q0 = tile.q0, rows = tile.rows;
  const int heads = p.heads, v_dim = p.v_dim;
  const int groups = reduce_split_groups(e - s), cols = kReduceThreads / groups;
  const int slices = (v_dim + cols - 1) / cols;
  const int group = tid / cols, lane = tid % warp_size();
  const int items = rows * heads * slices;
  for (int item = blockIdx.y; item < items; item += gridDim.y) {
    const int slice = item % slices, pair = item / slices;
    const int r = pair / heads, h = pair % heads;
    const float lse = combine_lse_wave(p, s, e, r, h, lane);
    const int64_t out_row = (int64_t(q0) + r) * heads + h;
    if (tid == 0 && slice == 0 && p.lse) p.lse[out_row] = lse;

    const int c = slice * cols + tid % cols;
    float acc = c < v_dim ? combine_chain(p, s + group, e, groups, r, h, lse, c) : 0.0f;
    if (groups > 1) {
      __syncthreads();  // the previous item is done with scratch
      scratch[tid] = acc;
      __syncthreads();
      if (group == 0)
        for (int g = 1; g < groups; ++g) acc += scratch[g * cols + tid];
    }
    if (group == 0 && c < v_dim) p.out[out_row * v_dim + c] = encode_out(p.out_type, acc);
  }
}

// Reduce for tiles of at most kFewSplits splits (M1-M3, C1: 2-32): one
// (row, head) pair per 128 threads, 4 columns (float4) per thread; every thread
// computes the pair's LSE and weights itself from the n lse values (the same
// addresses across the pair's threads: broadcast loads), so a pair costs two
// rounds of independent loads and no barrier. The general kernel above (one item
// per block, the weights recomputed per split) was too slow for C1's 2-split tiles
// (docs/bench_notes.md, "Moved from kernel comments").
// NMAX (2, 4, ..., 32) bounds the tile's splits and sizes the per-thread arrays:
// one kernel for 32 held 106 registers (2 blocks per SM) and walked 32
// predicated entries per loop for C1's 2 splits (docs/bench_notes.md).
constexpr int kFewSplits = kReduceFewSplits;
template <int NMAX>
__global__ void __launch_bounds__(kReduceThreads) mla_reduce_few_kernel(ReduceParams p) {
  grid_dependency_wait();  // stage 1's partials (launched with gpu_launch_dependent)
  const int t = blockIdx.x, tid = threadIdx.x;
  ReduceTile tile;
  if (!reduce_tile(p, t, NMAX, &tile)) return;
  const int32_t s = tile.s, e = tile.e, q0 = tile.q0, rows = tile.rows;
  const int heads = p.heads, n = e - s;
  constexpr int kPairThreads = 128;  // 512 columns / 4
  const int half = tid / kPairThreads, c4 = (tid % kPairThreads) * 4;
  const int pairs = rows * heads;
  for (int pair = blockIdx.y * 2 + half; pair < pairs; pair += gridDim.y * 2)
    combine_pair_few<NMAX>(p, s, n, q0, pair / heads, pair % heads, c4);
}

}  // namespace

bool launch_reduce(const ReduceParams& p, ReduceRan* ran, std::string* error) {
  *ran = ReduceRan{};
  if (p.num_tiles <= 0 || p.max_items <= 0) return true;  // no split tile: nothing to combine
  if (reduce_uses_few_kernel(p)) {
    // two pairs per block per pass; ~2048 blocks in all (the kernel strides)
    const int64_t pairs = int64_t(p.max_rows) * p.heads;
    const int64_t want = std::max<int64_t>(1, 2048 / std::max<int32_t>(1, p.num_tiles));
    const unsigned by = unsigned(std::max<int64_t>(1, std::min<int64_t>({(pairs + 1) / 2, want, 65535})));
    const dim3 grid(unsigned(p.num_tiles), by), block(kReduceThreads);
    const int nmax = p.max_splits <= 2    ? 2
                     : p.max_splits <= 4  ? 4
                     : p.max_splits <= 8  ? 8
                     : p.max_splits <= 16 ? 16
                                          : kFewSplits;
    auto kernel = nmax == 2    ? mla_reduce_few_kernel<2>
                  : nmax == 4  ? mla_reduce_few_kernel<4>
                  : nmax == 8  ? mla_reduce_few_kernel<8>
                  : nmax == 16 ? mla_reduce_few_kernel<16>
                               : mla_reduce_few_kernel<kFewSplits>;
    if (!check(gpu_launch_dependent(kernel, grid, block, p), "reduce launch", error)) return false;
    *ran = ReduceRan{ReduceKind::few_splits, "mla_reduce_few_kernel<" + std::to_string(nmax) + ">",
                     int64_t(grid.x) * grid.y, kReduceThreads};
    return true;
  }
  const unsigned blocks_y = unsigned(std::min<int64_t>(p.max_items, 65535));  // grid y limit; the kernel strides
  if (!check(gpu_launch_dependent(mla_reduce_kernel, dim3(unsigned(p.num_tiles), blocks_y), dim3(kReduceThreads), p),
             "reduce launch", error))
    return false;
  *ran = ReduceRan{ReduceKind::general, "mla_reduce_kernel", int64_t(p.num_tiles) * blocks_y, kReduceThreads};
  return true;
}

}  // namespace mla
