// GPU executor: runs the kernel contract (kernels/executor.hpp) with the stage-1
// and reduce kernels of kernels/mla_decode.hip. Built with any backend; without
// one (MLACTL_GPU=none) it reports "built without a GPU backend".
#pragma once
#include <memory>
#include <string>

#include "kernels/executor.hpp"

namespace mlactl {

// True when this build has a GPU backend and a device is visible; otherwise
// false with the reason in *why (for the CLI's skip/exit-4 message).
bool gpu_available(std::string* why = nullptr);
// Name of device 0 ("NVIDIA H200", "AMD Instinct MI300X (gfx942:...)"), or "" when none.
std::string gpu_device_name();
// Physical wave width of device 0 as the runtime reports it (0 when none).
int gpu_device_warp_size();

class GpuExecutor : public Executor {
 public:
  // force_scalar: always run the CUDA-core stage-1 kernel, even where the
  // tensor-core one applies (tests compare the two; AMD builds always use it).
  explicit GpuExecutor(bool force_scalar = false);
  ~GpuExecutor() override;
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  std::string name() const override;  // "gpu:<device name>"
  // Copies the inputs (and the caller's poisoned outputs) to the device, runs
  // stage 1 then the reduce, copies the outputs back. Any runtime failure, view
  // this build cannot run, or device-side range error gives ok = false.
  ExecResult run(const ExecArgs& args) override;

 private:
  struct DeviceState;                  // grow-only device buffers, reused across runs
  std::unique_ptr<DeviceState> state_;
  std::string device_name_;
  bool force_scalar_ = false;
};

}  // namespace mlactl
