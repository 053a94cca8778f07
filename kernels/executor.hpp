// The kernel contract (docs/design.md §5): one stage-1 pass over a work list and one reduce.
// CPU and GPU executors implement exactly this; `kernels/` sees only core's
// work-list and input types.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "core/worklist.hpp"
#include "kernels/stage1_kernel.hpp"

namespace mlactl {

// Everything a launch reads and writes. Host pointers; a GPU executor copies them.
struct ExecArgs {
  const WorkList* work = nullptr;
  KernelView view;                         // the kernel's view (may differ from work->planned_view)
  const int32_t* kv_indices = nullptr;     // KV index list the works' kv ranges point into (token slots)
  int64_t num_kv_indices = 0;
  // q: [num_q_rows, view.heads, view.head_dim], encoded in view.q_dtype
  //    (uint16 bits for bf16/fp16, uint8 for fp8), contiguous.
  const void* q = nullptr;
  int64_t num_q_rows = 0;
  float q_scale = 1.0f;                    // per-tensor dequant scale of fp8 q
  // KV cache: num_slots rows of kv_row_stride elements, encoded in view.kv_dtype.
  // The kernel reads slot s at s * view.head_dim (its own stride): a stride
  // mismatch (seed 002) reads the wrong rows; reads past the end are a device error.
  const void* kv = nullptr;
  int64_t num_slots = 0;
  int kv_row_stride = 576;
  float kv_scale = 1.0f;
  Fp8Flavor fp8_flavor = Fp8Flavor::e4m3fn;
  float softmax_scale = 0.0f;
  DType out_dtype = DType::bf16;
  // outputs (poisoned with NaN by the caller before the run)
  uint16_t* out = nullptr;                 // [num_q_rows, view.heads, view.v_dim] in out_dtype bits
  float* lse = nullptr;                    // [num_q_rows, view.heads] natural log
  float* partial_out = nullptr;            // [work->num_partial_rows, view.heads, view.v_dim]
  float* partial_lse = nullptr;            // [work->num_partial_rows, view.heads]
};

struct ExecResult {
  bool ok = true;
  std::string error;                       // device/runtime error text (exit 4)
  double stage1_ms = 0, reduce_ms = 0;
  // What ran, as the launch sites reported it (GpuExecutor; never a prediction): the
  // stage-1 kernel, its schedule, precision and launch shape, and the reduce. Empty
  // when no kernel ran: the CPU executor (its arithmetic is the contract's, fp32), or
  // a run refused before its launch.
  std::optional<mla::Stage1Ran> stage1;
  std::optional<mla::ReduceRan> reduce;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;    // "cpu" | "gpu:<device name>"
  virtual ExecResult run(const ExecArgs& args) = 0;
};

}  // namespace mlactl
