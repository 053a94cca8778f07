// The one pipeline run, check and bench share: route -> plan -> position audit ->
// execute (CPU or GPU) -> compare with the reference computed from the batch alone.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/builder.hpp"
#include "core/captured.hpp"
#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/position_audit.hpp"
#include "core/reference.hpp"
#include "core/route_plan.hpp"
#include "core/router.hpp"
#include "kernels/executor.hpp"

namespace mlactl::cli {

struct RunOptions {
  std::string backend = "auto";  // auto | cpu | gpu
  std::string kernel;            // forced route
  std::string planner;           // planner override
  bool cross_check = false;      // also run the CPU executor on the same work list and diff
  bool use_captured = false;     // execute the batch's captured metadata instead of mlactl's
  std::optional<double> atol, rtol, cos_tol;
  int threads = 0;
  std::string dump_dir;
  int64_t max_listed = 20;
};

struct RunOutcome {
  std::string status = "passed";  // passed | incorrect | refused | failed | skipped
  int exit_code = 0;
  std::string message;            // one line: why (refusal text, device error, skip reason)
  RouteDecision route;
  std::optional<RoutePlan> plan;
  std::optional<PositionAudit> audit;
  std::optional<CompareReport> compare;
  std::optional<CompareReport> cross;  // GPU vs CPU on the same work list
  std::optional<CapturedDiff> captured;  // captured arrays vs what mlactl builds
  std::string executor;
  double ms_metadata = 0, ms_plan = 0, ms_inputs = 0, ms_reference = 0, ms_execute = 0, ms_compare = 0;
  DType out_dtype = DType::bf16;
};

// The kernel contract's arguments for a plan over output buffers it owns, poisoned
// (NaN) so rows no work writes stay visible: run's and bench's one way to call an
// executor. The partial buffers cover what the works address (a corrupted work
// list may address more rows than the plan sized).
struct ExecCall {
  std::vector<uint16_t> out;  // kernel-layout output bits
  std::vector<float> lse, partial_out, partial_lse;
  WorkList work;
  ExecArgs args;
};
std::unique_ptr<ExecCall> make_exec_call(const Batch& b, const RoutePlan& plan, const Inputs& in, const ViewLayout& layout,
                                         const EncodedTensor& kq);

// Backend choice: "auto" picks the GPU when one is present. Returns nullptr with
// *skip_reason set when "gpu" is asked for and none exists.
std::unique_ptr<Executor> make_executor(const std::string& backend, int threads, std::string* skip_reason);

RunOutcome run_pipeline(const Batch& b, const RunOptions& opt);

nlohmann::ordered_json outcome_json(const RunOutcome& o);
// Human-readable report (the table format).
void print_outcome(std::ostream& os, const Batch& b, const RunOutcome& o, bool color, int verbose);

}  // namespace mlactl::cli
