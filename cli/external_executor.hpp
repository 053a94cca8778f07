// The external-executor protocol (docs/executor-protocol.md): mlactl writes one case
// directory (q as the routed kernel takes it, the KV cache in the stack's layout, the
// route's metadata and mlactl's work list, a versioned manifest), runs a user command on
// it, and reads back out.npy (and lse.npy). The comparison, NaN-poison and unwritten-row
// checks are then the same as for mlactl's own executors (cli/pipeline.cpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"
#include "kernels/executor.hpp"

namespace mlactl::cli {

constexpr int kExecutorProtocolVersion = 1;
constexpr double kDefaultExecutorTimeoutS = 300;

// `bench --peer`: the executor times its own kernel (docs/executor-protocol.md, "Timing"):
// warm-up calls, then `iters` calls each timed with device events, the KV cache rotated over
// `kv_copies` copies as mlactl's own bench rotates it.
struct ExternalBench {
  int warmup = 5;
  int iters = 30;
  int kv_copies = 1;
};

// --executor CMD, --executor-timeout S, --executor-keep DIR
struct ExternalSpec {
  std::string command;         // run by /bin/sh as: CMD "<case dir>"
  double timeout_s = kDefaultExecutorTimeoutS;
  std::string keep_dir;        // write the case here and keep it (empty: a temporary directory, removed)
  std::optional<ExternalBench> bench;  // set: the manifest asks for timings (result.json timing_ms)
};

// What the case directory describes besides the executor's arguments.
struct ExternalCase {
  const Batch* batch = nullptr;
  const RoutedBatch* routed = nullptr;
  const RoutePlan* plan = nullptr;
  const Inputs* inputs = nullptr;
  const ViewLayout* layout = nullptr;
};

class ExternalExecutor : public Executor {
 public:
  ExternalExecutor(ExternalSpec spec, ExternalCase c) : spec_(std::move(spec)), case_(c) {}
  // "external:<the name it gives in result.json>", or "external" before it ran
  std::string name() const override;
  // Writes the case, runs the command, reads out.npy (rounded to the output dtype into
  // args.out) and lse.npy when present (into args.lse). Every protocol failure is
  // ok = false with a sentence naming the file (exit 4).
  ExecResult run(const ExecArgs& args) override;
  // The executor said (result.json "status": "unsupported") it does not run this route.
  const std::optional<std::string>& unsupported() const { return unsupported_; }
  bool wrote_lse() const { return wrote_lse_; }
  // result.json "p_rounding": P rounded once to this type before P·V (absent: not declared)
  const std::optional<DType>& p_rounding() const { return p_rounding_; }
  // spec.bench: the executor's timed calls (result.json timing_ms), milliseconds each
  const std::vector<float>& timing_ms() const { return timing_ms_; }
  // out.npy held only NaN. The caller decides: a protocol failure (exit 4) unless mlactl's
  // own CPU executor also writes only NaN on the same work list (a kernel that reads
  // poison everywhere, as seed 002's mis-strided route).
  bool all_nan() const { return all_nan_; }
  std::string all_nan_error() const;

 private:
  ExternalSpec spec_;
  ExternalCase case_;
  std::string reported_name_;
  std::optional<std::string> unsupported_;
  bool wrote_lse_ = false;
  std::optional<DType> p_rounding_;
  std::vector<float> timing_ms_;
  bool all_nan_ = false;
  std::string stderr_tail_;
};

}  // namespace mlactl::cli
