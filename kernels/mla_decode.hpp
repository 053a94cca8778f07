// Host interface of the MLA decode kernels: the stage-1 launch (kernels/launch.hip,
// which dispatches to stage1_wgmma.hip, stage1_mma.hip, stage1_cuda_core.hip), the
// reduce (reduce.hip) and the device copy (device_copy.hip), over device pointers.
// Plain types only, so the executor and host code need no kernel source.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/stage1_kernel.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MLA_SHARED_FN __host__ __device__ inline constexpr
#else
#define MLA_SHARED_FN inline constexpr
#endif

namespace mla {

enum class ElemType : int32_t { bf16 = 0, fp16 = 1, fp8 = 2 };

// Bits of the device error word (Stage1Params::error[0]); the kernels record a
// malformed work list or an out-of-range read here instead of faulting.
enum DeviceErrorBit : int32_t {
  kErrWorkIndptr = 1 << 0,    // work_indptr not monotonic or past the work list
  kErrQRows = 1 << 1,         // a work's q rows outside the q tensor
  kErrKvRange = 1 << 2,       // a work's kv range outside the kv index list
  kErrKvSlot = 1 << 3,        // a KV slot row outside the KV cache
  kErrPartialRows = 1 << 4,   // partial rows outside the partial buffer
  kErrReduceMap = 1 << 5,     // reduce_indptr / final map / partial map out of range
  kErrStall = 1 << 6,         // a pipeline wait gave up (a kernel bug: reported, never a hang)
};
// error[0]: OR of the bits; error[1]: first offending work (or tile) index;
// error[2]: the offending value (slot, row, ...). error[1] starts at -1.
constexpr int kDeviceErrorWords = 3;
std::string describe_device_error(const int32_t* words);

struct ReduceParams {
  const int32_t* reduce_indptr = nullptr;     // [num_tiles + 1]
  int32_t num_tiles = 0;
  int64_t max_items = 0;                      // max over split tiles of reduce_items() (grid size)
  int32_t max_splits = 0;                     // max over tiles of the split count
  int32_t max_rows = 0;                       // max over split tiles of q1 - q0
  const int32_t* reduce_final_map = nullptr;  // [num_tiles][2]
  const int32_t* reduce_partial_map = nullptr;
  int64_t num_partial_map = 0;
  const float* partial_out = nullptr;
  const float* partial_lse = nullptr;
  int64_t num_partial_rows = 0;
  int32_t heads = 16, v_dim = 512;
  ElemType out_type = ElemType::bf16;
  uint16_t* out = nullptr;
  float* lse = nullptr;
  int64_t num_q_rows = 0;
  int32_t* error = nullptr;
};

// Reduce launches: mla_reduce_few_kernel<NMAX> (one pair per 128 threads, float4
// columns) for plans whose tiles have at most kReduceFewSplits splits, v_dim 512
// and int32 partial indices; mla_reduce_kernel otherwise.
constexpr int kReduceFewSplits = 32;
inline bool reduce_uses_few_kernel(const ReduceParams& p) {
  return p.max_splits <= kReduceFewSplits && p.v_dim == 512 && p.num_partial_rows * p.heads < (int64_t(1) << 31);
}

// Stage1Params::block_clock's words per block: kSm, kEntry, kEnd, then the phase marks
// of the wgmma kernels' first chunk (0 where a kernel does not mark).
enum BlockClockWord : int { kClockSm = 0, kClockEntry = 1, kClockEnd = 2, kClockFirstIssue = 3, kClockQStaged = 4,
                            kClockFirstTile = 5, kClockTilesDone = 6, kClockMet = 7, kClockCombined = 8,
                            kClockOutputs = 9 };
constexpr int kBlockClockWords = 10;
constexpr int kBlockClockMarks = kBlockClockWords - kClockFirstIssue;

struct Stage1Params {
  const int32_t* work_indptr = nullptr;  // [num_workgroups + 1]
  int32_t num_workgroups = 0;
  const int32_t* work_info = nullptr;    // [num_works][8]
  int64_t num_works = 0;
  const int32_t* kv_indices = nullptr;
  int64_t num_kv_indices = 0;
  const void* q = nullptr;               // [num_q_rows][heads][head_dim]
  int64_t num_q_rows = 0;
  ElemType q_type = ElemType::bf16;
  float q_scale = 1.0f;                  // fp8 q only
  const void* kv = nullptr;              // kv_elements elements
  int64_t kv_elements = 0;               // num_slots * kv_row_stride
  ElemType kv_type = ElemType::bf16;
  float kv_scale = 1.0f;                 // fp8 KV only
  // Every q element times q_f16_scale (a power of two) is exact in fp16 (fp8 and
  // fp16 q always, scale 1; bf16 q as scanned on the host, scaled so its largest
  // magnitude is in [2^14, 2^15)): the wgmma kernel then runs fp8 KV with fp16
  // operands, q scaled, the scores times 1 / q_f16_scale (exact: powers of two).
  bool q_f16_exact = false;
  float q_f16_scale = 1.0f;
  bool fp8_fnuz = false;
  int32_t heads = 16, head_dim = 576, v_dim = 512;
  bool causal = true;
  float softmax_scale = 1.0f;
  ElemType out_type = ElemType::bf16;
  uint16_t* out = nullptr;               // [num_q_rows][heads][v_dim]
  float* lse = nullptr;                  // [num_q_rows][heads]
  float* partial_out = nullptr;          // [num_partial_rows][heads][v_dim]
  float* partial_lse = nullptr;          // [num_partial_rows][heads]
  int64_t num_partial_rows = 0;
  int32_t* error = nullptr;              // kDeviceErrorWords
  Stage1Kernel kernel = Stage1Kernel::automatic;  // which stage-1 kernel (tests run each)
  // The precision modes asked (kernels/stage1_kernel.hpp; automatic: the path's own).
  // fp8 q with e4m3fn KV on the transposed wgmma kernel: e4m3 or fp16 Q·Kᵀ;
  Fp8QkMma fp8_qk = Fp8QkMma::automatic;
  // on the raw-code fp8 paths, e4m3 or fp16 P·V;
  Fp8PvMma fp8_pv = Fp8PvMma::automatic;
  // e4m3fn KV with Q·Kᵀ on fp16 wgmma: codes converted in registers or staged;
  Fp8Convert fp8_convert = Fp8Convert::automatic;
  // how P enters P·V on the 16-bit-KV wgmma kernels: hi + lo parts or once.
  PvPrecision pv_precision = PvPrecision::automatic;
  int64_t max_pairs = 0;                 // max over works of (qo_end - qo_start) * heads;
                                         // picks how many m16 tiles share a KV tile (0: by heads)
  // Blocks per workgroup (set by the row-major wgmma launch only, to
  // wgmma_pair_tiles: kernels/select_stage1.hpp; 1 elsewhere): block blockIdx.x runs
  // workgroup blockIdx.x / pair_tiles, and of each of its works only the 64-pair
  // chunks blockIdx.x % pair_tiles + pair_tiles * i, as FlashMLA's grid of (SM part,
  // 64-head tile). The work list is unchanged: the blocks of one workgroup write
  // disjoint (row, head) pairs of the same works.
  int32_t pair_tiles = 1;
  // bench --block-times: [grid][kBlockClockWords] = SM id, globaltimer (ns) at this
  // block's entry and end, then the wgmma kernels' phase marks (BlockClockWord);
  // written by the wgmma kernels only, nullptr: not recorded.
  uint64_t* block_clock = nullptr;
};


// Reduce work decomposition, shared by the kernel and the launch: a block's 256
// threads are split-groups x columns; more splits, more groups.
MLA_SHARED_FN int reduce_split_groups(int splits) {
  return splits >= 32 ? 8 : splits >= 16 ? 4 : splits >= 8 ? 2 : 1;
}
// Blocks' worth of items one tile needs: rows x heads x column slices.
inline int64_t reduce_items(int rows, int heads, int v_dim, int splits) {
  const int cols = 256 / reduce_split_groups(splits);
  return int64_t(rows) * heads * ((v_dim + cols - 1) / cols);
}

// Limits of this kernel build; the executor refuses views outside them.
constexpr int kMaxHeadDim = 576;
constexpr int kMaxVDim = 512;
constexpr int kHeadDimMultiple = 8;

struct Stage1Device;  // kernels/select_stage1.hpp
// The build and device launch_stage1 selects for: this build's vendor, whether it
// has the sm_90a kernels, the current device's compute capability (queried once).
Stage1Device current_stage1_device();

// Enqueue on the default stream the stage-1 kernel select_stage1(p,
// current_stage1_device()) picks; *ran says what the launch site enqueued (unset when
// no workgroup: nothing is launched) (kernel,
// schedule, precision, instance, launch shape). False (with text) when the launch is
// refused (select_stage1's refusal included) or fails.
bool launch_stage1(const Stage1Params& p, std::optional<Stage1Ran>* ran, std::string* error);
// *ran: which reduce kernel was enqueued, and its grid (ReduceKind::none: no split tile).
bool launch_reduce(const ReduceParams& p, ReduceRan* ran, std::string* error);
// Device-to-device copy of `bytes` (16-byte vector loads/stores; a tail is copied
// bytewise), enqueued on the default stream: the bandwidth roofline of `bench` and
// the replication of its KV copies.
bool launch_device_copy(void* dst, const void* src, size_t bytes, std::string* error);

}  // namespace mla
