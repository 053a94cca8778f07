// The JSON Schemas of the verbs' JSON output (cli/output_schema.hpp). Objects are closed
// (additionalProperties false) so a field added to a printer without its schema fails
// tests/cli/check_output_schemas.py; the only open places are the stack's own arrays,
// printed under their upstream names (cli/common.cpp write_stack_array).
#include "cli/output_schema.hpp"

#include <algorithm>
#include <optional>

#include "cli/pipeline.hpp"
#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/json_schema.hpp"
#include "core/planners/registry.hpp"
#include "core/route.hpp"
#include "core/semantics.hpp"
#include "core/types.hpp"
#include "core/worklist.hpp"
#include "kernels/gpu_executor.hpp"
#include "kernels/stage1_kernel.hpp"

namespace mlactl::cli {

using ojson = nlohmann::ordered_json;

namespace {

ojson type(const char* t) { return {{"type", t}}; }
ojson integer() { return type("integer"); }
ojson boolean() { return type("boolean"); }
ojson string() { return type("string"); }
// nlohmann writes a NaN or an infinity as null: every float may be null
ojson number() { return {{"type", ojson::array({"number", "null"})}}; }
ojson array_of(ojson items) { return {{"type", "array"}, {"items", std::move(items)}}; }
ojson ints() { return array_of(integer()); }
ojson strings() { return array_of(string()); }
ojson ref(const std::string& def) { return {{"$ref", "#/$defs/" + def}}; }
ojson constant(ojson v) { return {{"const", std::move(v)}}; }
ojson one_of(std::vector<ojson> alts) { return {{"oneOf", ojson(std::move(alts))}}; }
ojson any_of(std::vector<ojson> alts) { return {{"anyOf", ojson(std::move(alts))}}; }
ojson enum_of(const std::vector<std::string>& names) { return {{"enum", names}}; }
ojson described(ojson s, const char* what) {
  s["description"] = what;
  return s;
}

using json_schema::object;  // closed: `required` lists the members every instance has
using json_schema::Props;
std::vector<std::string> keys(const Props& props) {
  std::vector<std::string> k;
  for (const auto& p : props) k.push_back(p.first);
  return k;
}
// all members required
ojson record(const Props& props) { return object(props, keys(props)); }

template <typename E>
std::vector<std::string> names_upto(E last) {
  std::vector<std::string> n;
  for (int i = 0; i <= static_cast<int>(last); ++i) n.push_back(to_string(static_cast<E>(i)));
  return n;
}

std::vector<std::string> route_names() { return names_upto(Route::refused); }
std::vector<std::string> planner_vocabulary() {
  std::vector<std::string> n = planner_names();
  n.push_back(to_string(PlannerId::captured));
  return n;
}

// The envelope every report starts with (cli/output.cpp json_envelope).
Props envelope(const std::optional<std::string>& verb) {
  return {{"schema_version", constant(1)},
          {"tool", record({{"name", constant("mlactl")}, {"version", string()}, {"commit", string()}})},
          {"argv", described(strings(), "the command line, as given")},
          {"command", verb ? constant(*verb) : described(string(), "the verb, or \"\" when none was recognised")}};
}

// A report of `verb`: the envelope, then its own members.
ojson report(const std::string& verb, Props own, const std::vector<std::string>& required) {
  Props all = envelope(verb);
  std::vector<std::string> req = keys(all);
  all.insert(all.end(), own.begin(), own.end());
  req.insert(req.end(), required.begin(), required.end());
  return object(all, req);
}

// --- the shared concepts ------------------------------------------------------------

ojson route_def() {
  return object({{"route", enum_of(route_names())},
                 {"persistent_schedule", boolean()},
                 {"padded_heads", described(integer(), "heads the kernel sees after padding; 0 when refused early")},
                 {"aiter_rules", described(string(), "vLLM ROCm AITER: the AITER rule set")},
                 {"aiter_kernel", described(string(), "vLLM ROCm AITER: the .co kernel the shape runs on, or \"\"")},
                 {"backend", described(string(), "vLLM CUDA: vLLM's attention backend name")},
                 {"error_type", described(string(), "when refused: the exception vLLM raises")},
                 {"error", described(string(), "when refused: its message")},
                 {"chain", array_of(record({{"name", string()},
                                             {"value", described(one_of({string(), boolean()}), "a predicate's truth is a JSON boolean, any other value its text")},
                                             {"why", string()}}))},
                 {"findings", strings()},
                 {"known_faults", described(array_of(record({{"id", string()}, {"warning", string()}, {"link", string()}, {"state", string()}})),
                                            "upstream kernel faults the batch routes onto (docs/known_faults.md): warnings, not findings")}},
                {"route", "persistent_schedule", "padded_heads", "chain", "findings", "known_faults"});
}

ojson kernel_view_def() {
  return record({{"heads", integer()},
                 {"fold_ratio", integer()},
                 {"q_layout", enum_of({to_string(QLayout::per_request), to_string(QLayout::flattened_rows), to_string(QLayout::per_token_sparse)})},
                 {"q_tokens_per_tile", integer()},
                 {"causal", boolean()},
                 {"head_dim", integer()},
                 {"v_dim", integer()},
                 {"page_size", integer()},
                 {"q_dtype", enum_of(names_upto(DType::fp8))},
                 {"kv_dtype", enum_of(names_upto(DType::fp8))}});
}

// a stack's own array (cli/common.cpp write_stack_array): a scalar, a list, or rows
ojson stack_array_def() {
  return described(any_of({integer(), ints(), array_of(ints())}), "an array of the modelled stack under its upstream name");
}

ojson plan_def() {
  const ojson used_capacity = record({{"used", integer()}, {"capacity", integer()}});
  Props p = {
      {"planner", enum_of(planner_vocabulary())},
      {"work_planner", described(string(), "the upstream scheduler the planner models")},
      {"kernel_route", enum_of(route_names())},
      {"planned_view", ref("kernel_view")},
      {"kernel_view", ref("kernel_view")},
      {"num_workgroups", integer()},
      {"work_indptr", ints()},
      {"work_info_set", described(array_of(ints()), "rows of 8: batch_idx, partial_qo_loc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad")},
      {"reduce_indptr", ints()},
      {"reduce_final_map", array_of(ints())},
      {"reduce_partial_map", ints()},
      {"num_partial_rows", integer()},
      {"buffers", record({{"work_indptr", used_capacity},
                          {"work_info_set", used_capacity},
                          {"reduce_indptr", used_capacity},
                          {"reduce_final_map", used_capacity},
                          {"reduce_partial_map", used_capacity}})},
      {"balance", record({{"workgroups", integer()},
                          {"works", integer()},
                          {"split_tiles", integer()},
                          {"max_load", number()},
                          {"mean_load", number()},
                          {"efficiency", number()}})},
      {"invariants", record({{"ok", boolean()},
                             {"total_violations", integer()},
                             {"violations", array_of(record({{"kind", string()},
                                                             {"q_row", integer()},
                                                             {"kv_begin", integer()},
                                                             {"kv_end", integer()},
                                                             {"work", integer()},
                                                             {"message", string()}}))}})},
      {"notes", strings()},
      {"schedule_words", described(strings(), "the stack's schedule in words, a line per SM part or tile")},
      {"timing_ms", record({{"planner", number()}, {"plan", number()}, {"check", number()}})},
  };
  ojson o = object(p, {"planner", "work_planner", "kernel_route", "planned_view", "kernel_view", "num_workgroups", "work_indptr",
                       "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map", "num_partial_rows", "balance",
                       "invariants", "notes"});
  o["additionalProperties"] = ref("stack_array");
  return o;
}

ojson captured_diff_def() {
  return record({{"matches", boolean()},
                 {"field", described(string(), "the first field that differs, or \"\"")},
                 {"index", described(integer(), "its first differing index, -1 when none")},
                 {"expected", described(string(), "mlactl's value there")},
                 {"got", described(string(), "the captured value there")},
                 {"rows", described(ints(), "oracle rows the difference affects (the first few)")},
                 {"message", string()},
                 {"compared", described(strings(), "the fields compared, in order")}});
}

ojson compare_def() {
  const ojson at = record({{"request", integer()}, {"token", integer()}, {"head", integer()}, {"dim", integer()}});
  return record({
      {"passed", boolean()},
      {"tolerance", record({{"atol", number()}, {"rtol", number()}, {"cos_tol", number()}, {"source", string()}, {"lse_atol", number()}, {"lse_rtol", number()}})},
      {"compared_rows", integer()},
      {"compared_elements", integer()},
      {"failing_elements", integer()},
      {"max_abs_err", number()},
      {"max_abs_at", record({{"request", integer()}, {"token", integer()}, {"head", integer()}, {"dim", integer()}, {"reference", number()}, {"actual", number()}})},
      {"max_rel_err", number()},
      {"max_rel_at", at},
      {"cos_diff", number()},
      {"nmse", number()},
      {"nonfinite_mismatches", integer()},
      {"failing_row_heads", integer()},
      {"failing", array_of(record({{"request", integer()}, {"token", integer()}, {"head", integer()}, {"failing_elements", integer()}}))},
      {"unwritten_row_heads", integer()},
      {"unwritten", array_of(record({{"request", integer()}, {"token", integer()}, {"head", integer()}}))},
      {"lse", record({{"compared", boolean()}, {"passed", boolean()}, {"failing", integer()}, {"max_abs_err", number()}})},
      {"reasons", strings()},
  });
}

// What the GPU executor's launch sites reported (cli/kernel_ran.hpp; kernels/stage1_kernel.hpp
// Stage1Ran, ReduceRan): `run`'s and `check`'s "stage1" and "reduce".
using mla::names_of;
ojson stage1_ran_def() {
  return described(record({{"kernel", enum_of(names_of(mla::kStage1KernelNames, mla::kStage1Kernels, std::optional(mla::Stage1Kernel::automatic)))},
                           {"schedule", enum_of(names_of(mla::kStage1ScheduleNames, mla::kStage1Schedules))},
                           {"precision", enum_of(names_of(mla::kStage1PrecisionNames, mla::kStage1Precisions))},
                           {"instance", described(string(), "the __global__ template instance, e.g. \"wgmma_rows<bf16, 576, p-split>\"")},
                           {"grid_blocks", described(integer(), "blocks launched")},
                           {"block_threads", described(integer(), "threads a block")},
                           {"smem_bytes", described(integer(), "dynamic shared memory a block")}}),
                   "the stage-1 launch as its launch site enqueued it");
}
ojson reduce_ran_def() {
  return described(record({{"kind", described(enum_of(names_of(mla::kReduceKindNames, mla::kReduceKinds)),
                                              "none: no split tiles, no reduce launch; few-splits: mla_reduce_few_kernel; general: mla_reduce_kernel")},
                           {"instance", described(string(), "e.g. \"mla_reduce_few_kernel<4>\"; \"\" for none")},
                           {"grid_blocks", integer()},
                           {"block_threads", integer()}}),
                   "how the split partials became the output");
}
// "stage1" / "reduce": present with "executor"; null where the executor reported no kernel
ojson stage1_member() {
  return described(any_of({ref("stage1_ran"), type("null")}),
                   "the stage-1 kernel that ran (GPU executor); null: none reported (the CPU executor, whose arithmetic is the fp32 "
                   "contract; an external executor; a GPU run that failed before its launch)");
}
ojson reduce_member() {
  return described(any_of({ref("reduce_ran"), type("null")}), "the reduce that ran (GPU executor); null as for stage1");
}

ojson min_kv_seq_len_def() { return record({{"r1", integer()}, {"r0", integer()}}); }

// The error document (cli/app.cpp print_error_json); in JSON Lines with "type": "error".
Props error_props() {
  Props p = envelope(std::nullopt);
  p.push_back({"status", enum_of({"usage error", "invalid input", "refused", "skipped", "error"})});
  p.push_back({"exit_code", integer()});
  p.push_back({"error", string()});
  return p;
}

// core/stack_findings.hpp's rows as run and check print them
ojson stack_findings_member() {
  return described(array_of(record({{"id", string()}, {"finding", constant("finding in the modelled stack")}, {"rule", string()},
                                    {"upstream", described(string(), "repo/path@commit and lines")}, {"doc", string()}})),
                   "reads outside a causal window that the modelled stack's own plan makes (not an executor fault)");
}

ojson check_case_props_object(bool as_line) {
  Props p;
  if (as_line) p.push_back({"type", constant("case")});
  Props own = {{"id", string()},
               {"file", string()},
               {"status", enum_of(case_status_names())},
               {"checks", described(strings(), "what was checked and matched, e.g. \"route=gluon_verify ok\"")},
               {"failures", described(strings(), "what did not match (the first differing field first)")},
               {"not_checked", described(strings(), "expectations that did not apply to what ran, and why (expect.stage1 after the CPU executor)")},
               {"known_faults", described(strings(), "upstream kernel faults the batch routes onto, with the link (docs/known_faults.md)")},
               {"finding_in_modelled_stack", described(boolean(), "the case failed on a finding in the modelled stack, not an executor fault")},
               {"stack_findings", stack_findings_member()},
               {"seconds", number()},
               {"repro", string()},
               {"executor", described(string(), "the executor the `run` expectation used (absent without one)")},
               {"stage1", stage1_member()},
               {"reduce", reduce_member()}};
  p.insert(p.end(), own.begin(), own.end());
  std::vector<std::string> req = keys(p);
  req.resize(req.size() - 3);  // executor, stage1, reduce: with a run
  return object(p, req);
}

ojson check_summary_object(bool as_line) {
  Props p;
  if (as_line) p.push_back({"type", constant("summary")});
  // the one vocabulary of the table's summary line, this object and the JUnit file
  // (docs/design.md §6): refused counts the passed cases whose expected answer was a refusal
  Props own = {{"passed", described(integer(), "cases that passed, refused-as-expected ones included")},
               {"failed", described(integer(), "evaluated and incorrect (JUnit <failure>)")},
               {"errors", described(integer(), "could not be evaluated: invalid input, a runtime error, a timeout (JUnit <error>)")},
               {"skipped", described(integer(), "not run: no expect block, no GPU, not a batch file, interrupted (JUnit <skipped>)")},
               {"refused", described(integer(), "of the passed, the cases refused as expected")},
               {"total", integer()},   {"selected", integer()}, {"seconds", number()}, {"exit_code", integer()},
               {"stopped", described(string(), "why the run ended early (--fail-fast, a signal)")}};
  p.insert(p.end(), own.begin(), own.end());
  std::vector<std::string> req = keys(p);
  req.pop_back();  // stopped
  return object(p, req);
}

ojson defect_members_object(const std::optional<std::string>& verb) {
  Props p = verb ? envelope(*verb) : Props{};
  Props own = {{"id", string()},           {"seed", string()},        {"fixed_by", string()},   {"stage", string()},
               {"changes", string()},      {"symptom", string()},     {"fixture", string()},    {"fixed_fixture", string()},
               {"introduced", string()},   {"where", string()},       {"explanation", string()}, {"related_fixtures", strings()}};
  p.insert(p.end(), own.begin(), own.end());
  return record(p);
}

// --- the verbs' reports -------------------------------------------------------------

ojson verb_report(const std::string& verb) {
  if (verb == "validate")
    return report(verb, {{"case", string()}, {"valid", constant(true)}, {"batch", described(ref("batch"), "the batch as resolved (defaults filled in)")}},
                  {"case", "valid", "batch"});
  if (verb == "metadata") {
    ojson o = report(verb,
                     {{"case", string()},
                      {"builder", string()},
                      {"num_requests", integer()},
                      {"max_qo_len", integer()},
                      {"uniform_padded_mtp_qo_len", integer()},
                      {"uni_seqlen_qo", described(integer(), "-1 when the requests' q_len differ")},
                      {"qo_indptr", ints()},
                      {"seq_lens", ints()},
                      {"paged_kv_indptr", ints()},
                      {"paged_kv_indices", ints()},
                      {"paged_kv_last_page_len", ints()},
                      {"min_kv_seq_len", ref("min_kv_seq_len")},
                      {"r0_verify_flatten", record({{"indptr", ints()}, {"indices", ints()}})},
                      {"head_padding", record({{"num_heads", integer()},
                                               {"padded_heads", integer()},
                                               {"method", string()},
                                               {"source", ints()},
                                               {"unpad", ints()}})},
                      {"notes", strings()}},
                     {"case", "builder", "num_requests", "max_qo_len", "qo_indptr", "seq_lens", "paged_kv_indptr", "paged_kv_indices",
                      "paged_kv_last_page_len", "min_kv_seq_len", "head_padding", "notes"});
    o["additionalProperties"] = ref("stack_array");
    return o;
  }
  if (verb == "windows") {
    const ojson row = object({{"row", integer()},
                              {"request", integer()},
                              {"token", integer()},
                              {"position", integer()},
                              {"begin", integer()},
                              {"end", integer()},
                              {"length", integer()},
                              {"mask", enum_of(names_upto(MaskKind::tree))},
                              {"allowed", ojson{{"type", "array"},
                                                {"description", "a tree row's KV positions as half-open ranges (when not one interval)"},
                                                {"items", ojson{{"type", "array"}, {"items", integer()}}}}},
                              {"metadata_begin", integer()},
                              {"metadata_end", integer()},
                              {"mismatch", boolean()}},
                             {"row", "request", "token", "position", "begin", "end", "length", "mask", "mismatch"});
    return report(verb,
                  {{"case", string()},
                   {"ranges", constant("half-open [begin, end)")},
                   {"route", ref("route")},
                   {"metadata_path", string()},
                   {"min_kv_seq_len", ref("min_kv_seq_len")},
                   {"mismatched_rows", integer()},
                   {"captured", ref("captured_diff")},
                   {"rows", array_of(row)}},
                  {"case", "ranges", "route", "metadata_path", "min_kv_seq_len", "mismatched_rows", "rows"});
  }
  if (verb == "route") return report(verb, {{"case", string()}, {"route", ref("route")}}, {"case", "route"});
  if (verb == "schedule")
    return report(verb, {{"case", string()}, {"route", ref("route")}, {"captured", ref("captured_diff")}, {"plans", array_of(ref("plan"))}},
                  {"case", "route", "plans"});
  if (verb == "run") {
    const ojson audit = record({{"ok", boolean()},
                                {"rows_checked", integer()},
                                {"bad_rows", integer()},
                                {"stray_q_rows", integer()},
                                {"errors", strings()},
                                {"rows", array_of(record({{"row", integer()},
                                                          {"request", integer()},
                                                          {"token", integer()},
                                                          {"heads", described(ints(), "the heads that read wrong")},
                                                          {"extra", described(integer(), "KV positions read that the row must not see")},
                                                          {"missing", described(integer(), "KV positions the row must see and did not read")},
                                                          {"detail", string()}}))}});
    const ojson probe = record({{"ok", boolean()},
                                {"rows_probed", integer()},
                                {"heads_probed", integer()},
                                {"edges_not_probed", integer()},
                                {"findings", integer()},
                                {"bad_rows", integer()},
                                {"bad_row_ids", ints()},
                                {"bad_head_ids", ints()},
                                {"controls", described(integer(), "control heads read (their answer depends on no edge)")},
                                {"controls_off", described(integer(), "control heads whose weights or LSE are wrong")},
                                {"control_off_heads", ints()},
                                {"global_fault", described(boolean(), "at least half the controls are wrong: a global numeric fault, no edge named")},
                                {"listed", array_of(record({{"row", integer()},
                                                            {"request", integer()},
                                                            {"token", integer()},
                                                            {"head", integer()},
                                                            {"position", integer()},
                                                            {"edge", string()},
                                                            {"finding", string()},
                                                            {"weight", number()},
                                                            {"lse_diff", number()}}))}});
    return report(verb,
                  {{"case", string()},
                   {"status", enum_of(names_upto(RunStatus::skipped))},
                   {"reason", enum_of(names_upto(RunFailure::padding_rows))},
                   {"exit_code", integer()},
                   {"message", string()},
                   {"finding_in_modelled_stack", described(boolean(), "the failure is a finding in the modelled stack, not an executor fault")},
                   {"stack_findings", stack_findings_member()},
                   {"route", ref("route")},
                   {"executor", string()},
                   {"stage1", stage1_member()},
                   {"reduce", reduce_member()},
                   {"dumped", described(string(), "the stem of the files --dump-dir wrote")},
                   {"planner", enum_of(planner_vocabulary())},
                   {"works", integer()},
                   {"notes", strings()},
                   {"position_audit", audit},
                   {"captured_plan", described(record({{"ok", boolean()},
                                                       {"total_violations", integer()},
                                                       {"violations", array_of(record({{"kind", string()},
                                                                                       {"rule", string()},
                                                                                       {"q_row", integer()},
                                                                                       {"kv_begin", integer()},
                                                                                       {"kv_end", integer()},
                                                                                       {"work", integer()},
                                                                                       {"message", string()}}))}}),
                                               "a captured work list's plan invariants, checked before it runs")},
                   {"captured", ref("captured_diff")},
                   {"position_probe", probe},
                   {"compare", ref("compare")},
                   {"probe_compare", described(ref("compare"), "--probe: the comparison on the probe's inputs (compare: on random inputs)")},
                   {"padding_rows", record({{"ok", boolean()},
                                            {"contract", enum_of(names_upto(PadRowContract::untouched))},
                                            {"rows_checked", integer()},
                                            {"bad_rows", integer()},
                                            {"bad_row_ids", ints()},
                                            {"nan_values", integer()},
                                            {"nonzero_values", integer()}})},
                   {"cross_check", described(ref("compare"), "GPU against CPU executor on the same work list")},
                   {"timing_ms", record({{"metadata", number()},
                                         {"plan_and_audit", number()},
                                         {"inputs", number()},
                                         {"reference", number()},
                                         {"execute", number()},
                                         {"compare", number()}})},
                   {"repro", string()}},
                  {"case", "status", "exit_code", "route", "timing_ms"});
  }
  if (verb == "check")
    return one_of({report(verb, {{"results", array_of(ref("check_case"))}, {"summary", ref("check_summary")}}, {"results", "summary"}),
                   described(report(verb, {{"cases", array_of(record({{"id", string()}, {"file", string()}}))}}, {"cases"}), "check --list")});
  if (verb == "defects")
    return one_of({report(verb, {{"defects", array_of(defect_members_object(std::nullopt))}}, {"defects"}),
                   described(defect_members_object(verb), "defects ID")});
  if (verb == "bench") {
    const ojson stats = record({{"median", number()}, {"min", number()}, {"p10", number()}, {"p90", number()}, {"max", number()}, {"n", integer()}});
    // --block-times (cli/cmd_bench.cpp, block_times_json): the phase marks by name.
    Props mark_props;
    for (const char* key : BenchResult::kMarkKeys) mark_props.push_back({key, number()});
    const ojson marks = object(mark_props, {});
    const ojson block = record({{"block", integer()},
                                {"workgroup", integer()},
                                {"sm", integer()},
                                {"start_us", number()},
                                {"end_us", number()},
                                {"works", integer()},
                                {"tokens", integer()},
                                {"marks_us", marks}});
    const ojson block_times = described(object({{"note", string()},
                                                {"blocks", integer()},
                                                {"sms", integer()},
                                                {"duration_us", stats},
                                                {"last_end_us", number()},
                                                {"ns_per_token", stats},
                                                {"mark_median_us", marks},
                                                {"per_block", array_of(block)}},
                                               {}),
                                        "--block-times: each stage-1 block's SM, start and end (µs after the first "
                                        "entry) with its workgroup's works and KV tokens");
    const ojson result = object({{"requested", described(string(), "the route or kernel asked for")},
                                 {"route", ref("route")},
                                 {"status", enum_of(bench_status_names())},
                                 {"message", string()},
                                 {"planner", enum_of(planner_vocabulary())},
                                 {"workgroups", integer()},
                                 {"works", integer()},
                                 {"partial_rows", integer()},
                                 {"position_audit_ok", boolean()},
                                 {"stage1_kernel", described(string(), "the stage-1 kernel family that ran (none: no launch)")},
                                 {"stage1_why", described(string(), "select_stage1's reason for that kernel (and its fp8 operand forms)")},
                                 {"stage1", described(any_of({ref("stage1_ran"), type("null")}), "the stage-1 launch as its launch site reported it (every timed launch the same)")},
                                 {"reduce", described(ref("reduce_ran"), "the reduce launch as its launch site reported it")},
                                 {"kv_copy_bytes", number()},
                                 {"kernel_us", stats},
                                 {"kernels_us", stats},
                                 {"reduce_us_median", number()},
                                 {"host_plan_us", number()},
                                 {"metadata_plus_kernels_us", number()},
                                 {"gbps", number()},
                                 {"gbps_kernel_only", number()},
                                 {"pct_copy_roofline", number()},
                                 {"tflops", number()},
                                 {"pct_peak_tflops", number()},
                                 {"nonfinite_outputs", integer()},
                                 {"speedup_vs_first", number()},
                                 {"block_times", block_times}},
                                {"requested", "route", "status"});
    const ojson full = report(verb,
                              {{"case", string()},
                               {"date_utc", string()},
                               {"device", record({{"name", string()},
                                                  {"multiprocessors", integer()},
                                                  {"planner_num_cu", integer()},
                                                  {"copy_roofline_gbps", number()},
                                                  {"copy_bytes", number()},
                                                  {"copy_median_us", number()},
                                                  {"bf16_peak_tflops", number()},
                                                  {"bf16_peak_source", string()}})},
                               {"shape", record({{"requests", integer()},
                                                 {"rows", integer()},
                                                 {"heads", integer()},
                                                 {"max_query_len", integer()},
                                                 {"max_seq_len", integer()},
                                                 {"kv_dtype", enum_of(names_upto(DType::fp8))},
                                                 {"q_dtype", string()},
                                                 {"block_size", integer()},
                                                 {"layout", string()},
                                                 {"causal", boolean()},
                                                 {"num_cu", integer()},
                                                 {"bytes", number()},
                                                 {"kv_bytes", number()},
                                                 {"q_bytes", number()},
                                                 {"out_bytes", number()},
                                                 {"flop", number()}})},
                               {"settings", record({{"warmup", integer()}, {"iters", integer()}, {"kv_copies", integer()}, {"l2_rotated", boolean()}})},
                               {"results", array_of(result)}},
                              {"case", "date_utc", "device", "shape", "settings", "results"});
    const ojson skipped = described(report(verb, {{"case", string()}, {"status", constant("skipped")}, {"exit_code", constant(77)}, {"message", string()}},
                                           {"case", "status", "exit_code", "message"}),
                                    "no GPU: nothing was timed");
    return one_of({full, skipped});
  }
  return nullptr;
}

ojson defs(bool with_batch) {
  ojson d = ojson::object();
  d["route"] = route_def();
  d["kernel_view"] = kernel_view_def();
  d["stack_array"] = stack_array_def();
  d["plan"] = plan_def();
  d["captured_diff"] = captured_diff_def();
  d["compare"] = compare_def();
  d["min_kv_seq_len"] = min_kv_seq_len_def();
  d["stage1_ran"] = stage1_ran_def();
  d["reduce_ran"] = reduce_ran_def();
  d["check_case"] = check_case_props_object(false);
  d["check_summary"] = check_summary_object(false);
  d["error"] = record(error_props());
  if (with_batch) {
    // the batch file's own schema (`mlactl schema`), embedded without its $id so that
    // it is a part of this document
    ojson b = batch_json_schema();
    b.erase("$schema");
    b.erase("$id");
    d["batch"] = b;
  }
  return d;
}

ojson document(const std::string& name, const std::string& title, ojson body, bool with_batch) {
  ojson s;
  s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  s["$id"] = "https://mlactl.dev/schema/output-" + name + "-1.json";
  s["title"] = title;
  for (auto it = body.begin(); it != body.end(); ++it) s[it.key()] = it.value();
  s["$defs"] = defs(with_batch);
  return s;
}

}  // namespace

const std::vector<std::string>& output_schema_names() {
  static const std::vector<std::string> names = {"validate", "metadata", "windows", "route", "schedule", "run",
                                                 "check",    "defects",  "bench",   "check-jsonl", "error"};
  return names;
}

std::optional<ojson> output_json_schema(const std::string& name) {
  const auto& names = output_schema_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
  if (name == "error") return document(name, "mlactl's error document (--format json, any verb)", ref("error"), false);
  if (name == "check-jsonl") {
    ojson listed = record({{"type", constant("listed")}, {"id", string()}, {"file", string()}});
    Props err = {{"type", constant("error")}};
    for (auto& p : error_props()) err.push_back(p);
    return document(name, "one line of `mlactl check --format jsonl`",
                    one_of({check_case_props_object(true), check_summary_object(true), listed, record(err)}), false);
  }
  // what stdout holds for VERB with --format json: its report, or the error document
  return document(name, "`mlactl --format json " + name + "` on stdout: the report, or the error document",
                  ojson{{"anyOf", ojson::array({verb_report(name), ref("error")})}}, name == "validate");
}

}  // namespace mlactl::cli
