// The one run every verb that executes a batch shares (docs/design.md §6): route -> plan
// (or the batch's captured plan, checked) -> position audit -> inputs -> reference from
// the batch alone -> execute -> compare -> verdict. core/ decides everything; what runs
// the plan (the CPU or GPU executor, a user's kernel) and where failing cases are
// dumped are the caller's (cli/pipeline.hpp supplies them), so core needs no executor.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/captured.hpp"
#include "core/stack_findings.hpp"
#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/plan.hpp"
#include "core/position_audit.hpp"
#include "core/probe.hpp"
#include "core/reference.hpp"
#include "core/route.hpp"
#include "core/routed.hpp"

namespace mlactl {

// What `run` concluded (docs/design.md §6): one word each in every format.
enum class RunStatus { passed, incorrect, refused, failed, skipped };
const char* to_string(RunStatus s);
// Why an `incorrect` run is incorrect, in the order the checks run: a captured plan that
// breaks the invariants `schedule` holds mlactl's own plans to (core/invariants.hpp: a
// partial row written twice or never merged, a row with two final writers, reduce maps
// that disagree with the works) first, before anything executes it (issue 39: such a
// capture passed on KV positions alone; it still runs, so the checks below show the
// damage); the position audit (it sees what tolerances cannot); the position probe (--probe), the audit's
// black-box twin; then output that is NaN/inf where the reference is finite (a row no work
// wrote, still NaN poison, or a read of the NaN-filled unused KV slots); then the numbers;
// then the executor vs the CPU executor on the same work list.
// Padding rows last: their output is never compared, but it must keep the stack's contract.
enum class RunFailure { captured_plan, position_audit, position_probe, nonfinite, numeric, cross_check, padding_rows };
const char* to_string(RunFailure f);  // "captured plan", "position audit", "position probe", "non-finite", "numeric", "cross check", "padding rows"
std::optional<RunFailure> run_failure_from_string(const std::string& s);

// What a stack's kernel leaves in the output rows of padding slots (docs/executor-protocol.md
// § Layout and padding rows). Never compared with a reference, but the whole output goes on
// to o_proj and the MoE: NaN there spreads (vllm #57094: 0/0 in TRITON_MLA pad rows
// poisoned the FP8 MoE scales).
enum class PadRowContract {
  zeros,      // the kernel writes 0 (not used by a modelled route yet)
  finite,     // the kernel writes them, anything finite (vLLM TRITON_MLA: seq_len 0 rows)
  untouched,  // no work covers them: the kernel never writes them (the stack's buffer keeps its values)
};
const char* to_string(PadRowContract c);
PadRowContract pad_row_contract(StackId stack, Route route);
struct PaddingReport {
  PadRowContract contract = PadRowContract::untouched;
  int64_t rows_checked = 0;
  int64_t bad_rows = 0;
  std::vector<int64_t> bad_row_ids;  // every padding row that breaks the contract, ascending
  int64_t nan_values = 0, nonzero_values = 0;  // nonzero: counted only for zeros
  bool ok = true;
};

// The stages of one run, in order; CaseOptions::on_stage hears each as it starts (the
// progress line of a long `run` on a terminal).
enum class RunStage { route, plan, inputs, reference, execute, compare };
const char* to_string(RunStage s);
constexpr int kRunStages = 6;

// The plan an executor runs, over the inputs and the kernel's q layout.
struct ExecutionRequest {
  const Batch& batch;
  const RoutedBatch& routed;
  const RoutePlan& plan;
  const Inputs& inputs;
  const ViewLayout& layout;
  const EncodedTensor& kernel_q;
};
// What it gave back, in the user's layout (decoded output [rows, heads, v_dim], LSE).
struct ExecutionResult {
  bool ok = true;
  std::string error;                   // !ok: why (the message says whose error it is)
  std::vector<float> out, lse;
  bool wrote_lse = true;               // false: compare the output only (a user's kernel may leave LSE out)
  // the executor stands for the stack's kernel (--executor): its padding rows are held to the
  // stack's contract. mlactl's own executors run mlactl's work list, which covers no padding row.
  bool check_padding_rows = false;
  std::optional<std::string> unsupported;  // the executor declined the case: skipped with this reason
  // the executor declared that its P·V takes P rounded once to this type (docs/executor-protocol.md)
  std::optional<DType> p_rounded_to;
  // every output NaN: an error unless the CPU executor's output of the same plan is all NaN too
  std::optional<std::string> error_unless_cpu_all_nan;
};
class CaseExecutor {
 public:
  virtual ~CaseExecutor() = default;
  virtual std::string name() const = 0;
  virtual ExecutionResult execute(const ExecutionRequest& r) = 0;
};

// The caller's part: the executor under test and the CPU executor, where inputs come from
// (--inputs), and what a failing case leaves behind (--dump-dir).
struct CaseHooks {
  // Is the executor available at all (checked before inputs are made)? nullopt: yes;
  // else the reason the case is skipped (no GPU).
  std::function<std::optional<std::string>()> unavailable;
  std::function<std::unique_ptr<CaseExecutor>(const ExecutionRequest&)> make_executor;
  std::function<std::unique_ptr<CaseExecutor>()> make_cpu_executor;  // the cross check, the all-NaN check
  // --inputs: q and KV from a capture; unset: generated from data.seed
  std::function<Inputs(const Batch&, const std::vector<RowWindow>&)> load_inputs;
};

struct CaseOptions {
  std::optional<Route> kernel;       // --kernel: forced route
  std::optional<PlannerId> planner;  // --planner: planner override
  bool cross_check = false;          // also run the CPU executor on the same work list and diff
  // A batch's captured arrays are what run and check execute (docs/design.md §2 captured):
  // own_metadata (--own-metadata) runs mlactl's own metadata instead; use_captured
  // (--use-captured) insists on captured arrays (a usage error without).
  bool own_metadata = false;
  bool use_captured = false;
  std::optional<double> atol, rtol, cos_tol;
  int threads = 0;
  int64_t max_listed = 20;
  std::function<void(RunStage)> on_stage;  // optional; called from the calling thread
  // --probe windows: a second run on probe inputs, every probed edge checked (controls
  // first), besides the ordinary run on random inputs (the probe's q is 0 in most dimensions,
  // so a fault confined to those, e.g. the rope part, shows only on random inputs)
  std::optional<ProbeKind> probe;
};

struct CaseOutcome {
  RunStatus status = RunStatus::passed;
  std::optional<RunFailure> failure;  // set when incorrect
  // The plan's findings in the modelled stack (core/stack_findings.hpp), and whether the
  // failure is one: the position audit of the stack's own plan fails where that plan reads
  // outside a causal window, whatever the executor does.
  std::vector<StackFindingId> stack_findings;
  bool finding_in_stack = false;
  int exit_code = 0;
  std::string message;                // one line: why (refusal text, device error, skip reason)
  RouteDecision route;
  std::optional<RoutePlan> plan;
  std::optional<PositionAudit> audit;
  // a captured work list's invariants (replays of a captured work list only; mlactl's own
  // plans are checked by `schedule` and the tests)
  std::optional<InvariantReport> captured_plan;
  std::optional<CompareReport> compare;  // on seeded random inputs (with --probe too)
  std::optional<CompareReport> probe_compare;  // with --probe: the same comparison on the probe's inputs
  std::optional<PaddingReport> padding;  // the padding rows against the stack's contract (batches with padding rows)
  std::optional<CompareReport> cross;    // executor vs CPU on the same work list
  std::optional<CapturedDiff> captured;  // captured arrays vs what mlactl builds
  std::optional<ProbeReport> probe;      // with --probe
  std::string executor;                  // the executor's name, once one is made
  double ms_metadata = 0, ms_plan = 0, ms_inputs = 0, ms_reference = 0, ms_execute = 0, ms_compare = 0;
  DType out_dtype = DType::bf16;
};

// The buffers of an incorrect case, for the caller to dump (--dump-dir).
struct CaseBuffers {
  const Inputs* inputs = nullptr;
  const std::vector<float>* out = nullptr;
  const ReferenceOutput* reference = nullptr;
};

// Runs the batch. `on_incorrect` (optional) hears an incorrect case with its buffers
// before they go.
CaseOutcome run_case(const Batch& b, const CaseOptions& opt, const CaseHooks& hooks,
                     const std::function<void(const CaseOutcome&, const CaseBuffers&)>& on_incorrect = {});

}  // namespace mlactl
