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
#include "core/pipeline.hpp"
#include "core/route.hpp"
#include "cli/external_executor.hpp"
#include "cli/kernel_ran.hpp"
#include "kernels/executor.hpp"

namespace mlactl::cli {

// The run itself is core's (core/pipeline.hpp run_case); cli/ chooses the executor (the
// CPU or GPU executor, or a user's kernel through --executor), loads --inputs, dumps a
// failing case and keeps the launch sites' record of what ran.
using mlactl::RunFailure;
using mlactl::RunStage;
using mlactl::RunStatus;
using mlactl::kRunStages;
using mlactl::run_failure_from_string;

enum class Backend { automatic, cpu, gpu };  // --backend auto | cpu | gpu
const char* to_string(Backend b);
std::optional<Backend> backend_from_string(const std::string& s);

struct RunOptions : CaseOptions {
  Backend backend = Backend::automatic;
  std::string dump_dir;    // --dump-dir: where a failing case's batch, result and arrays go
  std::string inputs_dir;  // --inputs DIR: q and KV from a capture instead of data.seed (cli/captured_inputs.hpp)
  std::optional<ExternalSpec> external;  // --executor CMD: run the case through a user's kernel (docs/executor-protocol.md)
};

struct RunOutcome : CaseOutcome {
  // Which executor ran and, for the GPU executor, the stage-1 and reduce launches it
  // reported (cli/kernel_ran.hpp); executor none until one is made.
  KernelRan ran;
  std::string dumped;  // --dump-dir: the path stem the failing case's files were written to
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

// core/stack_findings.hpp as JSON: id, "finding in the modelled stack", rule, upstream lines, doc
nlohmann::ordered_json stack_findings_json(const std::vector<StackFindingId>& fs);
nlohmann::ordered_json outcome_json(const RunOutcome& o);
// Human-readable report (the table format).
void print_outcome(std::ostream& os, const Batch& b, const RunOutcome& o, bool color, int verbose);

}  // namespace mlactl::cli
