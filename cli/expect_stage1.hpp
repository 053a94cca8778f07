// `check`'s expect.stage1 (issue #35): the stage-1 kernel a fixture expects its `run` to
// report, as {"kernel": K, "schedule": S, "precision": P}, any non-empty subset, each
// value one of the names the launch sites report (kernels/stage1_kernel.hpp:
// kStage1KernelNames without "automatic", kStage1ScheduleNames, kStage1PrecisionNames).
// It needs a `run` expectation (the kernel is what that run reports). Only the GPU
// executor reports a kernel: after the CPU executor (the fp32 contract), an external
// executor, or no executor at all (a refused or skipped run) the expectation is not
// applicable and is reported as not checked: never as passed, never as a failure.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/kernel_ran.hpp"

namespace mlactl::cli {

// The fields expect.stage1 may name, in the order they are checked.
const std::vector<std::string>& stage1_expect_fields();  // kernel, schedule, precision
// The names a field may take (`kernel`: no "automatic", which is asked, never run).
std::vector<std::string> stage1_expect_values(const std::string& field);

// Throws invalid_input (exit 3) naming the JSON pointer under `ptr` (e.g.
// "/expect/stage1/kernel") of the first bad value: not an object, an unknown key, no
// field at all, a value that is not a string or not one of the field's names.
void validate_stage1_expectation(const nlohmann::json& want, const std::string& ptr);

struct Stage1ExpectResult {
  enum class Verdict { matched, mismatched, not_checked };
  Verdict verdict = Verdict::not_checked;
  // matched: the check's name ("stage1=wgmma rows-64"); mismatched: one failure per
  // field that differs ("stage1.kernel: expected wgmma, got mma (ran mma mma-m16 p-once,
  // ...)"), or that no kernel was reported; not_checked: why.
  std::vector<std::string> messages;
};
// `want` already validated.
Stage1ExpectResult check_stage1_expectation(const nlohmann::json& want, const KernelRan& ran);

}  // namespace mlactl::cli
