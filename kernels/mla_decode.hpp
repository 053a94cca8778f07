// Host interface of kernels/mla_decode.hip: the stage-1 and reduce launches over
// device pointers. Plain types only, so the executor needs no kernel source.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MLA_SHARED_FN __host__ __device__ inline constexpr
#else
#define MLA_SHARED_FN inline constexpr
#endif

namespace mla {

enum class ElemType : int32_t { bf16 = 0, fp16 = 1, fp8 = 2 };

// The stage-1 kernels: all implement the same contract (kernels/README.md).
//   wgmma     NVIDIA sm_90a builds on a Hopper device: warpgroup MMA, producer warpgroup;
//   mma       matrix cores through kernels/fragment.hpp: mma.sync on NVIDIA, MFMA on AMD;
//   cuda_core every view and every vendor.
// Asking for one that does not apply to a view falls back down that order.
// `automatic` takes the first that applies, except that fp8 KV skips wgmma and
// AMD skips mma (not yet run on AMD hardware): stage1_kernel_for.
enum class Stage1Kernel : int32_t { automatic = 0, wgmma = 1, mma = 2, cuda_core = 3 };
// (inline: host code of builds without a GPU backend names kernels too)
inline const char* stage1_kernel_name(Stage1Kernel k) {
  switch (k) {
    case Stage1Kernel::automatic: return "automatic";
    case Stage1Kernel::wgmma: return "wgmma";
    case Stage1Kernel::mma: return "mma";
    case Stage1Kernel::cuda_core: return "cuda_core";
  }
  return "unknown";
}
// The kernel a name (as stage1_kernel_name prints it) stands for; unknown names
// are automatic (the CLI validates names first).
inline Stage1Kernel stage1_kernel_from_name(const std::string& name) {
  for (Stage1Kernel k : {Stage1Kernel::wgmma, Stage1Kernel::mma, Stage1Kernel::cuda_core})
    if (name == stage1_kernel_name(k)) return k;
  return Stage1Kernel::automatic;
}

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
  int64_t max_pairs = 0;                 // max over works of (qo_end - qo_start) * heads;
                                         // picks how many m16 tiles share a KV tile (0: by heads)
};

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

// The stage-1 kernel launch_stage1 runs for these parameters on this build and
// device (never `automatic`).
Stage1Kernel stage1_kernel_for(const Stage1Params& p);

// Enqueue on the default stream; false (with text) when the launch is refused.
bool launch_stage1(const Stage1Params& p, std::string* error);
bool launch_reduce(const ReduceParams& p, std::string* error);
// Device-to-device copy of `bytes` (16-byte vector loads/stores; a tail is copied
// bytewise), enqueued on the default stream: the bandwidth roofline of `bench` and
// the replication of its KV copies.
bool launch_device_copy(void* dst, const void* src, size_t bytes, std::string* error);

}  // namespace mla
