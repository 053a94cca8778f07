// GPU executor: runs the kernel contract (kernels/executor.hpp) with the stage-1
// and reduce launches of kernels/mla_decode.hpp. Built with any backend; without
// one (MLACTL_GPU=none) it reports "built without a GPU backend".
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/select_stage1.hpp"

namespace mlactl {

// True when this build has a GPU backend and a device is visible; otherwise
// false with the reason in *why (for the CLI's skip/exit-4 message).
bool gpu_available(std::string* why = nullptr);
// Name of device 0 ("NVIDIA H200", "AMD Instinct MI300X (gfx942:...)"), or "" when none.
std::string gpu_device_name();
// Physical wave width of device 0 as the runtime reports it (0 when none).
int gpu_device_warp_size();
// Multiprocessors (NVIDIA SMs, AMD CUs) of device 0 (0 when none): what the
// planner's platform.num_cu should be to plan for this device.
int gpu_device_multiprocessors();
// What select_stage1 decides with in this build on device 0: the vendor, the
// sm_90a kernels, the compute capability (vendor none without a backend or device).
mla::Stage1Device gpu_stage1_device();
// Whether every q element times *scale (a power of two it picks) is exact in fp16:
// Stage1Params::q_f16_exact and q_f16_scale as the executor sets them (q: `bytes`
// of q_dtype storage). gpu_tests predicts the wgmma kernel's fp8 path with it.
bool q_exact_in_fp16(DType q_dtype, const void* q, size_t bytes, float* scale);

// Per-iteration device-event times of GpuExecutor::bench (milliseconds).
struct BenchResult {
  bool ok = true;
  std::string error;             // runtime / device error text (exit 4)
  int warmup = 0, iters = 0;
  int kv_copies = 1;             // KV buffer copies rotated (one per iteration, round robin)
  size_t kv_copy_bytes = 0;      // bytes of one copy
  // What the launches enqueued, as their launch sites reported it (every timed launch
  // the same: bench fails otherwise); empty when the bench failed before launching.
  std::optional<mla::Stage1Ran> stage1;
  mla::ReduceRan reduce;
  // select_stage1's one line on the choice: what was asked, what applies, and on the
  // transposed wgmma kernel's fp8 paths which operands run on e4m3 wgmma.
  std::string stage1_why;
  std::vector<float> stage1_ms;  // stage 1 alone, per timed iteration
  std::vector<float> total_ms;   // stage 1 + reduce, per timed iteration
  // set_block_clock: one more stage-1 launch after the timed ones, each block's SM and
  // its entry and end on the device clock (µs after the first block's entry), by block
  // index; empty where not asked or the kernel that ran does not record (only wgmma).
  struct BlockClock {
    int64_t block = 0;
    int64_t workgroup = 0;  // the workgroup the block ran (mla::wgmma_pair_tiles' mapping)
    int sm = 0;
    double start_us = 0, end_us = 0;
    // The wgmma kernels' phase marks of their first chunk (mla::BlockClockWord
    // kClockFirstIssue .. kClockOutputs, in that order), µs after this block's entry;
    // empty where the kernel does not mark that phase.
    std::array<std::optional<double>, mla::kBlockClockMarks> marks_us;
  };
  // marks_us' phases as bench names them: JSON keys and the text's words (in order).
  static constexpr const char* kMarkKeys[mla::kBlockClockMarks] = {
      "first_issue", "q_staged", "first_tile", "tiles_done", "met", "combined", "outputs"};
  static constexpr const char* kMarkNames[mla::kBlockClockMarks] = {
      "first KV copy issued", "q staged", "first tile landed", "tiles done", "warpgroups met", "combined",
      "outputs written"};
  std::vector<BlockClock> block_clock;
};

// Device-to-device copy roofline: `bytes` read and `bytes` written per copy,
// median of `iters` event-timed copies after warm-up.
struct CopyRoofline {
  bool ok = true;
  std::string error;
  size_t bytes = 0;              // bytes copied (traffic counted as 2x)
  int iters = 0;
  double median_ms = 0;
  double gbps = 0;               // 2 * bytes / median time
};
CopyRoofline gpu_copy_roofline(size_t bytes, int iters = 10);

class GpuExecutor : public Executor {
 public:
  // kernel: which stage-1 kernel to ask for (automatic: the fastest that applies; a
  // named kernel that cannot serve a view is refused, never substituted:
  // mla::select_stage1). ExecResult::stage1 says what ran.
  explicit GpuExecutor(mla::Stage1Kernel kernel = mla::Stage1Kernel::automatic);
  ~GpuExecutor() override;
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  std::string name() const override;  // "gpu:<device name>"
  // Copies the inputs (and the caller's poisoned outputs) to the device, runs
  // stage 1 then the reduce, copies the outputs back. Any runtime failure, view
  // this build cannot run, or device-side range error gives ok = false.
  ExecResult run(const ExecArgs& args) override;

  // Timing entry point (mlactl bench): uploads the inputs once, with `kv_copies`
  // copies of the KV cache, then runs `warmup` + `iters` launches of stage 1 and
  // the reduce, iteration i reading KV copy i % kv_copies (so L2 does not hold the
  // KV between runs when the copies together exceed it), each timed with device
  // events (stage 1 alone, stage 1 + reduce). The last iteration's outputs are
  // copied back into args.out / lse; a device error word gives ok = false.
  BenchResult bench(const ExecArgs& args, int warmup, int iters, int kv_copies);

  // The precision modes (kernels/stage1_kernel.hpp); automatic: the path's own. A named
  // mode the chosen path cannot run makes the launch fail with the reason.
  void set_fp8_qk(mla::Fp8QkMma mode) { fp8_qk_ = mode; }
  void set_fp8_pv(mla::Fp8PvMma mode) { fp8_pv_ = mode; }
  void set_fp8_convert(mla::Fp8Convert convert) { fp8_convert_ = convert; }
  void set_pv_precision(mla::PvPrecision precision) { pv_precision_ = precision; }
  // bench only: after the timed runs, one stage-1 launch that records each block's SM
  // and its start and end (BenchResult::block_clock; the wgmma kernels record).
  void set_block_clock(bool on) { block_clock_ = on; }

  struct DeviceState;                  // grow-only device buffers, reused across runs (opaque)

 private:
  // The options above that stage 1 reads, onto a launch's params (run and bench alike).
  void apply_stage1_options(mla::Stage1Params& s1) const {
    s1.fp8_qk = fp8_qk_;
    s1.fp8_pv = fp8_pv_;
    s1.fp8_convert = fp8_convert_;
    s1.pv_precision = pv_precision_;
  }
  std::unique_ptr<DeviceState> state_;
  std::string device_name_;
  [[maybe_unused]] mla::Stage1Kernel kernel_ = mla::Stage1Kernel::automatic;  // unused without a GPU backend
  mla::Fp8QkMma fp8_qk_ = mla::Fp8QkMma::automatic;  // the precision modes (apply_stage1_options)
  mla::Fp8PvMma fp8_pv_ = mla::Fp8PvMma::automatic;
  mla::Fp8Convert fp8_convert_ = mla::Fp8Convert::automatic;
  mla::PvPrecision pv_precision_ = mla::PvPrecision::automatic;
  bool block_clock_ = false;
};

}  // namespace mlactl
