#include "cli/pipeline.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <ostream>
#include <sys/stat.h>
#include <cerrno>
#include <cstring>

#include "cli/captured_inputs.hpp"
#include "cli/common.hpp"
#include "cli/npy.hpp"
#include "cli/output.hpp"
#include "core/budget.hpp"
#include "core/layout.hpp"
#include "core/routed.hpp"
#include "kernels/cpu_executor.hpp"
#include "kernels/gpu_executor.hpp"

namespace mlactl::cli {

namespace {
uint16_t nan_bits(DType d) { return d == DType::fp16 ? 0x7E00 : 0x7FC0; }

// Executes the plan with one executor on freshly poisoned outputs; returns the
// user-layout output and LSE.
struct ExecOutput {
  ExecResult result;
  std::vector<float> out, lse;
};
ExecOutput run_executor(Executor& ex, const Batch& b, const RoutePlan& plan, const Inputs& in, const ViewLayout& layout, const EncodedTensor& kq) {
  ExecOutput eo;
  const std::unique_ptr<ExecCall> call = make_exec_call(b, plan, in, layout, kq);
  eo.result = ex.run(call->args);
  if (eo.result.ok) {
    eo.out = unlayout_out(layout, b.model.dtype, call->out.data(), plan.kernel_view.v_dim);
    eo.lse = unlayout_lse(layout, call->lse.data());
  }
  return eo;
}

std::string dump_failure(const std::string& dir, const Batch& b, const RunOutcome& o, const Inputs& in, const std::vector<float>& out,
                         const ReferenceOutput& ref) {
  // everything stays inside `dir`: the case name (from the file) is one sanitised path
  // component, and no file is written through a link (docs/design.md §9)
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw Error(kExitDevice, "", "--dump-dir " + dir + ": cannot create it: " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(kExitUsage, "", "--dump-dir " + dir + ": is not a directory");
  const std::string stem = dir + "/" + path_component(b.name);
  write_file_atomic(stem + ".batch.json", json_text(batch_to_json(b)) + "\n", Symlinks::refuse);
  write_file_atomic(stem + ".result.json", json_text(outcome_json(o)) + "\n", Symlinks::refuse);
  // .npy float32 arrays: output and reference [rows, heads, v_dim]
  auto npy = [&](const std::string& path, const std::vector<float>& data) {
    // npy_bytes (cli/npy.hpp), written through no link: the dump stays inside its folder
    write_file_atomic(path, npy_bytes("<f4", {ref.num_rows, ref.num_heads, ref.v_dim}, data.data(), data.size() * sizeof(float)), Symlinks::refuse);
  };
  npy(stem + ".out.npy", out);
  npy(stem + ".ref.npy", ref.out);
  (void)in;
  return stem;
}
}  // namespace

std::unique_ptr<ExecCall> make_exec_call(const Batch& b, const RoutePlan& plan, const Inputs& in, const ViewLayout& layout,
                                         const EncodedTensor& kq) {
  auto c = std::make_unique<ExecCall>();
  const KernelView& v = plan.kernel_view;
  const int64_t view_rows = layout.view_rows;
  c->out.assign(size_t(view_rows * v.heads * v.v_dim), nan_bits(b.model.dtype));
  c->lse.assign(size_t(view_rows * v.heads), std::numeric_limits<float>::quiet_NaN());
  int64_t partial_rows = plan.work.num_partial_rows;
  for (const auto& w : plan.work.work_info)
    if (w.partial_qo_loc >= 0) partial_rows = std::max<int64_t>(partial_rows, int64_t(w.partial_qo_loc) + std::max(0, w.qo_end - w.qo_start));
  c->partial_out.assign(size_t(std::max<int64_t>(1, partial_rows) * v.heads * v.v_dim), std::numeric_limits<float>::quiet_NaN());
  c->partial_lse.assign(size_t(std::max<int64_t>(1, partial_rows) * v.heads), std::numeric_limits<float>::quiet_NaN());
  c->work = plan.work;
  c->work.num_partial_rows = partial_rows;
  ExecArgs& a = c->args;
  a.work = &c->work;
  a.view = v;
  a.kv_indices = plan.kv_indices.data();
  a.num_kv_indices = int64_t(plan.kv_indices.size());
  a.q = kq.data();
  a.num_q_rows = view_rows;
  a.q_scale = kq.scale;
  a.kv = in.kv.data();
  a.num_slots = in.num_slots;
  a.kv_row_stride = in.head_dim;
  a.kv_scale = in.kv.scale;
  a.fp8_flavor = b.fp8_flavor();
  a.softmax_scale = float(b.model.softmax_scale);
  a.out_dtype = b.model.dtype;
  a.out = c->out.data();
  a.lse = c->lse.data();
  a.partial_out = c->partial_out.data();
  a.partial_lse = c->partial_lse.data();
  return c;
}

const char* to_string(Backend b) {
  switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::gpu: return "gpu";
  }
  return "?";
}

std::optional<Backend> backend_from_string(const std::string& s) {
  for (Backend b : {Backend::automatic, Backend::cpu, Backend::gpu})
    if (s == to_string(b)) return b;
  return std::nullopt;
}

std::string no_gpu_reason(const std::string& why) { return why.rfind("no GPU", 0) == 0 ? why : "no GPU: " + why; }

std::unique_ptr<Executor> make_executor(Backend backend, int threads, std::string* skip_reason) {
  std::string why;
  if (backend == Backend::cpu) return std::make_unique<CpuExecutor>(threads);
  const bool have = gpu_available(&why);
  if (backend == Backend::gpu) {
    if (!have) {
      if (skip_reason) *skip_reason = no_gpu_reason(why);
      return nullptr;
    }
    return std::make_unique<GpuExecutor>();
  }
  if (have) return std::make_unique<GpuExecutor>();
  return std::make_unique<CpuExecutor>(threads);
}

namespace {

// One of mlactl's executors (CPU, GPU) as core's CaseExecutor; keeps what it returned so
// the record of what ran survives the run.
class OwnExecutor final : public CaseExecutor {
 public:
  OwnExecutor(std::unique_ptr<Executor> ex, ExecutorKind kind, RunOutcome* record) : ex_(std::move(ex)), kind_(kind), record_(record) {}
  std::string name() const override { return ex_->name(); }
  ExecutionResult execute(const ExecutionRequest& r) override {
    ExecOutput eo = run_executor(*ex_, r.batch, r.plan, r.inputs, r.layout, r.kernel_q);
    if (record_) record_->ran = kernel_ran(kind_, eo.result);  // what the launch sites reported, kept on a failed run too
    ExecutionResult out;
    out.ok = eo.result.ok;
    if (!out.ok) out.error = "device/runtime error: " + eo.result.error;
    out.out = std::move(eo.out);
    out.lse = std::move(eo.lse);
    return out;
  }

 private:
  std::unique_ptr<Executor> ex_;
  ExecutorKind kind_;
  RunOutcome* record_;
};

// A user's kernel through --executor (docs/executor-protocol.md).
class UserExecutor final : public CaseExecutor {
 public:
  UserExecutor(const ExternalSpec& spec, const ExecutionRequest& r, RunOutcome* record)
      : ext_(spec, ExternalCase{&r.batch, &r.routed, &r.plan, &r.inputs, &r.layout}), record_(record) {}
  std::string name() const override { return ext_.name(); }
  ExecutionResult execute(const ExecutionRequest& r) override {
    ExecOutput eo = run_executor(ext_, r.batch, r.plan, r.inputs, r.layout, r.kernel_q);
    record_->ran = kernel_ran(ExecutorKind::external, eo.result);
    ExecutionResult out;
    if (ext_.unsupported()) {
      out.unsupported = *ext_.unsupported();
      return out;
    }
    out.ok = eo.result.ok;
    out.error = eo.result.error;
    out.out = std::move(eo.out);
    out.lse = std::move(eo.lse);
    out.wrote_lse = ext_.wrote_lse();
    out.p_rounded_to = ext_.p_rounding();
    out.check_padding_rows = true;
    if (out.ok && ext_.all_nan()) out.error_unless_cpu_all_nan = ext_.all_nan_error();
    return out;
  }

 private:
  ExternalExecutor ext_;
  RunOutcome* record_;
};

}  // namespace

RunOutcome run_pipeline(const Batch& b, const RunOptions& opt) {
  RunOutcome o;
  CaseHooks hooks;
  hooks.unavailable = [&]() -> std::optional<std::string> {
    if (opt.external) return std::nullopt;
    std::string skip;
    if (opt.backend == Backend::gpu && !gpu_available(&skip)) return no_gpu_reason(skip);
    return std::nullopt;
  };
  hooks.make_executor = [&](const ExecutionRequest& r) -> std::unique_ptr<CaseExecutor> {
    if (opt.external) return std::make_unique<UserExecutor>(*opt.external, r, &o);
    std::string skip;
    std::unique_ptr<Executor> ex = make_executor(opt.backend, opt.threads, &skip);
    if (!ex) throw Error(kExitDevice, "", skip);  // the GPU went away since unavailable() asked
    const ExecutorKind kind = dynamic_cast<GpuExecutor*>(ex.get()) ? ExecutorKind::gpu : ExecutorKind::cpu;
    o.ran.executor = kind;
    return std::make_unique<OwnExecutor>(std::move(ex), kind, &o);
  };
  hooks.make_cpu_executor = [&]() -> std::unique_ptr<CaseExecutor> {
    return std::make_unique<OwnExecutor>(std::make_unique<CpuExecutor>(opt.threads), ExecutorKind::cpu, nullptr);
  };
  if (!opt.inputs_dir.empty())
    hooks.load_inputs = [&](const Batch& batch, const std::vector<RowWindow>& rows) { return load_captured_inputs(opt.inputs_dir, batch, rows); };
  auto dump = [&](const CaseOutcome& co, const CaseBuffers& buf) {
    if (opt.dump_dir.empty()) return;
    RunOutcome whole = o;
    static_cast<CaseOutcome&>(whole) = co;
    o.dumped = dump_failure(opt.dump_dir, b, whole, *buf.inputs, *buf.out, *buf.reference);
  };
  CaseOutcome co = run_case(b, opt, hooks, dump);
  const KernelRan ran = o.ran;
  const std::string dumped = o.dumped;
  static_cast<CaseOutcome&>(o) = std::move(co);
  o.ran = ran;
  o.dumped = dumped;
  return o;
}

nlohmann::ordered_json stack_findings_json(const std::vector<StackFindingId>& fs) {
  auto a = nlohmann::ordered_json::array();
  for (StackFindingId f : fs) {
    const StackFindingInfo& i = stack_finding_info(f);
    a.push_back({{"id", i.name}, {"finding", "finding in the modelled stack"}, {"rule", i.rule}, {"upstream", i.upstream}, {"doc", i.doc}});
  }
  return a;
}

nlohmann::ordered_json outcome_json(const RunOutcome& o) {
  nlohmann::ordered_json j;
  j["status"] = to_string(o.status);
  if (o.failure) j["reason"] = to_string(*o.failure);
  j["exit_code"] = o.exit_code;
  if (!o.message.empty()) j["message"] = o.message;
  // findings in the modelled stack (core/stack_findings.hpp): the plan's own reads outside a
  // causal window, and whether the failure is one (distinct from an executor fault)
  j["finding_in_modelled_stack"] = o.finding_in_stack;
  j["stack_findings"] = stack_findings_json(o.stack_findings);
  j["route"] = route_json(o.route);
  if (!o.executor.empty()) j["executor"] = o.executor;
  add_kernel_ran_members(j, o.ran);  // "stage1", "reduce": with "executor"; null where no kernel was reported
  if (!o.dumped.empty()) j["dumped"] = o.dumped;
  if (o.plan) {
    j["planner"] = to_string(o.plan->planner);
    j["works"] = o.plan->work.work_info.size();
    j["notes"] = o.plan->notes;
  }
  if (o.audit) {
    auto bad = nlohmann::ordered_json::array();
    for (const auto& r : o.audit->bad)
      bad.push_back({{"row", r.row}, {"request", r.request}, {"token", r.token}, {"heads", r.heads}, {"extra", r.extra}, {"missing", r.missing}, {"detail", r.detail}});
    j["position_audit"] = {{"ok", o.audit->ok}, {"rows_checked", o.audit->rows_checked}, {"bad_rows", o.audit->bad_rows},
                           {"stray_q_rows", o.audit->stray_q_rows}, {"errors", o.audit->errors}, {"rows", bad}};
  }
  if (o.captured_plan) {
    auto viol = nlohmann::ordered_json::array();
    for (const auto& v : o.captured_plan->violations)
      viol.push_back({{"kind", v.kind}, {"rule", to_string(v.rule)}, {"q_row", v.q_row}, {"kv_begin", v.kv_begin}, {"kv_end", v.kv_end}, {"work", v.work},
                      {"message", v.message}});
    j["captured_plan"] = {{"ok", o.captured_plan->ok}, {"total_violations", o.captured_plan->total_violations}, {"violations", viol}};
  }
  auto cmp_json = [](const CompareReport& c) {
    nlohmann::ordered_json k;
    k["passed"] = c.passed;
    k["tolerance"] = {{"atol", c.tol.atol}, {"rtol", c.tol.rtol}, {"cos_tol", c.tol.cos_tol}, {"source", c.tol.source},
                      {"lse_atol", c.lse_tol.atol}, {"lse_rtol", c.lse_tol.rtol}};
    k["compared_rows"] = c.compared_rows;
    k["compared_elements"] = c.compared_elements;
    k["failing_elements"] = c.failing_elements;
    k["max_abs_err"] = c.max_abs_err;
    k["max_abs_at"] = {{"request", c.max_abs_at.request}, {"token", c.max_abs_at.token}, {"head", c.max_abs_at.head}, {"dim", c.max_abs_at.dim},
                       {"reference", c.max_abs_at.reference}, {"actual", c.max_abs_at.actual}};
    k["max_rel_err"] = c.max_rel_err;
    k["max_rel_at"] = {{"request", c.max_rel_at.request}, {"token", c.max_rel_at.token}, {"head", c.max_rel_at.head}, {"dim", c.max_rel_at.dim}};
    k["cos_diff"] = c.cos_diff;
    k["nmse"] = c.nmse;
    k["nonfinite_mismatches"] = c.nonfinite_mismatches;
    auto fr = nlohmann::ordered_json::array();
    for (const auto& r : c.failing) fr.push_back({{"request", r.request}, {"token", r.token}, {"head", r.head}, {"failing_elements", r.failing_elements}});
    k["failing_row_heads"] = c.failing_row_heads;
    k["failing"] = fr;
    auto un = nlohmann::ordered_json::array();
    for (const auto& r : c.unwritten) un.push_back({{"request", r.request}, {"token", r.token}, {"head", r.head}});
    k["unwritten_row_heads"] = c.unwritten_row_heads;
    k["unwritten"] = un;
    k["lse"] = {{"compared", c.lse_compared}, {"passed", c.lse_passed}, {"failing", c.lse_failing}, {"max_abs_err", c.lse_max_abs_err}};
    k["reasons"] = c.reasons;
    return k;
  };
  if (o.captured) {
    j["captured"] = captured_json(*o.captured);
  }
  if (o.probe) {
    const ProbeReport& p = *o.probe;
    auto fs = nlohmann::ordered_json::array();
    for (const auto& f : p.listed)
      fs.push_back({{"row", f.target.row}, {"request", f.target.request}, {"token", f.target.token}, {"head", f.target.head},
                    {"position", f.target.position}, {"edge", to_string(f.target.edge)}, {"finding", to_string(f.kind)},
                    {"weight", std::isnan(f.weight) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.weight)},
                    {"lse_diff", std::isnan(f.lse_diff) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.lse_diff)}});
    j["position_probe"] = {{"ok", p.ok}, {"rows_probed", p.rows_probed}, {"heads_probed", p.heads_probed},
                           {"edges_not_probed", p.edges_not_probed}, {"findings", p.findings}, {"bad_rows", p.bad_rows},
                           {"bad_row_ids", p.bad_row_ids}, {"bad_head_ids", p.bad_head_ids}, {"controls", p.controls},
                           {"controls_off", p.controls_off}, {"control_off_heads", p.control_off_heads}, {"global_fault", p.global_fault},
                           {"listed", fs}};
  }
  if (o.compare) j["compare"] = cmp_json(*o.compare);
  if (o.probe_compare) j["probe_compare"] = cmp_json(*o.probe_compare);
  if (o.padding) {
    const PaddingReport& pr = *o.padding;
    j["padding_rows"] = {{"ok", pr.ok}, {"contract", to_string(pr.contract)}, {"rows_checked", pr.rows_checked}, {"bad_rows", pr.bad_rows},
                         {"bad_row_ids", pr.bad_row_ids}, {"nan_values", pr.nan_values}, {"nonzero_values", pr.nonzero_values}};
  }
  if (o.cross) j["cross_check"] = cmp_json(*o.cross);
  j["timing_ms"] = {{"metadata", o.ms_metadata}, {"plan_and_audit", o.ms_plan}, {"inputs", o.ms_inputs}, {"reference", o.ms_reference},
                    {"execute", o.ms_execute}, {"compare", o.ms_compare}};
  return j;
}

void print_outcome(std::ostream& os, const Batch& b, const RunOutcome& o, bool color, int verbose) {
  Style st;
  st.color = color;
  std::vector<std::pair<std::string, std::string>> kv;
  kv.push_back({"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)});
  std::string status;
  switch (o.status) {
    case RunStatus::passed: status = st.green("PASSED"); break;
    case RunStatus::incorrect: status = st.red("INCORRECT") + (o.finding_in_stack ? " (finding in the modelled stack, not an executor fault)" : ""); break;
    case RunStatus::failed: status = st.red("FAILED"); break;
    case RunStatus::refused: status = st.yellow("REFUSED"); break;
    case RunStatus::skipped: status = st.yellow("SKIPPED"); break;
  }
  kv.push_back({"status", status});
  if (!o.message.empty()) kv.push_back({"message", terminal_lines(o.message, std::string(16, ' '))});
  kv.push_back({"route", std::string(to_string(o.route.route)) + (o.route.aiter_kernel.empty() ? "" : " (" + o.route.aiter_kernel + ")")});
  if (o.plan) kv.push_back({"planner", std::string(to_string(o.plan->planner)) + ", " + std::to_string(o.plan->work.work_info.size()) + " works on " +
                                           std::to_string(o.plan->work.num_workgroups) + " workgroups"});
  if (!o.executor.empty()) kv.push_back({"executor", terminal_safe(o.executor)});  // result.json names it
  for (auto& line : kernel_ran_lines(o.ran)) kv.push_back(std::move(line));  // "stage 1", "reduce"
  if (!o.dumped.empty()) kv.push_back({"dumped", terminal_safe(o.dumped) + ".{batch,result}.json, .out.npy, .ref.npy"});
  if (o.captured) kv.push_back({"captured", o.captured->same ? o.captured->message : st.red("differs: ") + o.captured->message});
  if (o.captured_plan)
    kv.push_back({"captured plan", o.captured_plan->ok ? std::string("ok (the plan invariants hold)")
                                                       : st.red(std::to_string(o.captured_plan->total_violations) + " plan invariant violation" +
                                                                (o.captured_plan->total_violations == 1 ? "" : "s") + ", listed below")});
  if (o.audit)
    kv.push_back({"position audit", o.audit->ok ? "ok (" + std::to_string(o.audit->rows_checked) + " rows)"
                                                : st.red(std::to_string(o.audit->bad_rows) + " of " + std::to_string(o.audit->rows_checked) +
                                                         " rows read wrong KV positions")});
  if (o.probe) {
    const ProbeReport& p = *o.probe;
    std::vector<int64_t> off_heads(p.control_off_heads.begin(), p.control_off_heads.end());
    if (p.global_fault)
      kv.push_back({"position probe", st.red("global numeric fault: " + std::to_string(p.controls_off) + " of " + std::to_string(p.controls) +
                                             " control heads wrong (heads " + summarize_positions(off_heads, 12) + "); no edge is named")});
    else
      kv.push_back({"position probe", p.ok ? "ok (" + std::to_string(p.heads_probed) + " heads of " + std::to_string(p.rows_probed) + " rows)"
                                           : st.red(std::to_string(p.findings) + " findings in " + std::to_string(p.bad_rows) + " of " +
                                                    std::to_string(p.rows_probed) + " rows")});
    if (!p.ok && !p.global_fault && o.failure != RunFailure::nonfinite) {
      kv.push_back({"probe rows", summarize_positions(p.bad_row_ids, 12)});
      kv.push_back({"probe heads", summarize_positions(p.bad_head_ids, 12)});
    }
  }
  if (o.compare) {
    const auto& c = *o.compare;
    kv.push_back({"tolerance", "atol " + fmt_double(c.tol.atol) + ", rtol " + fmt_double(c.tol.rtol) + ", cos " + fmt_double(c.tol.cos_tol) + " (" +
                                   c.tol.source + ")"});
    kv.push_back({"max abs err", fmt_double(c.max_abs_err) + " at request " + std::to_string(c.max_abs_at.request) + ", token " +
                                     std::to_string(c.max_abs_at.token) + ", head " + std::to_string(c.max_abs_at.head) + ", dim " +
                                     std::to_string(c.max_abs_at.dim) +
                                     (c.passed && c.max_abs_err > c.tol.atol ? " (above atol: such elements pass on |d|/|ref| <= rtol)" : "")});
    // above rtol and still ok: those elements passed on atol (the rule is atol OR rtol)
    kv.push_back({"max rel err", fmt_double(c.max_rel_err) + (c.passed && c.max_rel_err > c.tol.rtol ? " (above rtol: such elements pass on |d| <= atol)" : "")});
    kv.push_back({"cos diff", fmt_double(c.cos_diff) + ", NMSE " + fmt_double(c.nmse)});
    // the rule that decided, beside the errors: an element passes on atol OR rtol, so a max
    // rel err above rtol is no contradiction (docs/design.md §6, Tolerances)
    const std::string rule = "|d| <= atol " + fmt_double(c.tol.atol) + " or |d|/|ref| <= rtol " + fmt_double(c.tol.rtol);
    kv.push_back({"numeric", c.passed ? st.green("ok") + " (every element: " + rule + "; cos diff <= " + fmt_double(c.tol.cos_tol) + ")"
                                      : st.red(std::to_string(c.failing_elements) + " of " + std::to_string(c.compared_elements) + " elements fail") +
                                            " (an element passes when " + rule + "; cos diff <= " + fmt_double(c.tol.cos_tol) + ")"});
    if (c.lse_compared) kv.push_back({"lse", c.lse_passed ? "ok (max abs err " + fmt_double(c.lse_max_abs_err) + ")" : st.red(std::to_string(c.lse_failing) + " fail")});
    for (const auto& r : c.reasons) kv.push_back({"reason", r});
  }
  if (o.probe_compare) {
    // --probe: the verdict on the probe's inputs beside the one on random inputs above
    const auto& c = *o.probe_compare;
    kv.push_back({"probe numeric", c.passed ? st.green("ok") : st.red(std::to_string(c.failing_elements) + " of " + std::to_string(c.compared_elements) +
                                                                        " elements fail (max abs err " + fmt_double(c.max_abs_err) + ")")});
  }
  if (o.padding) {
    const PaddingReport& pr = *o.padding;
    const std::string contract = "contract " + std::string(to_string(pr.contract));
    if (pr.contract == PadRowContract::untouched) kv.push_back({"padding rows", std::to_string(pr.rows_checked) + ", " + contract + ": not checked"});
    else if (pr.ok) kv.push_back({"padding rows", "ok (" + std::to_string(pr.rows_checked) + ", " + contract + ")"});
    else
      kv.push_back({"padding rows", st.red(std::to_string(pr.bad_rows) + " of " + std::to_string(pr.rows_checked) + " break the " + contract + ": rows " +
                                           summarize_positions(pr.bad_row_ids, 12))});
  }
  if (o.cross) kv.push_back({"gpu vs cpu", o.cross->passed ? st.green("ok") + " (max abs err " + fmt_double(o.cross->max_abs_err) + ")" : st.red("DIFFER")});
  // the route's findings and the known upstream kernel faults it lands on (docs/known_faults.md),
  // as `route` prints them; JSON carries them in route.findings and route.known_faults
  for (const auto& f : o.route.findings) kv.push_back({"finding", st.yellow(f)});
  for (const auto& w : o.route.known_faults) kv.push_back({"warning", st.yellow(known_fault_text(w))});
  for (StackFindingId f : o.stack_findings) kv.push_back({"stack finding", st.yellow(stack_finding_text(f))});
  (void)verbose;  // -v detail goes to stderr (cmd_run), never into the report
  if (o.status != RunStatus::passed)
    kv.push_back({"time (ms)", "metadata " + fmt_double(o.ms_metadata, 3) + ", plan+audit " + fmt_double(o.ms_plan, 3) + ", inputs " + fmt_double(o.ms_inputs, 3) +
                                   ", reference " + fmt_double(o.ms_reference, 3) + ", executor " + fmt_double(o.ms_execute, 3) + ", compare " +
                                   fmt_double(o.ms_compare, 3)});
  print_kv(os, kv);
  if (o.captured_plan && !o.captured_plan->ok) {
    os << "\ncaptured plan invariants broken (first " << o.captured_plan->violations.size() << " of " << o.captured_plan->total_violations << "):\n";
    for (const auto& v : o.captured_plan->violations) {
      os << "  " << st.red(to_string(v.rule));
      if (v.work >= 0) os << "; work " << v.work;
      if (v.q_row >= 0) os << "; q row " << v.q_row;
      os << ": " << terminal_safe(v.message) << "\n";
    }
  }
  if (o.audit && !o.audit->ok) {
    os << "\nrows reading the wrong KV positions (first " << o.audit->bad.size() << " of " << o.audit->bad_rows << "):\n";
    Table t;
    t.header = {"row", "request", "token", "heads", "extra", "missing", "detail"};
    t.right_align = {true, true, true, false, true, true, false};
    for (const auto& r : o.audit->bad) {
      std::string heads = r.heads.size() == (size_t)b.model.num_heads ? "all" : std::to_string(r.heads.size());
      t.add({std::to_string(r.row), std::to_string(r.request), std::to_string(r.token), heads, std::to_string(r.extra), std::to_string(r.missing), r.detail});
    }
    t.print(os, Format::table);
    for (const auto& e : o.audit->errors) os << "  " << e << "\n";
  }
  if (o.probe && !o.probe->ok && !o.probe->global_fault && o.failure != RunFailure::nonfinite) {
    os << "\nposition probe findings (first " << o.probe->listed.size() << " of " << o.probe->findings << "):\n";
    Table t;
    t.header = {"row", "request", "token", "head", "position", "edge", "finding", "weight"};
    t.right_align = {true, true, true, true, true, false, false, true};
    for (const auto& f : o.probe->listed)
      t.add({std::to_string(f.target.row), std::to_string(f.target.request), std::to_string(f.target.token), std::to_string(f.target.head),
             std::to_string(f.target.position), to_string(f.target.edge), to_string(f.kind), fmt_double(f.weight, 3)});
    t.print(os, Format::table);
  }
  if (o.compare && !o.compare->passed) {
    const auto& c = *o.compare;
    if (!c.failing.empty()) {
      os << "\nfailing (request, token, head) (first " << c.failing.size() << " of " << c.failing_row_heads << "):\n";
      for (const auto& r : c.failing) os << "  request " << r.request << ", token " << r.token << ", head " << r.head << ": " << r.failing_elements << " elements\n";
    }
    if (!c.unwritten.empty()) {
      os << "\nunwritten (request, token, head) (first " << c.unwritten.size() << " of " << c.unwritten_row_heads << "):\n";
      for (const auto& r : c.unwritten) os << "  request " << r.request << ", token " << r.token << ", head " << r.head << "\n";
    }
  }
}

}  // namespace mlactl::cli
