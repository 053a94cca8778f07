// What ran for a case (issue #35, "say which kernel ran"): which executor, and for the
// GPU executor the stage-1 and reduce launches as their launch sites reported them
// (kernels/executor.hpp, ExecResult::stage1 and ::reduce; never a prediction). One
// record, printed by `run` (text and JSON), carried by `check`'s case records (JSON,
// JSON Lines, JUnit properties) and counted by the run grid (tests/grid/run_grid.cpp).
// The CPU executor and an external executor report no kernel: the CPU executor's
// arithmetic is the contract's (fp32), an external one (--executor) is a black box.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/enum_from_name.hpp"
#include "kernels/executor.hpp"
#include "kernels/stage1_kernel.hpp"

namespace mlactl::cli {

// Which executor ran: none (the run was refused or skipped before one was made), the
// CPU executor, the GPU executor, or an external one (--executor).
enum class ExecutorKind { none, cpu, gpu, external };
inline constexpr ExecutorKind kExecutorKinds[] = {ExecutorKind::none, ExecutorKind::cpu, ExecutorKind::gpu,
                                                  ExecutorKind::external};
inline constexpr const char* kExecutorKindNames[] = {"none", "cpu", "gpu", "external"};  // in kExecutorKinds' order
MLA_ENUM_NAMES(ExecutorKind, kExecutorKinds, kExecutorKindNames, executor_kind_from_string)

struct KernelRan {
  ExecutorKind executor = ExecutorKind::none;
  std::optional<mla::Stage1Ran> stage1;  // GPU executor only; empty where no launch was reported
  std::optional<mla::ReduceRan> reduce;
};

// The record of an executor of `kind` that returned `r`: the launches r reports for the
// GPU executor (kept on a failed run too: they name the launch that failed); nothing
// for the others, which run no GPU kernel of mlactl's.
KernelRan kernel_ran(ExecutorKind kind, const ExecResult& r);

// ---- text (`run`'s report) ----
// "wgmma rows-64 p-split": the family, the schedule and the precision (the grid counts by it).
std::string stage1_label(const mla::Stage1Ran& s);
// "wgmma rows-64 p-split  wgmma_rows<bf16, 576, p-split>  grid 264 x 384 threads, 231456 B shared"
std::string stage1_text(const mla::Stage1Ran& s);
// "few-splits mla_reduce_few_kernel<4>  grid 12 x 256 threads", or "none (no split tiles)"
std::string reduce_text(const mla::ReduceRan& r);
// The report's lines after `executor:`: ("stage 1", ...) and, for the GPU executor,
// ("reduce", ...). The CPU executor: "cpu executor (fp32 contract)"; an external one
// says it reports no kernel; none at all when no executor ran.
std::vector<std::pair<std::string, std::string>> kernel_ran_lines(const KernelRan& k);

// ---- JSON (`run`, `check` case records; `mlactl schema --output run`: $defs/stage1_ran, reduce_ran) ----
// {"kernel", "schedule", "precision", "instance", "grid_blocks", "block_threads", "smem_bytes"}
nlohmann::ordered_json stage1_json(const mla::Stage1Ran& s);
// {"kind", "instance", "grid_blocks", "block_threads"}
nlohmann::ordered_json reduce_json(const mla::ReduceRan& r);
// Adds "stage1" and "reduce" to j: each its object, or null when the executor reported
// none (the CPU executor, an external executor, a GPU run that failed before its
// launch). Adds nothing when no executor ran (k.executor == none): the members go with
// "executor".
void add_kernel_ran_members(nlohmann::ordered_json& j, const KernelRan& k);

// The record whole, {"executor_kind", "stage1", "reduce"}, and back: check's --timeout/-j
// children send it to the parent. kernel_ran_from_json throws nlohmann's exceptions on a
// malformed record and std::runtime_error on a name it does not know.
nlohmann::ordered_json kernel_ran_json(const KernelRan& k);
KernelRan kernel_ran_from_json(const nlohmann::json& j);

// ---- JUnit (`check --junit`): testcase properties, name and value ----
// "stage1.kernel", "stage1.schedule", "stage1.precision", "stage1.instance",
// "stage1.grid_blocks", "stage1.block_threads", "stage1.smem_bytes", "reduce.kind",
// "reduce.instance", "reduce.grid_blocks", "reduce.block_threads"; nothing for an
// executor that reported no kernel.
std::vector<std::pair<std::string, std::string>> kernel_ran_properties(const KernelRan& k);

}  // namespace mlactl::cli
