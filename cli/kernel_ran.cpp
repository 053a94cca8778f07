#include "cli/kernel_ran.hpp"

#include <stdexcept>

#include "kernels/enum_from_name.hpp"

namespace mlactl::cli {

namespace {

// The value of `values` named `name`, or std::runtime_error naming what was read.
template <typename E, size_t N>
E named(const E (&values)[N], const std::string& name, const char* what) {
  if (const std::optional<E> v = mla::enum_from_name(values, name)) return *v;
  throw std::runtime_error(std::string("unknown ") + what + " \"" + name + "\"");
}
}  // namespace

KernelRan kernel_ran(ExecutorKind kind, const ExecResult& r) {
  KernelRan k;
  k.executor = kind;
  if (kind == ExecutorKind::gpu) {
    k.stage1 = r.stage1;
    k.reduce = r.reduce;
  }
  return k;
}

// ---- text ----

std::string stage1_label(const mla::Stage1Ran& s) {
  return std::string(mla::to_string(s.kernel)) + " " + mla::to_string(s.schedule) + " " + mla::to_string(s.precision);
}

std::string stage1_text(const mla::Stage1Ran& s) {
  std::string t = stage1_label(s);
  if (!s.instance.empty()) t += "  " + s.instance;
  t += "  grid " + std::to_string(s.grid_blocks) + " x " + std::to_string(s.block_threads) + " threads, " + std::to_string(s.smem_bytes) +
       " B shared";
  return t;
}

std::string reduce_text(const mla::ReduceRan& r) {
  if (r.kind == mla::ReduceKind::none) return "none (no split tiles)";
  std::string t = mla::to_string(r.kind);
  if (!r.instance.empty()) t += " " + r.instance;
  return t + "  grid " + std::to_string(r.grid_blocks) + " x " + std::to_string(r.block_threads) + " threads";
}

std::vector<std::pair<std::string, std::string>> kernel_ran_lines(const KernelRan& k) {
  switch (k.executor) {
    case ExecutorKind::none: return {};
    case ExecutorKind::cpu: return {{"stage 1", "cpu executor (fp32 contract)"}};
    case ExecutorKind::external: return {{"stage 1", "external executor (--executor; it reports no kernel)"}};
    case ExecutorKind::gpu: break;
  }
  std::vector<std::pair<std::string, std::string>> lines;
  lines.push_back({"stage 1", k.stage1 ? stage1_text(*k.stage1) : "none reported by the GPU executor"});
  lines.push_back({"reduce", k.reduce ? reduce_text(*k.reduce) : "none reported by the GPU executor"});
  return lines;
}

// ---- JSON ----

nlohmann::ordered_json stage1_json(const mla::Stage1Ran& s) {
  return {{"kernel", mla::to_string(s.kernel)},
          {"schedule", mla::to_string(s.schedule)},
          {"precision", mla::to_string(s.precision)},
          {"instance", s.instance},
          {"grid_blocks", s.grid_blocks},
          {"block_threads", s.block_threads},
          {"smem_bytes", s.smem_bytes}};
}

nlohmann::ordered_json reduce_json(const mla::ReduceRan& r) {
  return {{"kind", mla::to_string(r.kind)}, {"instance", r.instance}, {"grid_blocks", r.grid_blocks}, {"block_threads", r.block_threads}};
}

void add_kernel_ran_members(nlohmann::ordered_json& j, const KernelRan& k) {
  if (k.executor == ExecutorKind::none) return;
  j["stage1"] = k.stage1 ? stage1_json(*k.stage1) : nlohmann::ordered_json(nullptr);
  j["reduce"] = k.reduce ? reduce_json(*k.reduce) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json kernel_ran_json(const KernelRan& k) {
  nlohmann::ordered_json j = {{"executor_kind", to_string(k.executor)}};
  j["stage1"] = k.stage1 ? stage1_json(*k.stage1) : nlohmann::ordered_json(nullptr);
  j["reduce"] = k.reduce ? reduce_json(*k.reduce) : nlohmann::ordered_json(nullptr);
  return j;
}

KernelRan kernel_ran_from_json(const nlohmann::json& j) {
  KernelRan k;
  const std::string kind = j.at("executor_kind").get<std::string>();
  const std::optional<ExecutorKind> e = executor_kind_from_string(kind);
  if (!e) throw std::runtime_error("unknown executor kind \"" + kind + "\"");
  k.executor = *e;
  if (const auto& s = j.at("stage1"); !s.is_null()) {
    mla::Stage1Ran r;
    r.kernel = named(mla::kStage1Kernels, s.at("kernel").get<std::string>(), "stage-1 kernel");
    r.schedule = named(mla::kStage1Schedules, s.at("schedule").get<std::string>(), "stage-1 schedule");
    r.precision = named(mla::kStage1Precisions, s.at("precision").get<std::string>(), "stage-1 precision");
    r.instance = s.at("instance").get<std::string>();
    r.grid_blocks = s.at("grid_blocks").get<int64_t>();
    r.block_threads = s.at("block_threads").get<int>();
    r.smem_bytes = s.at("smem_bytes").get<int64_t>();
    k.stage1 = r;
  }
  if (const auto& s = j.at("reduce"); !s.is_null()) {
    mla::ReduceRan r;
    r.kind = named(mla::kReduceKinds, s.at("kind").get<std::string>(), "reduce kind");
    r.instance = s.at("instance").get<std::string>();
    r.grid_blocks = s.at("grid_blocks").get<int64_t>();
    r.block_threads = s.at("block_threads").get<int>();
    k.reduce = r;
  }
  return k;
}

// ---- JUnit ----

std::vector<std::pair<std::string, std::string>> kernel_ran_properties(const KernelRan& k) {
  std::vector<std::pair<std::string, std::string>> p;
  if (k.stage1) {
    const mla::Stage1Ran& s = *k.stage1;
    p.push_back({"stage1.kernel", mla::to_string(s.kernel)});
    p.push_back({"stage1.schedule", mla::to_string(s.schedule)});
    p.push_back({"stage1.precision", mla::to_string(s.precision)});
    p.push_back({"stage1.instance", s.instance});
    p.push_back({"stage1.grid_blocks", std::to_string(s.grid_blocks)});
    p.push_back({"stage1.block_threads", std::to_string(s.block_threads)});
    p.push_back({"stage1.smem_bytes", std::to_string(s.smem_bytes)});
  }
  if (k.reduce) {
    const mla::ReduceRan& r = *k.reduce;
    p.push_back({"reduce.kind", mla::to_string(r.kind)});
    p.push_back({"reduce.instance", r.instance});
    p.push_back({"reduce.grid_blocks", std::to_string(r.grid_blocks)});
    p.push_back({"reduce.block_threads", std::to_string(r.block_threads)});
  }
  return p;
}

}  // namespace mlactl::cli
