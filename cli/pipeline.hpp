// The one pipeline run, check and bench share: route -> plan -> position audit ->
// execute (CPU or GPU) -> compare with the reference computed from the batch alone.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/decode_metadata.hpp"
#include "core/captured.hpp"
#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/position_audit.hpp"
#include "core/probe.hpp"
#include "core/reference.hpp"
#include "core/plan.hpp"
#include "core/route.hpp"
#include "cli/external_executor.hpp"
#include "cli/kernel_ran.hpp"
#include "kernels/executor.hpp"

namespace mlactl::cli {

// What `run` concluded (docs/design.md §6): one word each in every format.
enum class RunStatus { passed, incorrect, refused, failed, skipped };
const char* to_string(RunStatus s);
// Why an `incorrect` run is incorrect, in the order the checks run: the position audit
// first (it sees what tolerances cannot); then output that is NaN/inf where the reference
// is finite (a row no work wrote, still NaN poison, or a read of the NaN-filled unused KV
// slots, e.g. a wrong row stride: the poison cannot tell the two apart); then the numbers;
// then GPU vs CPU on the same work list.
// The position probe (--probe) comes right after the audit: it is the audit's black-box twin.
enum class RunFailure { position_audit, position_probe, nonfinite, numeric, cross_check };
const char* to_string(RunFailure f);  // "position audit", "position probe", "non-finite", "numeric", "cross check"
std::optional<RunFailure> run_failure_from_string(const std::string& s);

enum class Backend { automatic, cpu, gpu };  // --backend auto | cpu | gpu
const char* to_string(Backend b);
std::optional<Backend> backend_from_string(const std::string& s);

// The stages of one run, in order; RunOptions::on_stage hears each as it starts (the
// progress line of a long `run` on a terminal, docs/design.md §6).
enum class RunStage { route, plan, inputs, reference, execute, compare };
const char* to_string(RunStage s);
constexpr int kRunStages = 6;

struct RunOptions {
  Backend backend = Backend::automatic;
  std::optional<Route> kernel;       // --kernel: forced route
  std::optional<PlannerId> planner;  // --planner: planner override
  bool cross_check = false;      // also run the CPU executor on the same work list and diff
  // A batch's captured arrays are what `run` and `check` execute (docs/design.md §2
  // captured): `own_metadata` (--own-metadata) runs mlactl's own metadata instead;
  // `use_captured` (--use-captured) insists on captured arrays (a usage error without).
  bool own_metadata = false;
  bool use_captured = false;
  std::optional<double> atol, rtol, cos_tol;
  int threads = 0;
  std::string dump_dir;
  // --inputs DIR: q and KV from a capture instead of data.seed (cli/captured_inputs.hpp)
  std::string inputs_dir;
  int64_t max_listed = 20;
  std::function<void(RunStage)> on_stage;  // optional; called from the calling thread
  std::optional<ExternalSpec> external;
  std::optional<ProbeKind> probe;        // --probe windows: probe inputs, then check every probed edge (core/probe.hpp)  // --executor CMD: run the case through a user's kernel (docs/executor-protocol.md)
};

struct RunOutcome {
  RunStatus status = RunStatus::passed;
  std::optional<RunFailure> failure;  // set when incorrect
  int exit_code = 0;
  std::string message;            // one line: why (refusal text, device error, skip reason)
  RouteDecision route;
  std::optional<RoutePlan> plan;
  std::optional<PositionAudit> audit;
  std::optional<CompareReport> compare;
  std::optional<CompareReport> cross;  // GPU vs CPU on the same work list
  std::optional<CapturedDiff> captured;  // captured arrays vs what mlactl builds
  std::optional<ProbeReport> probe;      // with --probe
  std::string executor;
  // Which executor ran and, for the GPU executor, the stage-1 and reduce launches it
  // reported (cli/kernel_ran.hpp); executor none until one is made.
  KernelRan ran;
  std::string dumped;  // --dump-dir: the path stem the failing case's files were written to
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

// Backend choice: automatic picks the GPU when one is present. Returns nullptr with
// *skip_reason set when the GPU is asked for and none exists.
std::unique_ptr<Executor> make_executor(Backend backend, int threads, std::string* skip_reason);

// "no GPU: <why>", with the prefix once.
std::string no_gpu_reason(const std::string& why);

RunOutcome run_pipeline(const Batch& b, const RunOptions& opt);

nlohmann::ordered_json outcome_json(const RunOutcome& o);
// Human-readable report (the table format).
void print_outcome(std::ostream& os, const Batch& b, const RunOutcome& o, bool color, int verbose);

}  // namespace mlactl::cli
