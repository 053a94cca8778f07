// The CPU executor: the kernel contract of docs/design.md §5 run on the host, exactly as a
// device kernel would run it (reference aiter_mla_metadata.md §7.1): it consumes
// the work list and nothing else, so a wrong work list gives a wrong answer.
#pragma once
#include <string>

#include "kernels/executor.hpp"

namespace mlactl {

class CpuExecutor : public Executor {
 public:
  // threads <= 0: all cores.
  explicit CpuExecutor(int threads = 0) : threads_(threads) {}
  std::string name() const override { return "cpu"; }
  // Stage 1 over every workgroup's works (parallel over workgroups), then the
  // reduce over reduce_indptr / reduce_final_map / reduce_partial_map. A read
  // outside the KV buffer, the index list, q or the partial buffers is a device
  // error: ok = false and `error` names the workgroup, work and index.
  ExecResult run(const ExecArgs& args) override;

 private:
  int threads_;
};

}  // namespace mlactl
