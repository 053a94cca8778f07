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
using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) { return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count(); }

uint16_t nan_bits(DType d) { return d == DType::fp16 ? 0x7E00 : 0x7FC0; }

// Executes the plan with one executor on freshly poisoned outputs; returns the
// user-layout output and LSE.
struct ExecOutput {
  ExecResult result;
  std::vector<float> out, lse;
};
ExecOutput execute(Executor& ex, const Batch& b, const RoutePlan& plan, const Inputs& in, const ViewLayout& layout, const EncodedTensor& kq) {
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

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::passed: return "passed";
    case RunStatus::incorrect: return "incorrect";
    case RunStatus::refused: return "refused";
    case RunStatus::failed: return "failed";
    case RunStatus::skipped: return "skipped";
  }
  return "?";
}

const char* to_string(RunFailure f) {
  switch (f) {
    case RunFailure::position_audit: return "position audit";
    case RunFailure::position_probe: return "position probe";
    case RunFailure::nonfinite: return "non-finite";
    case RunFailure::numeric: return "numeric";
    case RunFailure::cross_check: return "cross check";
  }
  return "?";
}

std::optional<RunFailure> run_failure_from_string(const std::string& s) {
  for (RunFailure f : {RunFailure::position_audit, RunFailure::position_probe, RunFailure::nonfinite, RunFailure::numeric, RunFailure::cross_check})
    if (s == to_string(f)) return f;
  return std::nullopt;
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

const char* to_string(RunStage s) {
  switch (s) {
    case RunStage::route: return "route";
    case RunStage::plan: return "plan and audit";
    case RunStage::inputs: return "inputs";
    case RunStage::reference: return "reference";
    case RunStage::execute: return "execute";
    case RunStage::compare: return "compare";
  }
  return "";
}

RunOutcome run_pipeline(const Batch& b, const RunOptions& opt) {
  RunOutcome o;
  o.out_dtype = b.model.dtype;
  auto stage = [&](RunStage s) {
    if (opt.on_stage) opt.on_stage(s);
  };
  stage(RunStage::route);
  auto t0 = clock_type::now();
  RoutedBatch rb = route_batch(b, opt.kernel);
  o.route = rb.decision;
  if (rb.refused()) {
    o.status = RunStatus::refused;
    o.exit_code = kExitRefused;
    o.message = rb.refusal();
    return o;
  }
  o.ms_metadata = ms_since(t0);
  auto rows = oracle_windows(b);

  stage(RunStage::plan);
  t0 = clock_type::now();
  CapturedMetadata cap;
  if (!b.captured.is_null()) {
    cap = parse_captured(b, b.captured, (int64_t)rows.size());
    RoutePlan own = plan_batch(b, rb, rows, opt.planner);
    o.captured = diff_captured(b, rb.metadata, rows, cap, &own);
  }
  if (opt.use_captured && cap.empty()) throw Error(kExitUsage, "", "--use-captured: the batch has no `captured` arrays");
  const bool replay = !cap.empty() && !opt.own_metadata;
  {
    try {
      // the kernel runs exactly what the real stack produced, validated as a plan of this
      // batch first (docs/design.md §2 captured); else mlactl's own plan
      o.plan = replay ? plan_captured(b, rb, rows, cap, opt.planner) : plan_batch(b, rb, rows, opt.planner);
    } catch (const Error& e) {
      // a route the stack models only up to routing (vllm-cuda flashmla_sparse, FA3's
      // scheduler): refused with the reason, exit 5, never a guessed schedule
      if (e.exit_code() != kExitRefused) throw;
      o.status = RunStatus::refused;
      o.exit_code = kExitRefused;
      o.message = e.what();
      return o;
    }
  }
  o.audit = audit_positions(b, rows, *o.plan, opt.max_listed);
  o.ms_plan = ms_since(t0);

  {
    // refuse up front what would not fit (docs/design.md §9): inputs, reference + output copies,
    // the kernel's q/out/partial buffers and the audit's slot map
    const RoutePlan& p = *o.plan;
    const int64_t nrows = (int64_t)rows.size();
    const int64_t out_elems = nrows * b.model.num_heads * b.model.kv_lora_rank;
    const int64_t view_elems = nrows * std::max(1, p.kernel_view.fold_ratio) * p.kernel_view.heads * p.kernel_view.v_dim;
    const int64_t partial_elems = p.work.num_partial_rows * p.kernel_view.heads * p.kernel_view.v_dim;
    const int64_t slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
    const int64_t need = estimated_input_bytes(b, nrows) + out_elems * 4 * 4 + view_elems * (2 + 4) + partial_elems * 4 * 2 + slots * 8 +
                         (int64_t)p.kv_indices.size() * 4;
    require_within_budget(need, "/requests", "inputs, reference and outputs");
  }
  std::string skip;
  // an external executor is made once the inputs and the layout it writes out exist
  std::unique_ptr<Executor> ex = opt.external ? nullptr : make_executor(opt.backend, opt.threads, &skip);
  if (!ex && !opt.external) {
    o.status = RunStatus::skipped;
    o.exit_code = kExitSkipped;
    o.message = skip;
    return o;
  }
  if (ex) {
    o.executor = ex->name();
    o.ran.executor = dynamic_cast<GpuExecutor*>(ex.get()) ? ExecutorKind::gpu : ExecutorKind::cpu;
  }

  stage(RunStage::inputs);
  t0 = clock_type::now();
  Inputs in = opt.inputs_dir.empty() ? generate_inputs(b, rows, opt.threads) : load_captured_inputs(opt.inputs_dir, b, rows);
  const RoutePlan& plan = *o.plan;
  std::optional<ProbeSpec> probe;
  if (opt.probe) {
    probe = plan_probe(b, rows, &plan);
    apply_probe_inputs(b, rows, *probe, in);
  }
  ViewLayout layout;
  try {
    layout = make_view_layout((int64_t)rows.size(), plan.kernel_view, plan.heads, plan.uniform_qlen);
  } catch (const std::exception& e) {
    o.status = RunStatus::failed;
    o.exit_code = kExitDevice;
    o.message = std::string("the kernel cannot lay out q for this view: ") + e.what();
    return o;
  }
  EncodedTensor kq = build_kernel_q(in, layout, plan.kernel_view);
  o.ms_inputs = ms_since(t0);

  stage(RunStage::reference);
  t0 = clock_type::now();
  ReferenceOutput ref = compute_reference(b, rows, in, opt.threads);
  o.ms_reference = ms_since(t0);

  ExternalExecutor* ext = nullptr;
  if (opt.external) {
    auto e = std::make_unique<ExternalExecutor>(*opt.external, ExternalCase{&b, &rb, &plan, &in, &layout});
    ext = e.get();
    ex = std::move(e);
  }

  stage(RunStage::execute);
  t0 = clock_type::now();
  ExecOutput eo = execute(*ex, b, plan, in, layout, kq);
  o.ms_execute = ms_since(t0);
  o.executor = ex->name();
  // what the launch sites reported (GPU executor), kept on a failed run too
  o.ran = kernel_ran(ext ? ExecutorKind::external : o.ran.executor, eo.result);
  if (ext && ext->unsupported()) {
    o.status = RunStatus::skipped;
    o.exit_code = kExitSkipped;
    o.message = *ext->unsupported();
    return o;
  }
  if (!eo.result.ok) {
    o.status = RunStatus::failed;
    o.exit_code = kExitDevice;
    o.message = ext ? eo.result.error : "device/runtime error: " + eo.result.error;
    return o;
  }
  if (ext && ext->all_nan()) {
    CpuExecutor cpu(opt.threads);
    ExecOutput ec = execute(cpu, b, plan, in, layout, kq);
    bool cpu_all_nan = ec.result.ok;
    for (size_t i = 0; cpu_all_nan && i < ec.out.size(); ++i) cpu_all_nan = std::isnan(ec.out[i]);
    if (!cpu_all_nan) {
      o.status = RunStatus::failed;
      o.exit_code = kExitDevice;
      o.message = ext->all_nan_error();
      return o;
    }
  }

  stage(RunStage::compare);
  t0 = clock_type::now();
  CompareOptions co;
  co.tol = default_tolerance(b.model.dtype, b.kv_cache.dtype, b.decode.q_dtype);
  co.lse_tol = default_lse_tolerance(b.kv_cache.dtype, b.decode.q_dtype);
  if (opt.atol || opt.rtol || opt.cos_tol) co.tol.source = "command line";
  if (opt.atol) co.tol.atol = *opt.atol;
  if (opt.rtol) co.tol.rtol = *opt.rtol;
  if (opt.cos_tol) co.tol.cos_tol = *opt.cos_tol;
  co.out_dtype = b.model.dtype;
  co.max_rows_listed = opt.max_listed;
  // an external executor may leave out lse.npy: then only the output is compared
  const float* got_lse = ext && !ext->wrote_lse() ? nullptr : eo.lse.data();
  o.compare = compare_outputs(rows, ref, eo.out.data(), got_lse, co);
  if (probe) o.probe = evaluate_probe(*probe, eo.out, got_lse ? eo.lse.data() : nullptr, b.model.num_heads, b.model.kv_lora_rank, opt.max_listed);
  if (opt.cross_check && o.executor != "cpu") {
    CpuExecutor cpu(opt.threads);
    ExecOutput ec = execute(cpu, b, plan, in, layout, kq);
    if (ec.result.ok) {
      // the CPU executor's output plays the reference: same work list, same inputs
      ReferenceOutput cref = ref;
      cref.out = ec.out;
      cref.lse = ec.lse;
      for (size_t i = 0; i < rows.size(); ++i) cref.computed[i] = rows[i].kind != MaskKind::padding;
      o.cross = compare_outputs(rows, cref, eo.out.data(), eo.lse.data(), co);
    }
  }
  o.ms_compare = ms_since(t0);

  if (!o.audit->ok) o.failure = RunFailure::position_audit;
  else if (o.probe && !o.probe->ok) o.failure = RunFailure::position_probe;
  else if (!o.compare->passed && (o.compare->unwritten_row_heads > 0 || o.compare->nonfinite_mismatches > 0)) o.failure = RunFailure::nonfinite;
  else if (!o.compare->passed) o.failure = RunFailure::numeric;
  else if (o.cross && !o.cross->passed) o.failure = RunFailure::cross_check;
  if (o.failure) {
    o.status = RunStatus::incorrect;
    o.exit_code = kExitVerifyFailed;
    switch (*o.failure) {
      case RunFailure::position_audit:
        o.message = "position audit: " + std::to_string(o.audit->bad_rows) + " rows read the wrong KV positions";
        break;
      case RunFailure::position_probe:
        o.message = "position probe: " + std::to_string(o.probe->bad_rows) + " rows read a KV position outside their window or missed one inside";
        break;
      case RunFailure::nonfinite: o.message = "non-finite output where the reference is finite (unwritten rows or poisoned reads)"; break;
      case RunFailure::numeric: o.message = "numeric comparison failed"; break;
      case RunFailure::cross_check: o.message = "GPU and CPU executors differ on the same work list"; break;
    }
    if (!opt.dump_dir.empty()) o.dumped = dump_failure(opt.dump_dir, b, o, in, eo.out, ref);
  }
  return o;
}

nlohmann::ordered_json outcome_json(const RunOutcome& o) {
  nlohmann::ordered_json j;
  j["status"] = to_string(o.status);
  if (o.failure) j["reason"] = to_string(*o.failure);
  j["exit_code"] = o.exit_code;
  if (!o.message.empty()) j["message"] = o.message;
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
                           {"bad_row_ids", p.bad_row_ids}, {"listed", fs}};
  }
  if (o.compare) j["compare"] = cmp_json(*o.compare);
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
    case RunStatus::incorrect: status = st.red("INCORRECT"); break;
    case RunStatus::failed: status = st.red("FAILED"); break;
    case RunStatus::refused: status = st.yellow("REFUSED"); break;
    case RunStatus::skipped: status = st.yellow("SKIPPED"); break;
  }
  kv.push_back({"status", status});
  if (!o.message.empty()) kv.push_back({"message", o.message});
  kv.push_back({"route", std::string(to_string(o.route.route)) + (o.route.aiter_kernel.empty() ? "" : " (" + o.route.aiter_kernel + ")")});
  if (o.plan) kv.push_back({"planner", std::string(to_string(o.plan->planner)) + ", " + std::to_string(o.plan->work.work_info.size()) + " works on " +
                                           std::to_string(o.plan->work.num_workgroups) + " workgroups"});
  if (!o.executor.empty()) kv.push_back({"executor", o.executor});
  for (auto& line : kernel_ran_lines(o.ran)) kv.push_back(std::move(line));  // "stage 1", "reduce"
  if (!o.dumped.empty()) kv.push_back({"dumped", terminal_safe(o.dumped) + ".{batch,result}.json, .out.npy, .ref.npy"});
  if (o.captured) kv.push_back({"captured", o.captured->same ? o.captured->message : st.red("differs: ") + o.captured->message});
  if (o.audit)
    kv.push_back({"position audit", o.audit->ok ? "ok (" + std::to_string(o.audit->rows_checked) + " rows)"
                                                : st.red(std::to_string(o.audit->bad_rows) + " of " + std::to_string(o.audit->rows_checked) +
                                                         " rows read wrong KV positions")});
  if (o.probe)
    kv.push_back({"position probe", o.probe->ok ? "ok (" + std::to_string(o.probe->heads_probed) + " heads of " + std::to_string(o.probe->rows_probed) + " rows)"
                                                : st.red(std::to_string(o.probe->findings) + " findings in " + std::to_string(o.probe->bad_rows) + " of " +
                                                         std::to_string(o.probe->rows_probed) + " rows")});
  if (o.probe && !o.probe->ok) kv.push_back({"probe rows", summarize_positions(o.probe->bad_row_ids, 12)});
  if (o.compare) {
    const auto& c = *o.compare;
    kv.push_back({"tolerance", "atol " + fmt_double(c.tol.atol) + ", rtol " + fmt_double(c.tol.rtol) + ", cos " + fmt_double(c.tol.cos_tol) + " (" +
                                   c.tol.source + ")"});
    kv.push_back({"max abs err", fmt_double(c.max_abs_err) + " at request " + std::to_string(c.max_abs_at.request) + ", token " +
                                     std::to_string(c.max_abs_at.token) + ", head " + std::to_string(c.max_abs_at.head) + ", dim " +
                                     std::to_string(c.max_abs_at.dim)});
    kv.push_back({"max rel err", fmt_double(c.max_rel_err)});
    kv.push_back({"cos diff", fmt_double(c.cos_diff) + ", NMSE " + fmt_double(c.nmse)});
    kv.push_back({"numeric", c.passed ? st.green("ok") : st.red(std::to_string(c.failing_elements) + " of " + std::to_string(c.compared_elements) + " elements fail")});
    if (c.lse_compared) kv.push_back({"lse", c.lse_passed ? "ok (max abs err " + fmt_double(c.lse_max_abs_err) + ")" : st.red(std::to_string(c.lse_failing) + " fail")});
    for (const auto& r : c.reasons) kv.push_back({"reason", r});
  }
  if (o.cross) kv.push_back({"gpu vs cpu", o.cross->passed ? st.green("ok") + " (max abs err " + fmt_double(o.cross->max_abs_err) + ")" : st.red("DIFFER")});
  (void)verbose;  // -v detail goes to stderr (cmd_run), never into the report
  if (o.status != RunStatus::passed)
    kv.push_back({"time (ms)", "metadata " + fmt_double(o.ms_metadata, 3) + ", plan+audit " + fmt_double(o.ms_plan, 3) + ", inputs " + fmt_double(o.ms_inputs, 3) +
                                   ", reference " + fmt_double(o.ms_reference, 3) + ", executor " + fmt_double(o.ms_execute, 3) + ", compare " +
                                   fmt_double(o.ms_compare, 3)});
  print_kv(os, kv);
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
  if (o.probe && !o.probe->ok) {
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
