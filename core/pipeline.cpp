#include "core/pipeline.hpp"

#include <chrono>
#include <cmath>

#include "core/budget.hpp"
#include "core/parallel.hpp"
#include "core/reference.hpp"
#include "core/text.hpp"

namespace mlactl {

namespace {
using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) { return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count(); }
}  // namespace

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
    case RunFailure::captured_plan: return "captured plan";
    case RunFailure::position_audit: return "position audit";
    case RunFailure::position_probe: return "position probe";
    case RunFailure::nonfinite: return "non-finite";
    case RunFailure::numeric: return "numeric";
    case RunFailure::cross_check: return "cross check";
    case RunFailure::padding_rows: return "padding rows";
  }
  return "?";
}

const char* to_string(PadRowContract c) {
  switch (c) {
    case PadRowContract::zeros: return "zeros";
    case PadRowContract::finite: return "finite";
    case PadRowContract::untouched: return "untouched";
  }
  return "?";
}

PadRowContract pad_row_contract(StackId stack, Route route) {
  // vLLM's TRITON_MLA hands its kernel every flattened row, padding ones included, and the
  // kernel writes them (docs/stacks/vllm-rocm-aiter.md §V4); #57094's 0/0 made them NaN.
  // Every other route runs a work list or scheduler that covers no padding row.
  if (route == Route::triton_mla && (stack == StackId::vllm_rocm_aiter || stack == StackId::vllm_cuda)) return PadRowContract::finite;
  return PadRowContract::untouched;
}

std::optional<RunFailure> run_failure_from_string(const std::string& s) {
  for (RunFailure f : {RunFailure::captured_plan, RunFailure::position_audit, RunFailure::position_probe, RunFailure::nonfinite, RunFailure::numeric, RunFailure::cross_check,
                       RunFailure::padding_rows})
    if (s == to_string(f)) return f;
  return std::nullopt;
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

namespace {

// A reference that is not finite is a problem of the inputs, found before any executor runs
// (issue 39: it was compared, and the executor's finite output reported INCORRECT). Names
// the input: a q value (a captured q, --inputs), a KV row (a captured one, or fp8 values
// times kv_cache.scale past fp32), else the scores (softmax_scale × q·k past fp32).
void require_finite_reference(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, const ReferenceOutput& ref, bool captured_inputs) {
  const int64_t H = ref.num_heads, V = ref.v_dim, D = in.head_dim;
  for (int64_t r = 0; r < ref.num_rows; ++r) {
    if (!ref.computed[(size_t)r]) continue;
    for (int64_t h = 0; h < H; ++h) {
      bool finite = std::isfinite(ref.lse[(size_t)(r * H + h)]);
      for (int64_t d = 0; finite && d < V; ++d) finite = std::isfinite(ref.out[(size_t)((r * H + h) * V + d)]);
      if (finite) continue;
      const RowWindow& w = rows[(size_t)r];
      const std::string at = "q row " + std::to_string(r) + " (request " + std::to_string(w.request) + ", token " + std::to_string(w.token) + "), head " +
                             std::to_string(h);
      const std::string why = ": mlactl's reference is not finite there, a problem of the inputs, not of any executor";
      std::vector<float> x((size_t)D);
      in.q.decode((r * in.num_heads + h) * D, D, x.data());
      for (int64_t e = 0; e < D; ++e)
        if (!std::isfinite(x[(size_t)e]))
          throw invalid_input("", at + ": q[" + std::to_string(r) + "][" + std::to_string(h) + "][" + std::to_string(e) + "] is " +
                                      std::to_string(x[(size_t)e]) + (captured_inputs ? " (the captured q: --inputs)" : "") + why);
      const int64_t n = has_position_set(w.kind) ? (int64_t)w.sparse_positions.size() : w.length();
      for (int64_t j = 0; j < n; ++j) {
        const int64_t pos = has_position_set(w.kind) ? w.sparse_positions[(size_t)j] : w.begin + j;
        const int64_t slot = kv_slot_of(b, w.request, pos);
        in.kv.decode(slot * D, D, x.data());
        for (int64_t e = 0; e < D; ++e) {
          if (std::isfinite(x[(size_t)e])) continue;
          const bool scaled = !captured_inputs && in.kv.dtype == DType::fp8;
          throw invalid_input(scaled ? "/kv_cache/scale" : "",
                              at + ": the KV row of request " + std::to_string(w.request) + ", position " + std::to_string(pos) + " (slot " +
                                  std::to_string(slot) + ") decodes to " + std::to_string(x[(size_t)e]) +
                                  (captured_inputs ? " (a captured KV block: --inputs)"
                                                   : scaled ? " (kv_cache.scale " + fmt_double(in.kv.scale, 6) + " times its fp8 values)" : "") +
                                  why);
        }
      }
      throw invalid_input("/model/softmax_scale", at + ": softmax_scale (" + fmt_double(b.model.softmax_scale, 6) + ") × q·k overflows fp32" + why);
    }
  }
}

}  // namespace

CaseOutcome run_case(const Batch& b, const CaseOptions& opt, const CaseHooks& hooks,
                     const std::function<void(const CaseOutcome&, const CaseBuffers&)>& on_incorrect) {
  CaseOutcome o;
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
  // --use-captured runs every captured array or refuses: one the routed kernel does not read
  // would be dropped in silence (issue 39)
  if (opt.use_captured)
    for (const auto& a : cap.stack_arrays)
      if (const auto reader = captured_array_reader(a.first); reader && *reader != rb.decision.route)
        throw Error(kExitUsage, "", "--use-captured: captured `" + a.first + "` cannot be used: the routed kernel (" + to_string(rb.decision.route) +
                                        ") does not read it, " + to_string(*reader) + " does (--kernel " + to_string(*reader) + " runs it)");
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
  // refuse up front what would not fit (docs/design.md §9), before any of it exists (the
  // audit's slot map came first: issue 39): inputs, reference + output copies, the kernel's
  // q/out/partial buffers, the audit's slot map, --probe's second case and its slot owners,
  // and the reference's per-thread buffers, whose threads are capped to fit
  int reference_threads = opt.threads > 0 ? opt.threads : default_thread_count();
  {
    const RoutePlan& p = *o.plan;
    const int64_t nrows = (int64_t)rows.size();
    const int64_t out_elems = nrows * b.model.num_heads * b.model.kv_lora_rank;
    const int64_t view_elems = nrows * std::max(1, p.kernel_view.fold_ratio) * p.kernel_view.heads * p.kernel_view.v_dim;
    const int64_t partial_elems = p.work.num_partial_rows * p.kernel_view.heads * p.kernel_view.v_dim;
    const int64_t slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
    const int64_t inputs = estimated_input_bytes(b, nrows), reference = out_elems * 4 + nrows * b.model.num_heads * 4;
    int64_t need = inputs + out_elems * 4 * 4 + view_elems * (2 + 4) + partial_elems * 4 * 2 + slots * 8 + (int64_t)p.kv_indices.size() * 4;
    if (opt.probe) need += inputs + reference + slots * 4;
    const int64_t workspace = std::max<int64_t>(1, reference_workspace_bytes(b, rows));
    require_within_budget(need + workspace, "/requests", "inputs, reference and outputs");
    reference_threads = (int)std::max<int64_t>(1, std::min<int64_t>(reference_threads, (memory_budget() - need) / workspace));
  }
  o.audit = audit_positions(b, rows, *o.plan, opt.max_listed);
  if (o.plan->planner == PlannerId::captured) {
    // the captured work list (AITER's arrays, FlashMLA's schedule and num_splits) checked
    // whole before it runs: KV positions alone pass a capture whose partials are merged
    // twice or never (issue 39)
    o.captured_plan = check_plan_invariants(*o.plan, rb.metadata.max_qo_len);
  }
  o.ms_plan = ms_since(t0);
  // A broken captured plan is the verdict whatever the executor then does (it still runs,
  // bounded by validate_captured_work, so the audit, probe and compare show the damage): a
  // skip (no GPU) or an executor's failure on it is reported as the plan's fault.
  const bool broken_capture = o.captured_plan && !o.captured_plan->ok;
  auto capture_verdict = [&]() {
    if (!broken_capture) return;
    o.status = RunStatus::incorrect;
    o.exit_code = kExitVerifyFailed;
    o.failure = RunFailure::captured_plan;
    o.message = captured_plan_message(*o.captured_plan) + (o.message.empty() ? "" : " (executor: " + o.message + ")");
  };

  // no executor (no GPU for --backend gpu): skipped before any input is made
  if (const auto why = hooks.unavailable ? hooks.unavailable() : std::nullopt) {
    o.status = RunStatus::skipped;
    o.exit_code = kExitSkipped;
    o.message = *why;
    capture_verdict();
    return o;
  }

  stage(RunStage::inputs);
  t0 = clock_type::now();
  Inputs in = hooks.load_inputs ? hooks.load_inputs(b, rows) : generate_inputs(b, rows, opt.threads);
  const RoutePlan& plan = *o.plan;
  // --probe: the probe's inputs are a second case beside the random one (pin)
  std::optional<ProbeSpec> probe;
  std::optional<Inputs> pin;
  if (opt.probe) {
    pin = in;
    probe = plan_probe(b, rows, &plan);
    apply_probe_inputs(b, rows, *probe, *pin);
  }
  ViewLayout layout;
  try {
    layout = make_view_layout((int64_t)rows.size(), plan.kernel_view, plan.heads, plan.uniform_qlen);
  } catch (const std::exception& e) {
    o.status = RunStatus::failed;
    o.exit_code = kExitDevice;
    o.message = std::string("the kernel cannot lay out q for this view: ") + e.what();
    capture_verdict();
    return o;
  }
  EncodedTensor kq = build_kernel_q(in, layout, plan.kernel_view);
  std::optional<EncodedTensor> pkq;
  if (pin) pkq = build_kernel_q(*pin, layout, plan.kernel_view);
  o.ms_inputs = ms_since(t0);

  stage(RunStage::reference);
  t0 = clock_type::now();
  ReferenceOutput ref = compute_reference(b, rows, in, reference_threads);
  std::optional<ReferenceOutput> pref;
  if (pin) pref = compute_reference(b, rows, *pin, reference_threads);
  require_finite_reference(b, rows, in, ref, (bool)hooks.load_inputs);
  o.ms_reference = ms_since(t0);

  // Runs the executor on one set of inputs; false: the outcome is final (skipped, failed).
  auto execute = [&](const Inputs& inputs, const EncodedTensor& q, ExecutionResult& eo) {
    const ExecutionRequest request{b, rb, plan, inputs, layout, q};
    std::unique_ptr<CaseExecutor> ex = hooks.make_executor(request);
    if (o.executor.empty()) o.executor = ex->name();
    eo = ex->execute(request);
    o.executor = ex->name();  // a user's kernel names itself while it runs
    if (eo.unsupported) {
      o.status = RunStatus::skipped;
      o.exit_code = kExitSkipped;
      o.message = *eo.unsupported;
      return false;
    }
    if (!eo.ok) {
      o.status = RunStatus::failed;
      o.exit_code = kExitDevice;
      o.message = eo.error;
      return false;
    }
    if (eo.error_unless_cpu_all_nan) {
      ExecutionResult ec = hooks.make_cpu_executor()->execute(request);
      bool cpu_all_nan = ec.ok;
      for (size_t i = 0; cpu_all_nan && i < ec.out.size(); ++i) cpu_all_nan = std::isnan(ec.out[i]);
      if (!cpu_all_nan) {
        o.status = RunStatus::failed;
        o.exit_code = kExitDevice;
        o.message = *eo.error_unless_cpu_all_nan;
        return false;
      }
    }
    return true;
  };
  stage(RunStage::execute);
  t0 = clock_type::now();
  ExecutionResult eo, peo;
  if (!execute(in, kq, eo) || (pin && !execute(*pin, *pkq, peo))) {
    capture_verdict();
    return o;
  }
  // the stack's code after the kernel (sglang #19902's o[q_mask]): the rows the caller returns
  auto caller_view = [&](ExecutionResult& r) {
    if (plan.caller_rows) gather_caller_rows(*plan.caller_rows, b.model.num_heads, b.model.kv_lora_rank, r.out, r.lse);
  };
  caller_view(eo);
  if (pin) caller_view(peo);
  o.ms_execute = ms_since(t0);

  stage(RunStage::compare);
  t0 = clock_type::now();
  CompareOptions co;
  co.tol = default_tolerance(b.model.dtype, b.kv_cache.dtype, b.decode.q_dtype);
  co.lse_tol = default_lse_tolerance(b.kv_cache.dtype, b.decode.q_dtype);
  if (eo.p_rounded_to) co.tol = with_p_rounding(co.tol, *eo.p_rounded_to, max_abs_v(in));
  if (opt.atol || opt.rtol || opt.cos_tol) co.tol.source = "command line";
  if (opt.atol) co.tol.atol = *opt.atol;
  if (opt.rtol) co.tol.rtol = *opt.rtol;
  if (opt.cos_tol) co.tol.cos_tol = *opt.cos_tol;
  co.out_dtype = b.model.dtype;
  co.max_rows_listed = opt.max_listed;
  // an external executor may leave out lse.npy: then only the output is compared
  const float* got_lse = eo.wrote_lse ? eo.lse.data() : nullptr;
  o.compare = compare_outputs(rows, ref, eo.out.data(), got_lse, co);
  if (pin) {
    const float* probe_lse = peo.wrote_lse ? peo.lse.data() : nullptr;
    o.probe_compare = compare_outputs(rows, *pref, peo.out.data(), probe_lse, co);
    o.probe = evaluate_probe(*probe, peo.out, probe_lse, b.model.num_heads, b.model.kv_lora_rank, opt.max_listed);
  }
  if (eo.check_padding_rows) {
    // padding rows against the stack's contract, on every run's output
    PaddingReport pr;
    pr.contract = pad_row_contract(rb.stack->id(), plan.route);
    const int64_t per_row = (int64_t)b.model.num_heads * b.model.kv_lora_rank;
    for (const RowWindow& w : rows) {
      if (w.kind != MaskKind::padding) continue;
      ++pr.rows_checked;
      if (pr.contract == PadRowContract::untouched) continue;
      bool bad = false;
      for (const std::vector<float>* out : {&eo.out, pin ? &peo.out : nullptr}) {
        if (!out) continue;
        for (int64_t i = w.row * per_row; i < (w.row + 1) * per_row; ++i) {
          const float x = (*out)[(size_t)i];
          if (!std::isfinite(x)) ++pr.nan_values, bad = true;
          else if (pr.contract == PadRowContract::zeros && x != 0) ++pr.nonzero_values, bad = true;
        }
      }
      if (bad) pr.bad_row_ids.push_back(w.row);
    }
    pr.bad_rows = (int64_t)pr.bad_row_ids.size();
    pr.ok = pr.bad_rows == 0;
    if (pr.rows_checked > 0) o.padding = pr;
  }
  if (opt.cross_check && o.executor != "cpu") {
    const ExecutionRequest request{b, rb, plan, in, layout, kq};
    ExecutionResult ec = hooks.make_cpu_executor()->execute(request);
    caller_view(ec);
    if (ec.ok) {
      // the CPU executor's output plays the reference: same work list, same inputs
      ReferenceOutput cref = ref;
      cref.out = ec.out;
      cref.lse = ec.lse;
      for (size_t i = 0; i < rows.size(); ++i) cref.computed[i] = rows[i].kind != MaskKind::padding;
      o.cross = compare_outputs(rows, cref, eo.out.data(), eo.lse.data(), co);
    }
  }
  o.ms_compare = ms_since(t0);

  auto nonfinite = [](const CompareReport& c) { return !c.passed && (c.unwritten_row_heads > 0 || c.nonfinite_mismatches > 0); };
  // NaN in every (row, head): no row was computed from the request's KV alone, which a kernel
  // that never wrote and one that reads the NaN-filled unused slots in every row both give; the
  // probe's NaN weights then name no edge (docs/executor-protocol.md § What the executor writes)
  auto every_row_nan = [&](const CompareReport& c) { return c.compared_rows > 0 && c.unwritten_row_heads == c.compared_rows * b.model.num_heads; };
  const bool all_rows_nan = every_row_nan(*o.compare) || (o.probe_compare && every_row_nan(*o.probe_compare));
  const bool probe_edges = o.probe && !o.probe->ok && !o.probe->global_fault && !all_rows_nan;
  const bool probe_global = o.probe && o.probe->global_fault;
  const bool probe_cmp_failed = o.probe_compare && !o.probe_compare->passed;
  if (o.plan) o.stack_findings = o.plan->stack_findings;
  if (broken_capture) o.failure = RunFailure::captured_plan;
  else if (!o.audit->ok) o.failure = RunFailure::position_audit;
  else if (probe_edges) o.failure = RunFailure::position_probe;
  else if (nonfinite(*o.compare) || (o.probe_compare && nonfinite(*o.probe_compare))) o.failure = RunFailure::nonfinite;
  else if (!o.compare->passed || probe_cmp_failed || probe_global) o.failure = RunFailure::numeric;
  else if (o.cross && !o.cross->passed) o.failure = RunFailure::cross_check;
  else if (o.padding && !o.padding->ok) o.failure = RunFailure::padding_rows;
  if (o.failure) {
    o.status = RunStatus::incorrect;
    o.exit_code = kExitVerifyFailed;
    switch (*o.failure) {
      case RunFailure::captured_plan: o.message = captured_plan_message(*o.captured_plan); break;
      case RunFailure::position_audit:
        o.message = "position audit: " + std::to_string(o.audit->bad_rows) + " rows read the wrong KV positions";
        if (!o.stack_findings.empty()) {
          // the modelled stack's own plan reads outside the window: its finding, not the executor's fault
          o.finding_in_stack = true;
          std::string names;
          for (StackFindingId f : o.stack_findings) names += (names.empty() ? "" : ", ") + std::string(stack_finding_info(f).name);
          o.message = "finding in the modelled stack (" + names + "): " + o.message;
        }
        break;
      case RunFailure::position_probe:
        o.message = "position probe: " + std::to_string(o.probe->bad_rows) + " rows read a KV position outside their window or missed one inside";
        break;
      case RunFailure::nonfinite:
        o.message = all_rows_nan ? "non-finite output: every row is NaN: the kernel reads poisoned (unused) slots, or wrote nothing"
                                 : "non-finite output where the reference is finite (unwritten rows or poisoned reads)";
        break;
      case RunFailure::numeric:
        if (probe_global)
          // the controls depend on no edge: a fault they show is not a KV position
          o.message = "global numeric fault: " + std::to_string(o.probe->controls_off) + " of " + std::to_string(o.probe->controls) +
                      " probe control heads are wrong too (the softmax scale, a dtype, the layout or an ignored fp8 scale; no KV position is blamed)";
        else if (o.compare->passed)
          o.message = "numeric comparison failed on the probe's inputs (random inputs pass)";
        else
          o.message = std::string("numeric comparison failed") + (o.probe_compare && o.probe_compare->passed ? " on random inputs (the probe's inputs pass)" : "");
        break;
      case RunFailure::cross_check: o.message = "GPU and CPU executors differ on the same work list"; break;
      case RunFailure::padding_rows:
        o.message = "padding rows: " + std::to_string(o.padding->bad_rows) + " of " + std::to_string(o.padding->rows_checked) +
                    " padding rows break the stack's contract (" + to_string(o.padding->contract) + "): " +
                    (o.padding->nan_values > 0 ? "NaN or inf in " + std::to_string(o.padding->nan_values) + " values"
                                               : std::to_string(o.padding->nonzero_values) + " values not 0");
        break;
    }
    // the kernel's rows passed on by the stack's own code, not as the kernel wrote them: say so
    if (plan.caller_rows && (*o.failure == RunFailure::nonfinite || *o.failure == RunFailure::numeric)) o.message += "; " + plan.caller_rows_why;
    // the buffers of the run the failure came from
    const bool from_probe = pin && (*o.failure == RunFailure::position_probe || probe_global || (o.compare->passed && probe_cmp_failed));
    if (on_incorrect) on_incorrect(o, from_probe ? CaseBuffers{&*pin, &peo.out, &*pref} : CaseBuffers{&in, &eo.out, &ref});
  }
  return o;
}

}  // namespace mlactl
