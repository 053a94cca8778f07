#include "cli/expect_stage1.hpp"

#include <algorithm>

#include "core/types.hpp"

namespace mlactl::cli {

namespace {
using mla::names_of;

std::string quoted(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 60) + "..." : s;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i ? ", " : "") + words[i];
  return s;
}

std::string ran_value(const mla::Stage1Ran& s, const std::string& field) {
  if (field == "kernel") return mla::to_string(s.kernel);
  if (field == "schedule") return mla::to_string(s.schedule);
  return mla::to_string(s.precision);
}
}  // namespace

const std::vector<std::string>& stage1_expect_fields() {
  static const std::vector<std::string> fields = {"kernel", "schedule", "precision"};
  return fields;
}

std::vector<std::string> stage1_expect_values(const std::string& field) {
  if (field == "kernel") return names_of(mla::kStage1KernelNames, mla::kStage1Kernels, std::optional(mla::Stage1Kernel::automatic));
  if (field == "schedule") return names_of(mla::kStage1ScheduleNames, mla::kStage1Schedules);
  if (field == "precision") return names_of(mla::kStage1PrecisionNames, mla::kStage1Precisions);
  return {};
}

void validate_stage1_expectation(const nlohmann::json& want, const std::string& ptr) {
  const auto& fields = stage1_expect_fields();
  if (!want.is_object())
    throw invalid_input(ptr, std::string("must be an object with any of ") + joined(fields) + ", got " + want.type_name());
  if (want.empty()) throw invalid_input(ptr, "names no field: give any of " + joined(fields));
  for (auto it = want.begin(); it != want.end(); ++it) {
    const std::string at = ptr + "/" + it.key();
    if (std::find(fields.begin(), fields.end(), it.key()) == fields.end())
      throw invalid_input(at, "unknown key (expect.stage1 takes " + joined(fields) + ")");
    if (!it.value().is_string()) throw invalid_input(at, std::string("must be a string, got ") + it.value().type_name());
    const std::vector<std::string> names = stage1_expect_values(it.key());
    const std::string v = it.value().get<std::string>();
    if (std::find(names.begin(), names.end(), v) == names.end()) {
      std::string why = "unknown " + it.key() + " " + quoted(it.value()) + ": must be one of " + joined(names);
      if (it.key() == "kernel" && v == mla::to_string(mla::Stage1Kernel::automatic)) why += " (automatic is what a caller asks, never what ran)";
      throw invalid_input(at, why);
    }
  }
}

Stage1ExpectResult check_stage1_expectation(const nlohmann::json& want, const KernelRan& ran) {
  Stage1ExpectResult r;
  switch (ran.executor) {
    case ExecutorKind::none:
      r.messages.push_back("stage1 not checked: no executor ran (the run was refused or skipped)");
      return r;
    case ExecutorKind::cpu:
      r.messages.push_back("stage1 not checked: the cpu executor ran (the fp32 contract, no GPU kernel)");
      return r;
    case ExecutorKind::external:
      r.messages.push_back("stage1 not checked: an external executor ran (--executor; it reports no kernel)");
      return r;
    case ExecutorKind::gpu: break;
  }
  if (!ran.stage1) {
    r.verdict = Stage1ExpectResult::Verdict::mismatched;
    r.messages.push_back("stage1: the GPU executor reported no stage-1 kernel");
    return r;
  }
  std::string matched;
  for (const std::string& field : stage1_expect_fields()) {
    if (!want.contains(field)) continue;
    const std::string expected = want[field].get<std::string>();
    const std::string got = ran_value(*ran.stage1, field);
    if (expected != got)
      r.messages.push_back("stage1." + field + ": expected " + expected + ", got " + got + " (ran " + stage1_text(*ran.stage1) + ")");
    else
      matched += (matched.empty() ? "" : " ") + expected;
  }
  if (!r.messages.empty()) {
    r.verdict = Stage1ExpectResult::Verdict::mismatched;
    return r;
  }
  r.verdict = Stage1ExpectResult::Verdict::matched;
  r.messages.push_back("stage1=" + matched);
  return r;
}

}  // namespace mlactl::cli
