// `mlactl check PATH...`: runs every fixture's `expect` block (docs/design.md §6) and prints
// one line per case as it finishes; --junit (rewritten after every case, so a killed run
// leaves the cases done so far), --shard K/N (stable), --filter/--exclude (a matcher that
// cannot backtrack, cli/pattern.hpp), --list, --fail-fast, --timeout (each case in a child
// process), --format json.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <iostream>
#include <sstream>

#include "core/batch_parse.hpp"
#include "cli/app.hpp"
#include "cli/output_schema.hpp"
#include "cli/common.hpp"
#include "cli/expect_stage1.hpp"
#include "cli/interrupt.hpp"
#include "cli/kernel_ran.hpp"
#include "cli/pattern.hpp"
#include "cli/pipeline.hpp"
#include "core/captured.hpp"
#include "core/kernel_windows.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"
#include "core/stack_findings.hpp"
#include "core/stacks/registry.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"

namespace mlactl::cli {

namespace fs = std::filesystem;

namespace {

// A case's verdict; refused-as-expected counts as passed.
enum class CaseStatus { unset, passed, refused_as_expected, incorrect, failed, invalid_input, skipped, timed_out };
constexpr CaseStatus kAllStatuses[] = {CaseStatus::unset,   CaseStatus::passed,        CaseStatus::refused_as_expected,
                                       CaseStatus::incorrect, CaseStatus::failed,      CaseStatus::invalid_input,
                                       CaseStatus::skipped, CaseStatus::timed_out};
const char* to_string(CaseStatus s) {
  switch (s) {
    case CaseStatus::unset: return "unset";
    case CaseStatus::passed: return "passed";
    case CaseStatus::refused_as_expected: return "refused-as-expected";
    case CaseStatus::incorrect: return "incorrect";
    case CaseStatus::failed: return "failed";
    case CaseStatus::invalid_input: return "invalid_input";
    case CaseStatus::skipped: return "skipped";
    case CaseStatus::timed_out: return "timed_out";
  }
  return "?";
}
CaseStatus case_status_from_string(const std::string& s) {
  for (CaseStatus c : kAllStatuses)
    if (s == to_string(c)) return c;
  return CaseStatus::failed;
}
bool counts_as_passed(CaseStatus s) { return s == CaseStatus::passed || s == CaseStatus::refused_as_expected; }
// JUnit's <error>: the case could not be evaluated (bad input, a runtime error, a timeout);
// <failure>: it was evaluated and did not meet its expectations.
bool is_error(CaseStatus s) { return s == CaseStatus::invalid_input || s == CaseStatus::failed || s == CaseStatus::timed_out; }

struct CaseResult {
  std::string id;
  std::string file;
  CaseStatus status = CaseStatus::unset;
  int exit_code = 0;
  std::vector<std::string> checks;    // "route=gluon_verify ok" ...
  std::vector<std::string> failures;  // what did not match
  std::vector<std::string> not_checked;  // expectations that did not apply to what ran, and why (expect.stage1 after the CPU executor)
  // what `run` executed with: the executor's name ("" when no `run` expectation made one)
  // and what it reported (cli/kernel_ran.hpp)
  std::string executor;
  KernelRan ran;
  // upstream kernel faults the route lands on (known_fault_text lines, docs/known_faults.md),
  // the plan's findings in the modelled stack, and whether the case failed on one
  std::vector<std::string> known_faults;
  std::vector<StackFindingId> stack_findings;
  bool finding_in_stack = false;
  double seconds = 0;
  bool interrupted = false;  // a signal ended the run while it ran (reported as skipped)
};

// A case result across the pipe from a --timeout child.
std::string serialise(const CaseResult& c) {
  nlohmann::json j = {{"id", c.id},         {"file", c.file},         {"status", to_string(c.status)},
                      {"exit_code", c.exit_code}, {"checks", c.checks}, {"failures", c.failures},
                      {"not_checked", c.not_checked}, {"executor", c.executor}, {"ran", kernel_ran_json(c.ran)},
                      {"known_faults", c.known_faults}, {"finding_in_stack", c.finding_in_stack}};
  auto sf = nlohmann::json::array();
  for (StackFindingId f : c.stack_findings) sf.push_back(stack_finding_info(f).name);
  j["stack_findings"] = sf;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
CaseResult deserialise(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  CaseResult c;
  c.id = j.at("id").get<std::string>();
  c.file = j.at("file").get<std::string>();
  c.status = case_status_from_string(j.at("status").get<std::string>());
  c.exit_code = j.at("exit_code").get<int>();
  c.checks = j.at("checks").get<std::vector<std::string>>();
  c.failures = j.at("failures").get<std::vector<std::string>>();
  c.not_checked = j.at("not_checked").get<std::vector<std::string>>();
  c.executor = j.at("executor").get<std::string>();
  c.ran = kernel_ran_from_json(j.at("ran"));
  c.known_faults = j.at("known_faults").get<std::vector<std::string>>();
  c.finding_in_stack = j.at("finding_in_stack").get<bool>();
  for (const auto& n : j.at("stack_findings"))
    if (const auto id = stack_finding_from_name(n.get<std::string>())) c.stack_findings.push_back(*id);
  return c;
}

// FNV-1a: a stable shard assignment that depends only on the case id.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Files under the paths. Nothing here throws on a bad entry: a symlink loop or an
// unreadable entry is skipped (directory symlinks are not followed, so a loop cannot
// recurse), a missing path is a usage error.
std::vector<std::string> collect(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        std::error_code fe;
        if (it->path().extension() == ".json" && it->is_regular_file(fe) && !fe) files.push_back(it->path().string());
      }
    } else if (fs::exists(fs::symlink_status(p, ec)) && !ec) {
      files.push_back(p);
    } else {
      // exit 3 as in every verb that reads a path (a batch file, --inputs)
      throw Error(kExitInvalidInput, "", p + ": no such file or directory");
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

// subset match: every key of `want` must equal the same key of `got` (recursively for objects)
bool subset_equal(const nlohmann::json& want, const nlohmann::json& got, const std::string& path, std::string* why) {
  if (want.is_object()) {
    if (!got.is_object()) {
      *why = path + ": expected an object";
      return false;
    }
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (!got.contains(it.key())) {
        *why = path + "/" + it.key() + ": not in the output";
        return false;
      }
      if (!subset_equal(it.value(), got[it.key()], path + "/" + it.key(), why)) return false;
    }
    return true;
  }
  if (want != got) {
    std::string g = got.dump();
    if (g.size() > 200) g = g.substr(0, 200) + "...";
    *why = path + ": expected " + want.dump() + ", got " + g;
    return false;
  }
  return true;
}

// The case id: the batch's name, else the file stem (cheap: no batch is built).
std::string case_id(const std::string& file) {
  try {
    auto doc = load_json_document(file);
    if (doc.is_object() && doc.contains("name") && doc["name"].is_string() && !doc["name"].get<std::string>().empty())
      return doc["name"].get<std::string>();
  } catch (const Error&) {
  }
  return fs::path(file).stem().string();
}

int severity(int code) {
  // check exits with the most severe case status: 4 > 3 > 1 > 77 > 0 (docs/design.md §6)
  switch (code) {
    case kExitDevice: return 5;
    case kExitInvalidInput: return 4;
    case kExitVerifyFailed: return 3;
    case kExitSkipped: return 2;
    default: return code == 0 ? 0 : 1;
  }
}

// ---- expectations: one function per `expect` key (docs/design.md §6) --------------------
// Each reads the case and the key's wanted value and records a check or a failure; a new
// key is one function and one row of kExpectations.
struct CaseContext {
  const Batch& b;
  const nlohmann::json& expect;
  const RunOptions& base;  // backend, --executor
  CaseResult& cr;
  RoutedBatch rb;
  std::vector<RowWindow> rows;
  std::optional<RoutePlan> plan;          // the route's own plan, made when a key needs it
  std::optional<InvariantReport> inv;
  bool schedule_refusal_reported = false;
  CaseContext(const Batch& batch, const nlohmann::json& e, const RunOptions& bo, CaseResult& result)
      : b(batch), expect(e), base(bo), cr(result), rb(route_batch(batch)), rows(oracle_windows(batch)) {}
  void fail(const std::string& what) { cr.failures.push_back(what); }
  void pass(const std::string& what) { cr.checks.push_back(what); }
  void not_checked(const std::string& why) { cr.not_checked.push_back(why); }
  const RoutePlan& own_plan() {
    if (!plan) plan = plan_batch(b, rb, rows);
    return *plan;
  }
};
using ExpectFn = void (*)(CaseContext&, const nlohmann::json& want);

void expect_route(CaseContext& c, const nlohmann::json& want_j) {
  const std::string want = want_j.get<std::string>();
  const RouteDecision& rd = c.rb.decision;
  if (want != to_string(rd.route)) c.fail("route: expected " + want + ", got " + to_string(rd.route) + (rd.route == Route::refused ? " (" + rd.error + ")" : ""));
  else c.pass("route");
}

void expect_error(CaseContext& c, const nlohmann::json& want_j) {
  const std::string want = want_j.get<std::string>();
  const RouteDecision& rd = c.rb.decision;
  if (rd.route != Route::refused) {
    // a route the stack takes and then fails to plan (a planner's own error, exit 5)
    try {
      (void)c.own_plan();
      c.fail("error: expected a refusal containing \"" + want + "\", got route " + to_string(rd.route));
    } catch (const Error& e) {
      if (e.exit_code() != kExitRefused) throw;
      if (std::string(e.what()).find(want) == std::string::npos) c.fail("error: expected \"" + want + "\" in \"" + e.what() + "\"");
      else c.pass("error");
    }
    return;
  }
  if (rd.error.find(want) == std::string::npos) c.fail("error: expected \"" + want + "\" in \"" + rd.error + "\"");
  else c.pass("error");
}

void expect_findings(CaseContext& c, const nlohmann::json& want_j) {
  for (const auto& f : want_j) {
    const std::string want = f.get<std::string>();
    bool found = false;
    for (const auto& x : c.rb.decision.findings) found |= x.find(want) != std::string::npos;
    if (!found) c.fail("findings: no finding containing \"" + want + "\"");
  }
  c.pass("findings");
}

// An expectation that lists names exactly, in any order ([] holds a batch to none).
void expect_names(CaseContext& c, const char* key, const nlohmann::json& want_j, std::vector<std::string> got) {
  std::vector<std::string> want = want_j.get<std::vector<std::string>>();
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return "[" + s + "]";
  };
  if (want != got) c.fail(std::string(key) + ": expected " + list(want) + ", got " + list(got));
  else c.pass(key);
}

// expect.known_faults: the ids (docs/known_faults.md) of every upstream kernel fault the route
// lands on
void expect_known_faults(CaseContext& c, const nlohmann::json& want_j) {
  std::vector<std::string> got;
  for (const auto& w : c.rb.decision.known_faults) got.push_back(w.id);
  expect_names(c, "known_faults", want_j, got);
}

// expect.stack_findings: the names (core/stack_findings.hpp) of every finding in the modelled
// stack the route's own plan makes
void expect_stack_findings(CaseContext& c, const nlohmann::json& want_j) {
  std::vector<std::string> got;
  if (!c.rb.refused())
    for (StackFindingId f : c.own_plan().stack_findings) got.push_back(stack_finding_info(f).name);
  expect_names(c, "stack_findings", want_j, got);
}

// the windows the routed kernel's metadata gives each row (padding rows: their length, 0)
void expect_windows(CaseContext& c, const nlohmann::json& want_j) {
  const auto& rows = c.rows;
  MetadataWindows mw = c.rb.stack->metadata_windows(c.b, c.rb.metadata, c.rb.decision.route, rows);
  std::vector<int64_t> got;
  for (size_t i = 0; i < rows.size(); ++i) got.push_back(rows[i].kind == MaskKind::padding || !mw.available ? 0 : mw.end[i] - mw.begin[i]);
  std::vector<int64_t> want = want_j.get<std::vector<int64_t>>();
  if (got == want) return c.pass("windows");
  std::string why = "windows: " + std::to_string(got.size()) + " rows vs " + std::to_string(want.size()) + " expected";
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (got[i] != want[i]) {
      why = "windows: row " + std::to_string(i) + " (request " + std::to_string(rows[i].request) + ", token " + std::to_string(rows[i].token) +
            ") gets " + std::to_string(got[i]) + " KV entries, expected " + std::to_string(want[i]);
      break;
    }
  c.fail(why);
}

// "matches", or {"field": F[, "index": I]}: the first difference expected
void expect_captured(CaseContext& c, const nlohmann::json& want) {
  CapturedMetadata cap = parse_captured(c.b, c.b.captured, (int64_t)c.rows.size());
  // a captured work list must be a plan of this batch before it is compared (exit 3 otherwise)
  if (!c.rb.refused() && (cap.work_indptr || !cap.stack_arrays.empty())) (void)plan_captured(c.b, c.rb, c.rows, cap);
  // a captured work list or a stack's own schedule arrays (FlashMLA's) compare with the route's plan
  const RoutePlan* plan = !c.rb.refused() && (cap.work_indptr || !cap.stack_arrays.empty()) ? &c.own_plan() : nullptr;
  CapturedDiff cd = diff_captured(c.b, c.rb.metadata, c.rows, cap, plan);
  if (want.is_string() && want.get<std::string>() == "matches") {
    if (!cd.same) c.fail("captured: expected to match, " + cd.message);
    else c.pass("captured");
  } else if (want.is_object()) {
    if (cd.same) c.fail("captured: expected a difference in " + want.value("field", std::string("?")) + ", but it matches");
    else if (want.contains("field") && want["field"].get<std::string>() != cd.field) c.fail("captured: expected the first difference in " + want["field"].get<std::string>() + ", got " + cd.message);
    else if (want.contains("index") && want["index"].get<int64_t>() != cd.index) c.fail("captured: expected the first difference at index " + want["index"].dump() + ", got " + cd.message);
    else c.pass("captured (" + cd.message + ")");
  } else {
    c.fail("captured: expect \"matches\" or {\"field\": ..., \"index\": ...}");
  }
}

void expect_metadata(CaseContext& c, const nlohmann::json& want) {
  nlohmann::json got = nlohmann::json::parse(metadata_json(c.b, c.rb.metadata, !c.rb.metadata.flat_indptr.empty()).dump());
  std::string why;
  if (!subset_equal(want, got, "metadata", &why)) c.fail(why);
  else c.pass("metadata");
}

// the route's own plan and its invariants; false (reported once) when the route is refused
bool planned(CaseContext& c) {
  if (c.rb.refused()) {
    if (!c.schedule_refusal_reported) c.fail("schedule: the route is refused (" + c.rb.decision.error + ")");
    c.schedule_refusal_reported = true;
    return false;
  }
  if (!c.inv) c.inv = check_plan_invariants(c.own_plan(), c.rb.metadata.max_qo_len);
  return true;
}

void expect_invariants(CaseContext& c, const nlohmann::json& want_j) {
  if (!planned(c)) return;
  const std::string want = want_j.get<std::string>();
  const std::string got = c.inv->ok ? "ok" : "broken";
  if (want != got) c.fail("invariants: expected " + want + ", got " + got + (c.inv->violations.empty() ? "" : " (" + c.inv->violations[0].message + ")"));
  else c.pass("invariants");
}

// the same JSON `schedule --format json` prints; the fixture names a subset of it
void expect_schedule(CaseContext& c, const nlohmann::json& want) {
  if (!planned(c)) return;
  nlohmann::json got = nlohmann::json::parse(plan_json(*c.plan, *c.inv).dump());
  std::string why;
  if (!subset_equal(want, got, "schedule", &why)) c.fail(why);
  else c.pass("schedule");
}

// "passed" | "refused" | "incorrect", or {"status": ..., "reason": ...} where an incorrect
// run names its cause (run_failure_from_string's words)
void expect_run(CaseContext& c, const nlohmann::json& want) {
  std::string want_status;
  std::optional<std::string> want_reason;
  if (want.is_object()) {
    want_status = want.at("status").get<std::string>();
    if (want.contains("reason")) want_reason = want["reason"].get<std::string>();
  } else {
    want_status = want.get<std::string>();
  }
  RunOptions ro = c.base;
  ro.use_captured = !c.b.captured.is_null();  // a fixture that carries captured arrays is about them
  if (c.expect.contains("tolerance")) {
    const auto& t = c.expect["tolerance"];
    if (t.contains("atol")) ro.atol = t["atol"].get<double>();
    if (t.contains("rtol")) ro.rtol = t["rtol"].get<double>();
    if (t.contains("cos_tol")) ro.cos_tol = t["cos_tol"].get<double>();
  }
  RunOutcome o = run_pipeline(c.b, ro);
  c.cr.executor = o.executor;
  c.cr.ran = o.ran;
  c.cr.stack_findings = o.stack_findings;
  c.cr.finding_in_stack = o.finding_in_stack;
  if (o.status == RunStatus::skipped) {
    c.cr.status = CaseStatus::skipped;
    c.cr.exit_code = kExitSkipped;
    c.fail("run: " + o.message);
  } else if (o.status == RunStatus::failed) {
    c.cr.status = CaseStatus::failed;
    c.cr.exit_code = kExitDevice;
    c.fail("run: " + o.message);
  } else if (to_string(o.status) != want_status) {
    std::string why = "run: expected " + want_status + ", got " + to_string(o.status);
    if (!o.message.empty()) why += " (" + o.message + ")";
    if (o.audit && !o.audit->bad.empty())
      why += "; first bad row: request " + std::to_string(o.audit->bad[0].request) + " token " + std::to_string(o.audit->bad[0].token) + ": " +
             o.audit->bad[0].detail;
    c.fail(why);
  } else if (want_reason && (!o.failure || *want_reason != to_string(*o.failure))) {
    c.fail("run: expected " + want_status + " because of " + *want_reason + ", got " + (o.failure ? to_string(*o.failure) : "no reason") +
           (o.message.empty() ? "" : " (" + o.message + ")"));
  } else {
    c.pass("run=" + want_status + (want_reason ? " (" + *want_reason + ")" : ""));
  }
}

// {"kernel", "schedule", "precision"} (any of them): what the `run` above reported
// (cli/expect_stage1.hpp); not checked where no GPU kernel ran (the CPU executor)
void expect_stage1(CaseContext& c, const nlohmann::json& want) {
  const Stage1ExpectResult r = check_stage1_expectation(want, c.cr.ran);
  for (const auto& m : r.messages) {
    switch (r.verdict) {
      case Stage1ExpectResult::Verdict::matched: c.pass(m); break;
      case Stage1ExpectResult::Verdict::mismatched: c.fail(m); break;
      case Stage1ExpectResult::Verdict::not_checked: c.not_checked(m); break;
    }
  }
}

// ---- validation of the wanted values, before anything runs ----------------------------
// With the rigour of the batch (docs/design.md §2, §9): the type and the vocabulary of
// every `expect` value, each error naming its JSON pointer (that case's exit 3).
using ValidateFn = void (*)(const nlohmann::json& want, const std::string& ptr);

std::string quoted(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 60) + "..." : s;
}
void want_string(const nlohmann::json& v, const std::string& ptr) {
  if (!v.is_string()) throw invalid_input(ptr, std::string("must be a string, got ") + v.type_name());
}
void want_one_of(const nlohmann::json& v, const std::string& ptr, const std::vector<std::string>& words) {
  want_string(v, ptr);
  if (std::find(words.begin(), words.end(), v.get<std::string>()) != words.end()) return;
  std::string list;
  for (size_t i = 0; i < words.size(); ++i) list += (i ? ", " : "") + words[i];
  throw invalid_input(ptr, "must be one of " + list + ", got " + quoted(v));
}
void want_keys(const nlohmann::json& v, const std::string& ptr, const std::vector<std::string>& keys) {
  if (!v.is_object()) throw invalid_input(ptr, std::string("must be an object, got ") + v.type_name());
  for (auto it = v.begin(); it != v.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) throw invalid_input(ptr + "/" + it.key(), "unknown key");
}

std::vector<std::string> route_ids() {
  std::vector<std::string> ids;
  for (const Stack* st : all_stacks())
    for (Route r : st->routes())
      if (std::find(ids.begin(), ids.end(), to_string(r)) == ids.end()) ids.push_back(to_string(r));
  if (std::find(ids.begin(), ids.end(), to_string(Route::refused)) == ids.end()) ids.push_back(to_string(Route::refused));
  return ids;
}
void validate_route(const nlohmann::json& v, const std::string& ptr) { want_one_of(v, ptr, route_ids()); }
void validate_error(const nlohmann::json& v, const std::string& ptr) {
  want_string(v, ptr);
  if (v.get<std::string>().empty()) throw invalid_input(ptr, "must not be empty (every message contains \"\")");
}
void validate_findings(const nlohmann::json& v, const std::string& ptr) {
  if (!v.is_array()) throw invalid_input(ptr, std::string("must be an array of strings, got ") + v.type_name());
  for (size_t i = 0; i < v.size(); ++i) validate_error(v[i], ptr + "/" + std::to_string(i));
}
// an array of names, each one of `names`
void validate_names(const nlohmann::json& v, const std::string& ptr, const char* what, const std::vector<std::string>& names) {
  if (!v.is_array()) throw invalid_input(ptr, std::string("must be an array of ") + what + ", got " + v.type_name());
  for (size_t i = 0; i < v.size(); ++i) want_one_of(v[i], ptr + "/" + std::to_string(i), names);
}
void validate_known_faults(const nlohmann::json& v, const std::string& ptr) {
  std::vector<std::string> ids;
  for (const auto& e : known_fault_table()) ids.push_back(e.name);
  validate_names(v, ptr, "known fault ids", ids);
}
void validate_stack_findings(const nlohmann::json& v, const std::string& ptr) {
  std::vector<std::string> names;
  for (const auto& f : stack_finding_table()) names.push_back(f.name);
  validate_names(v, ptr, "finding names", names);
}
void validate_windows(const nlohmann::json& v, const std::string& ptr) {
  if (!v.is_array()) throw invalid_input(ptr, std::string("must be an array of KV entry counts, got ") + v.type_name());
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0) throw invalid_input(ptr + "/" + std::to_string(i), "must be an integer >= 0, got " + quoted(v[i]));
}
void validate_object(const nlohmann::json& v, const std::string& ptr) {
  if (!v.is_object()) throw invalid_input(ptr, std::string("must be an object (a subset of the command's JSON), got ") + v.type_name());
}
void validate_invariants(const nlohmann::json& v, const std::string& ptr) { want_one_of(v, ptr, {"ok", "broken"}); }
const std::vector<std::string> kCapturedFields = {"qo_indptr",     "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len",
                                                  "min_kv_seq_len", "work_indptr",     "work_info_set",    "reduce_indptr",
                                                  "reduce_final_map", "reduce_partial_map",
                                                  // the vllm-cuda stack's (FlashMLA's) arrays, docs/stacks/vllm-cuda.md
                                                  "tile_scheduler_metadata", "num_splits", "seq_lens"};
void validate_captured(const nlohmann::json& v, const std::string& ptr) {
  if (v.is_string()) return want_one_of(v, ptr, {"matches"});
  if (!v.is_object()) throw invalid_input(ptr, std::string("must be \"matches\" or {\"field\", \"index\"}, got ") + v.type_name());
  want_keys(v, ptr, {"field", "index"});
  if (!v.contains("field")) throw invalid_input(ptr, "needs \"field\": the captured array that differs first");
  want_one_of(v["field"], ptr + "/field", kCapturedFields);
  if (v.contains("index") && (!v["index"].is_number_integer() || v["index"].get<int64_t>() < 0))
    throw invalid_input(ptr + "/index", "must be an integer >= 0, got " + quoted(v["index"]));
}
const std::vector<std::string> kRunWords = {"passed", "incorrect", "refused"};
void validate_run(const nlohmann::json& v, const std::string& ptr) {
  if (v.is_string()) return want_one_of(v, ptr, kRunWords);
  if (!v.is_object()) throw invalid_input(ptr, std::string("must be passed, incorrect or refused, or {\"status\", \"reason\"}, got ") + v.type_name());
  want_keys(v, ptr, {"status", "reason"});
  if (!v.contains("status")) throw invalid_input(ptr, "needs \"status\"");
  want_one_of(v["status"], ptr + "/status", kRunWords);
  if (v.contains("reason")) {
    std::vector<std::string> reasons;
    for (RunFailure f : {RunFailure::captured_plan, RunFailure::position_audit, RunFailure::nonfinite, RunFailure::numeric, RunFailure::cross_check}) reasons.push_back(to_string(f));
    want_one_of(v["reason"], ptr + "/reason", reasons);
    if (v["status"] != "incorrect") throw invalid_input(ptr + "/reason", "only an incorrect run has a reason");
  }
}
void validate_tolerance(const nlohmann::json& v, const std::string& ptr) {
  want_keys(v, ptr, {"atol", "rtol", "cos_tol"});
  for (auto it = v.begin(); it != v.end(); ++it) {
    const auto& x = it.value();
    if (!x.is_number()) throw invalid_input(ptr + "/" + it.key(), std::string("must be a number, got ") + x.type_name());
    const double d = x.get<double>();
    if (!std::isfinite(d) || d < 0) throw invalid_input(ptr + "/" + it.key(), "must be a finite number >= 0, got " + quoted(x));
  }
}

struct Expectation {
  const char* key;
  ValidateFn validate;
  ExpectFn check;  // nullptr: read by another key's check
};
// In the order they run (cheap before expensive; `tolerance` is read by `run`).
const Expectation kExpectations[] = {
    {"route", validate_route, expect_route},
    {"error", validate_error, expect_error},
    {"findings", validate_findings, expect_findings},
    {"known_faults", validate_known_faults, expect_known_faults},
    {"stack_findings", validate_stack_findings, expect_stack_findings},
    {"windows", validate_windows, expect_windows},
    {"captured", validate_captured, expect_captured},
    {"metadata", validate_object, expect_metadata},
    {"invariants", validate_invariants, expect_invariants},
    {"schedule", validate_object, expect_schedule},
    {"run", validate_run, expect_run},
    {"stage1", validate_stage1_expectation, expect_stage1},  // reads what `run` reported
    {"tolerance", validate_tolerance, nullptr},
};

// Throws invalid_input naming the first bad value under /expect.
void validate_expect(const nlohmann::json& expect, const Batch& b) {
  for (const Expectation& e : kExpectations) {
    if (!expect.contains(e.key)) continue;
    e.validate(expect[e.key], std::string("/expect/") + e.key);
  }
  if (expect.contains("captured") && b.captured.is_null())
    throw invalid_input("/expect/captured", "the batch has no `captured` block to compare");
  if (expect.contains("stage1") && !expect.contains("run"))
    throw invalid_input("/expect/stage1", "needs a `run` expectation: the kernel expected is the one that run reports");
}

// Why a JSON document is not a batch file, or "": mlactl's own reports (what `--format
// json` printed, saved beside the fixtures) carry the envelope (schema_version, tool,
// command) and no `schema`. Anything else is read as a batch, and its errors are the case's.
std::string not_a_batch(const nlohmann::json& doc) {
  if (!doc.is_object() || doc.contains("schema")) return "";
  if (!doc.contains("schema_version") || !doc.contains("command") || !doc.contains("tool")) return "";
  const std::string command = doc["command"].is_string() ? doc["command"].get<std::string>() : "";
  return "an mlactl report (" + (command.empty() ? std::string("the JSON envelope") : "`" + command + " --format json`") +
         ": schema_version, tool and command, no schema)";
}

CaseResult run_case(const std::string& file, const RunOptions& base) {
  CaseResult cr;
  cr.file = file;
  cr.id = fs::path(file).stem().string();
  nlohmann::json expect;
  Batch b;
  nlohmann::json doc;
  try {
    doc = load_json_document(file);
  } catch (const Error& e) {
    cr.status = CaseStatus::invalid_input;
    cr.exit_code = kExitInvalidInput;
    cr.failures.push_back(e.what());
    return cr;
  }
  if (const std::string why = not_a_batch(doc); !why.empty()) {
    // a saved report beside the fixtures (`-o dir/r.json`) is no case: listed as skipped
    cr.status = CaseStatus::skipped;
    cr.exit_code = kExitSkipped;
    cr.failures.push_back("not a batch file: " + why);
    return cr;
  }
  if (doc.is_object() && doc.contains("expect")) expect = doc["expect"];
  if (doc.is_object() && doc.contains("name") && doc["name"].is_string()) cr.id = doc["name"].get<std::string>();
  try {
    b = parse_batch(doc);
  } catch (const Error& e) {
    // an expected input error counts as passed
    if (expect.is_object() && expect.contains("error") && expect["error"].is_string() &&
        std::string(e.what()).find(expect["error"].get<std::string>()) != std::string::npos) {
      cr.status = CaseStatus::passed;
      cr.checks.push_back("error (invalid input, as expected)");
      return cr;
    }
    cr.status = CaseStatus::invalid_input;
    cr.exit_code = kExitInvalidInput;
    cr.failures.push_back(e.what());
    return cr;
  }
  if (!b.name.empty()) cr.id = b.name;
  if (!expect.is_object() || expect.empty()) {
    cr.status = CaseStatus::skipped;
    cr.exit_code = kExitSkipped;
    cr.failures.push_back("no expect block");
    return cr;
  }

  try {
    validate_expect(expect, b);
  } catch (const Error& e) {
    cr.status = CaseStatus::invalid_input;
    cr.exit_code = kExitInvalidInput;
    cr.failures.push_back(e.what());
    return cr;
  }

  CaseContext c(b, expect, base, cr);
  for (const auto& w : c.rb.decision.known_faults) cr.known_faults.push_back(known_fault_text(w));
  for (const Expectation& e : kExpectations) {
    if (!e.check || !expect.contains(e.key)) continue;
    try {
      e.check(c, expect[e.key]);
    } catch (const nlohmann::json::exception& x) {
      // a mistyped expectation is this case's bad input, not the run's
      cr.status = CaseStatus::invalid_input;
      cr.exit_code = kExitInvalidInput;
      std::string what = x.what();  // "[json.exception.type_error.302] type must be ...": keep the sentence
      if (const auto at = what.find("] "); what.rfind("[json.exception", 0) == 0 && at != std::string::npos) what = what.substr(at + 2);
      cr.failures.push_back(std::string("/expect/") + e.key + ": " + what);
      return cr;
    }
    if (cr.status == CaseStatus::failed) return cr;
  }
  if (cr.stack_findings.empty() && c.plan) cr.stack_findings = c.plan->stack_findings;  // no `run`: the plan's own
  if (cr.status == CaseStatus::unset) {
    cr.status = cr.failures.empty() ? CaseStatus::passed : CaseStatus::incorrect;
    // a refusal the fixture expected is an answer, reported as such (counts as passed)
    if (cr.failures.empty() && c.rb.refused() && (expect.contains("error") || expect.value("route", std::string()) == "refused"))
      cr.status = CaseStatus::refused_as_expected;
    cr.exit_code = cr.failures.empty() ? 0 : kExitVerifyFailed;
  }
  return cr;
}

// XML text or attribute: markup escaped, newlines kept as character references in
// attributes; control bytes XML 1.0 cannot carry are written as visible escapes.
std::string xml_escape(const std::string& s, bool attribute) {
  std::string o;
  for (char ch : s) {
    const unsigned char c = (unsigned char)ch;
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\n': o += attribute ? "&#10;" : "\n"; break;
      case '\t': o += attribute ? "&#9;" : "\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          o += buf;
        } else {
          o += ch;
        }
    }
  }
  return o;
}

// Plain decimal seconds (JUnit readers reject 7.9654e-05).
std::string decimal_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", s < 0 || !std::isfinite(s) ? 0.0 : s);
  return buf;
}

// What a check run computed: every case's result and the summary; the printers below
// turn it into the table, JSON and JUnit.
struct CheckReport {
  std::vector<CaseResult> results;
  // one vocabulary in the table, JSON, JSONL and JUnit (docs/design.md §6): failed:
  // incorrect; errors: invalid input, runtime, timeout; refused: of the passed, the
  // cases refused as expected
  int passed = 0, failed = 0, errors = 0, skipped = 0, refused = 0;
  size_t selected = 0;           // cases selected to run
  std::string stopped;           // why the run ended before every selected case ran ("" when all ran)
  int exit_code = 0;
  double seconds = 0;
};

// The exit code (docs/design.md §6): the most severe status among the cases that ran,
// 4 > 3 > 1 > other > 0; a skipped case does not count unless every case was skipped (77).
// An interrupted run exits 128 + the signal, as a shell reports it.
void summarise(CheckReport& r, int signal_number) {
  r.passed = r.failed = r.errors = r.skipped = r.refused = 0;
  r.exit_code = 0;
  for (const auto& c : r.results) {
    r.refused += c.status == CaseStatus::refused_as_expected;
    if (counts_as_passed(c.status)) ++r.passed;
    else if (c.status == CaseStatus::skipped) ++r.skipped;
    else if (is_error(c.status)) ++r.errors;
    else ++r.failed;
    if (c.status != CaseStatus::skipped && severity(c.exit_code) > severity(r.exit_code)) r.exit_code = c.exit_code;
  }
  if (!r.results.empty() && r.skipped == (int)r.results.size()) r.exit_code = kExitSkipped;
  if (signal_number) r.exit_code = 128 + signal_number;
}

// --format jsonl: one JSON object per line as each case finishes (the same fields as a
// `results` entry of --format json, with "type": "case"), then one "type": "summary" line
// holding that document's `summary`. A killed run leaves every finished case's line.
// A case whose `run` expectation made an executor carries "executor", "stage1" and
// "reduce" (null where no kernel was reported: the CPU executor), as `run` prints them.
nlohmann::ordered_json case_json(const CaseResult& c) {
  nlohmann::ordered_json j = {{"id", c.id},           {"file", c.file},         {"status", to_string(c.status)},
                              {"checks", c.checks},   {"failures", c.failures}, {"not_checked", c.not_checked},
                              {"known_faults", c.known_faults}, {"finding_in_modelled_stack", c.finding_in_stack},
                              {"stack_findings", stack_findings_json(c.stack_findings)},
                              {"seconds", c.seconds}, {"repro", "mlactl check " + c.file}};
  if (!c.executor.empty()) {
    j["executor"] = c.executor;
    add_kernel_ran_members(j, c.ran);
  }
  return j;
}

nlohmann::ordered_json summary_json(const CheckReport& r) {
  nlohmann::ordered_json s = {{"passed", r.passed}, {"failed", r.failed}, {"errors", r.errors}, {"skipped", r.skipped}, {"refused", r.refused}, {"total", r.results.size()},
                              {"selected", r.selected}, {"seconds", r.seconds}, {"exit_code", r.exit_code}};
  if (!r.stopped.empty()) s["stopped"] = r.stopped;
  return s;
}

void print_case_jsonl(std::ostream& os, const CaseResult& c) {
  nlohmann::ordered_json j = {{"type", "case"}};
  j.update(case_json(c));
  os << json_line(j) << "\n" << std::flush;
}

void print_summary_jsonl(std::ostream& os, const CheckReport& r) {
  nlohmann::ordered_json j = {{"type", "summary"}};
  j.update(summary_json(r));
  os << json_line(j) << "\n" << std::flush;
}

void print_check_json(std::ostream& os, const CheckReport& r) {
  auto j = json_envelope("check");
  auto arr = nlohmann::ordered_json::array();
  for (const auto& c : r.results) arr.push_back(case_json(c));
  j["results"] = arr;
  j["summary"] = summary_json(r);
  print_json(os, j);
}

// One case, as soon as it finished. Ids and messages come from files: escaped before
// they reach a terminal (a name cannot forge a "passed" line).
void print_case_line(std::ostream& os, const CaseResult& c, const Style& st) {
  const bool ok = counts_as_passed(c.status);
  const std::string word = to_string(c.status);
  std::string tag = ok ? st.green(word) : c.status == CaseStatus::skipped ? st.yellow(word) : st.red(word);
  tag += std::string(word.size() < 19 ? 19 - word.size() : 0, ' ');  // width of "refused-as-expected"
  os << tag << " " << terminal_safe(c.id);
  if (!c.checks.empty() && ok) {
    os << "  (";
    for (size_t i = 0; i < c.checks.size(); ++i) os << (i ? ", " : "") << terminal_safe(c.checks[i]);
    os << ")";
  }
  os << "\n";
  // a multi-line failure (an executor's stderr tail) stays lines, indented under the case
  for (const auto& f : c.failures) os << "                    " << terminal_lines(f, "                      ") << "\n";
  for (const auto& n : c.not_checked) os << "                    " << terminal_safe(n) << "\n";
  for (const auto& w : c.known_faults) os << "                    " << st.yellow("warning: " + terminal_safe(w)) << "\n";
  for (StackFindingId f : c.stack_findings) os << "                    " << st.yellow(terminal_safe(stack_finding_text(f))) << "\n";
  if (!ok && c.status != CaseStatus::skipped) os << "                    repro: mlactl check " << terminal_safe(c.file) << "\n";
  os << std::flush;
}

void print_check_summary(std::ostream& os, const CheckReport& r) {
  // the JSON summary's and the JUnit file's words and numbers, every one always shown
  os << r.passed << " passed, " << r.failed << " failed, " << r.errors << " errors, " << r.skipped << " skipped, " << r.refused << " refused";
  if (!r.stopped.empty()) os << " (" << r.stopped << ")";
  os << "\n";
}

// JUnit as GitHub, GitLab and Jenkins read it: one testsuite with its counts and time,
// a testcase per case with classname, file and decimal time; <failure message> is the
// first thing that did not match, <error> a case that could not be evaluated; a case
// whose `run` made an executor has <properties>: "executor", what it reported
// ("stage1.kernel", ..., "reduce.kind", ...: cli/kernel_ran.hpp), and a "not_checked"
// for each expectation that did not apply.
std::string junit_xml(const CheckReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"mlactl check\" tests=\"" << r.results.size() << "\" failures=\"" << r.failed
    << "\" errors=\"" << r.errors << "\" skipped=\"" << r.skipped << "\" time=\"" << decimal_seconds(r.seconds) << "\">\n";
  // JUnit has no attribute for them: the rest of the summary's vocabulary as properties
  x << "  <properties><property name=\"passed\" value=\"" << r.passed << "\"/><property name=\"refused\" value=\"" << r.refused << "\"/></properties>\n";
  for (const auto& c : r.results) {
    x << "  <testcase classname=\"mlactl.check\" name=\"" << xml_escape(c.id, true) << "\" file=\"" << xml_escape(c.file, true) << "\" time=\""
      << decimal_seconds(c.seconds) << "\">";
    // what `run` executed with (cli/kernel_ran.hpp) and the expectations not checked, as properties
    std::vector<std::pair<std::string, std::string>> props;
    if (!c.executor.empty()) props.push_back({"executor", c.executor});
    for (auto& p : kernel_ran_properties(c.ran)) props.push_back(std::move(p));
    for (const auto& n : c.not_checked) props.push_back({"not_checked", n});
    // warnings and findings ride with every case, passed ones too
    for (const auto& w : c.known_faults) props.push_back({"known_fault", w});
    for (StackFindingId f : c.stack_findings) props.push_back({"stack_finding", stack_finding_text(f)});
    if (!props.empty()) {
      x << "<properties>";
      for (const auto& [name, value] : props) x << "<property name=\"" << xml_escape(name, true) << "\" value=\"" << xml_escape(value, true) << "\"/>";
      x << "</properties>";
    }
    const std::string first = c.failures.empty() ? std::string(to_string(c.status)) : c.failures[0];
    std::string all;
    for (const auto& f : c.failures) all += f + "\n";
    if (c.status == CaseStatus::skipped) {
      x << "<skipped message=\"" << xml_escape(first, true) << "\"/>";
    } else if (is_error(c.status)) {
      x << "<error type=\"" << to_string(c.status) << "\" message=\"" << xml_escape(first, true) << "\">" << xml_escape(all, false) << "</error>";
    } else if (!counts_as_passed(c.status)) {
      // a failure on the modelled stack's own plan is its finding, typed apart from a fault
      x << "<failure type=\"" << (c.finding_in_stack ? std::string("finding in the modelled stack") : std::string(to_string(c.status))) << "\" message=\"" << xml_escape(first, true) << "\">" << xml_escape(all, false) << "</failure>";
    }
    x << "</testcase>\n";
  }
  x << "</testsuite>\n";
  return x.str();
}

// ---- running a case -------------------------------------------------------------------
CaseResult run_case_caught(const std::string& f, const RunOptions& base) {
  CaseResult cr;
  try {
    cr = run_case(f, base);
  } catch (const Error& e) {
    cr.file = f;
    const bool bad_input = e.exit_code() == kExitInvalidInput;
    cr.status = bad_input ? CaseStatus::invalid_input : CaseStatus::failed;
    cr.exit_code = bad_input ? kExitInvalidInput : kExitDevice;
    cr.failures.push_back(e.what());
  } catch (const std::bad_alloc&) {
    cr.file = f;
    cr.status = CaseStatus::failed;
    cr.exit_code = kExitDevice;
    cr.failures.push_back("out of memory");
  } catch (const std::exception& e) {
    cr.file = f;
    cr.status = CaseStatus::failed;
    cr.exit_code = kExitDevice;
    cr.failures.push_back(std::string("internal error: ") + e.what());
  }
  return cr;
}

// The record of a case a signal stopped before it finished: not the case's fault, so
// skipped with the reason; the run exits 128 + the signal.
CaseResult interrupted_case() {
  CaseResult cr;
  cr.status = CaseStatus::skipped;
  cr.exit_code = kExitSkipped;
  cr.interrupted = true;
  cr.failures.push_back("interrupted by signal " + std::to_string(interrupt_signal()) + " before it finished");
  return cr;
}

// In-process: the case runs on a worker thread while this one watches for a second
// signal, so that ^C twice stops now (the case is abandoned, the process _exits after
// the summary) instead of waiting for a long case. nullopt: abandoned.
std::optional<CaseResult> run_case_watched(const std::string& f, const RunOptions& base) {
  auto task = std::make_shared<std::packaged_task<CaseResult()>>([f, base]() { return run_case_caught(f, base); });
  std::future<CaseResult> result = task->get_future();
  std::thread worker([task]() { (*task)(); });
  while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    if (interrupt_count() >= 2) {
      worker.detach();  // still running: the process ends before it does
      return std::nullopt;
    }
  }
  worker.join();
  return result.get();
}

// --timeout and -j N: each case runs in a child process that sends its serialised result
// through a pipe. The parent polls every running child: a child past its deadline is
// killed (SIGKILL: a case stuck in a loop cannot be asked to stop), one that dies without a
// result crashed. Results come back in any order; the caller prints them in case order.
struct CaseChild {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;  // the case's position in the selection
  std::chrono::steady_clock::time_point start;
  std::string data;
};

CaseChild start_case_child(const std::string& f, const RunOptions& base, size_t index) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(kExitDevice, "", "check: pipe() failed");
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(kExitDevice, "", "check: fork() failed");
  }
  if (pid == 0) {
    ::close(fds[0]);
    reset_interrupts_after_fork();  // a signal removes the child's own files and ends it
    const std::string out = serialise(run_case_caught(f, base));
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += (size_t)n;
    }
    ::_exit(0);  // not exit(): the parent's buffered streams must not be flushed twice
  }
  ::close(fds[1]);
  CaseChild c;
  c.pid = pid;
  c.fd = fds[0];
  c.index = index;
  c.start = std::chrono::steady_clock::now();
  return c;
}

// Reaps the child (killing it first unless its result is complete) and reads its verdict.
CaseResult finish_case_verdict(const CaseChild& c, bool complete, bool timed_out, std::optional<double> timeout, int wstatus);
CaseResult finish_case_child(CaseChild& c, bool complete, bool timed_out, std::optional<double> timeout) {
  ::close(c.fd);
  int wstatus = 0;
  if (!complete) {
    // SIGTERM first, so the child removes its temporary files (cli/interrupt.hpp); a
    // child that does not end within a second (stuck outside the handler's reach) is killed
    ::kill(c.pid, SIGTERM);
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {
      const pid_t r = ::waitpid(c.pid, &wstatus, WNOHANG);
      reaped = r == c.pid || (r < 0 && errno != EINTR);
      if (!reaped) ::usleep(10000);
    }
    if (reaped) return finish_case_verdict(c, complete, timed_out, timeout, wstatus);
    ::kill(c.pid, SIGKILL);
  }
  while (::waitpid(c.pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  return finish_case_verdict(c, complete, timed_out, timeout, wstatus);
}

CaseResult finish_case_verdict(const CaseChild& c, bool complete, bool timed_out, std::optional<double> timeout, int wstatus) {
  CaseResult cr;
  cr.status = CaseStatus::failed;
  cr.exit_code = kExitDevice;
  if (timed_out) {
    cr.status = CaseStatus::timed_out;
    char buf[96];
    std::snprintf(buf, sizeof buf, "timed out after %g s (--timeout)", timeout.value_or(0));
    cr.failures.push_back(buf);
    return cr;
  }
  if (!complete) return interrupted_case();  // not the case's fault: skipped with the reason
  try {
    return deserialise(c.data);
  } catch (const std::exception&) {
    if (interrupt_count()) return interrupted_case();  // a terminal's ^C reaches the children too
    cr.failures.push_back(WIFSIGNALED(wstatus) ? "the case crashed (signal " + std::to_string(WTERMSIG(wstatus)) + ")"
                                               : "the case ended without a result (exit " + std::to_string(WEXITSTATUS(wstatus)) + ")");
    return cr;
  }
}

// Runs cases[0..n) in up to `jobs` children at once and hands each result to `done` as it
// arrives. `stop()` is asked before each start: once it says so (fail-fast, a signal) no
// new case starts and the running ones are killed: after a signal they are reported as
// interrupted (skipped, with the reason), after --fail-fast dropped.
template <class Start, class Done, class Stop>
void run_cases_in_children(size_t n, int jobs, std::optional<double> timeout, Start start, Done done, Stop stop) {
  std::vector<CaseChild> running;
  size_t next = 0;
  while (next < n || !running.empty()) {
    const bool stopping = stop();
    while (!stopping && next < n && (int)running.size() < jobs) running.push_back(start(next++));
    if (stopping) {
      for (auto& c : running) {
        CaseResult cr = finish_case_child(c, false, false, timeout);
        if (interrupt_count()) done(c.index, std::move(cr));
      }
      return;
    }
    // wait for output from any child, at most until the nearest deadline (or 1 s)
    const auto now = std::chrono::steady_clock::now();
    long long wait_ms = 1000;
    if (timeout)
      for (const auto& c : running) {
        const long long left = (long long)std::chrono::duration_cast<std::chrono::milliseconds>(c.start + std::chrono::duration<double>(*timeout) - now).count();
        wait_ms = std::max<long long>(0, std::min(wait_ms, left));
      }
    std::vector<pollfd> fds;
    for (const auto& c : running) fds.push_back({c.fd, POLLIN, 0});
    const int rc = ::poll(fds.data(), fds.size(), (int)wait_ms);
    if (rc < 0 && errno != EINTR) throw Error(kExitDevice, "", "check: poll() failed");
    std::vector<CaseChild> still;
    for (size_t k = 0; k < running.size(); ++k) {
      CaseChild& c = running[k];
      bool eof = false;
      if (rc > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[65536];
        const ssize_t got = ::read(c.fd, buf, sizeof buf);
        if (got <= 0) eof = true;
        else c.data.append(buf, (size_t)got);
      }
      const bool late = timeout && std::chrono::steady_clock::now() - c.start >= std::chrono::duration<double>(*timeout);
      if (eof || late) {
        CaseResult cr = finish_case_child(c, eof, !eof && late, timeout);
        cr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
        done(c.index, std::move(cr));
      } else {
        still.push_back(std::move(c));
      }
    }
    running = std::move(still);
  }
}

}  // namespace

std::vector<std::string> case_status_names() {
  std::vector<std::string> n;  // `unset` is never printed
  for (int i = static_cast<int>(CaseStatus::passed); i <= static_cast<int>(CaseStatus::timed_out); ++i) n.push_back(to_string(static_cast<CaseStatus>(i)));
  return n;
}

void setup_check(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> paths;
    std::string junit, shard, filter, exclude, backend = "auto";
    bool list = false, fail_fast = false;
    std::optional<double> timeout;
    int jobs = 1;
    ExecutorArgs exec;
    std::string probe;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("check", "run every fixture's expect block; one line per case as it finishes, a summary, the worst status as exit code");
  sub->add_option("paths", o->paths, "fixture files or directories (searched for *.json)")->required();
  sub->add_option("--junit", o->junit, "write a JUnit XML report here (rewritten after every case)");
  sub->add_option("--shard", o->shard, "K/N: run only this shard (stable assignment by case id)");
  sub->add_option("--filter", o->filter, "run only cases whose id matches this regex");
  sub->add_option("--exclude", o->exclude, "skip cases whose id matches this regex");
  sub->add_flag("--list", o->list, "list the selected cases (id and file) without running them");
  sub->add_flag("--fail-fast", o->fail_fast, "stop after the first case that does not pass");
  sub->add_option("--timeout", o->timeout, "seconds per case: each case runs in a child process, killed when it takes longer");
  sub->add_option("-j,--jobs", o->jobs, "run up to N cases at once, each in a child process; output stays in case order")->check(CLI::Range(1, 256));
  sub->add_option("--backend", o->backend, "executor for `run` expectations: auto, cpu, gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  add_executor_options(sub, o->exec);
  sub->add_option("--probe", o->probe, "windows: run `run` expectations with the position probe (see `mlactl run --probe`)")
      ->check(CLI::IsMember({"windows"}));
  sub->callback([o, &ctx]() {
    int shard_k = 1, shard_n = 1;
    if (!o->shard.empty()) {
      char slash = 0;
      std::istringstream is(o->shard);
      if (!(is >> shard_k >> slash >> shard_n) || slash != '/' || shard_n < 1 || shard_k < 1 || shard_k > shard_n || !is.eof())
        throw Error(kExitUsage, "", "--shard expects K/N with 1 <= K <= N, got \"" + o->shard + "\"");
    }
    if (o->timeout && (!std::isfinite(*o->timeout) || *o->timeout <= 0 || *o->timeout > 86400))
      throw Error(kExitUsage, "", "--timeout expects seconds in (0, 86400], got " + fmt_double(*o->timeout));
    std::optional<Pattern> filter, exclude;
    if (!o->filter.empty()) filter.emplace(o->filter, "--filter");
    if (!o->exclude.empty()) exclude.emplace(o->exclude, "--exclude");
    RunOptions base;
    base.backend = *backend_from_string(o->backend);
    base.external = o->exec.spec();
    if (!o->probe.empty()) base.probe = probe_kind_from_string(o->probe);
    const auto files = collect(o->paths);

    // ---- select ----
    struct Selected {
      std::string file, id;
    };
    std::vector<Selected> cases;
    for (const auto& f : files) {
      const std::string id = case_id(f);
      if (filter && !filter->search(id)) continue;
      if (exclude && exclude->search(id)) continue;
      if (shard_n > 1 && (int)(fnv1a(id) % (uint64_t)shard_n) != shard_k - 1) continue;
      cases.push_back({f, id});
    }
    if (cases.empty()) {
      std::string why = files.empty() ? "no *.json file under the paths given" : std::to_string(files.size()) + " files, none selected";
      if (!files.empty() && (filter || exclude || shard_n > 1)) why += " by " + std::string(filter ? "--filter " : "") + (exclude ? "--exclude " : "") + (shard_n > 1 ? "--shard" : "");
      while (!why.empty() && why.back() == ' ') why.pop_back();
      throw Error(kExitUsage, "", "check: no case selected (" + why + ")");
    }
    if (o->list) {
      if (ctx.global.fmt() == Format::jsonl) {
        for (const auto& c : cases) *ctx.out << json_line({{"type", "listed"}, {"id", c.id}, {"file", c.file}}) << "\n";
      } else if (ctx.global.fmt() == Format::json) {
        auto j = json_envelope("check");
        auto arr = nlohmann::ordered_json::array();
        for (const auto& c : cases) arr.push_back({{"id", c.id}, {"file", c.file}});
        j["cases"] = arr;
        print_json(*ctx.out, j);
      } else {
        for (const auto& c : cases) *ctx.out << terminal_safe(c.id) << "  " << terminal_safe(c.file) << "\n";
      }
      return;
    }
    const bool jsonl = ctx.global.fmt() == Format::jsonl;
    const bool table = ctx.global.fmt() == Format::table;
    const bool progress = isatty(STDERR_FILENO) && !ctx.global.quiet && table;
    const Style st = ctx.global.style();

    // ---- run, printing and recording each case as it finishes ----
    CheckReport report;
    report.selected = cases.size();
    const bool in_process = o->jobs == 1 && !o->timeout;
    // a signal stops the run between cases (in-process: after the running one; children
    // are stopped at once), acknowledged now; a second stops an in-process case too
    defer_interrupts(in_process ? "mlactl: stopping after the running case; ^C again to stop now\n"
                                : "mlactl: stopping: the running cases are stopped and reported as interrupted\n");
    bool abandoned = false;  // a second signal: the running case was left behind
    const auto t_all = std::chrono::steady_clock::now();
    auto elapsed = [&t_all]() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count(); };
    // each finished case in selection order: printed, recorded, the JUnit file rewritten
    bool failed_fast = false;
    auto record = [&](CaseResult cr, size_t i) {
      cr.id = cases[i].id;
      cr.file = cases[i].file;
      if (table) print_case_line(*ctx.out, cr, st);
      if (jsonl) print_case_jsonl(*ctx.out, cr);
      const bool bad = !counts_as_passed(cr.status) && cr.status != CaseStatus::skipped;
      report.results.push_back(std::move(cr));
      report.seconds = elapsed();
      summarise(report, 0);
      if (!o->junit.empty()) write_file_atomic(o->junit, junit_xml(report));
      if (bad && o->fail_fast && report.results.size() < cases.size()) failed_fast = true;
    };
    if (in_process) {
      // in-process, one case after another
      for (size_t i = 0; i < cases.size() && !interrupt_count() && !failed_fast; ++i) {
        if (progress) *ctx.err << "\r[" << i + 1 << "/" << cases.size() << "] " << terminal_safe(cases[i].id) << "\033[K" << std::flush;
        const auto t0 = std::chrono::steady_clock::now();
        const int signals_before = interrupt_count();
        std::optional<CaseResult> done = run_case_watched(cases[i].file, base);
        abandoned = !done;
        // a case that errs while a signal arrives (^C reaches an --executor's process
        // too, and kills it) was interrupted, not broken
        const bool hit = done && done->status == CaseStatus::failed && interrupt_count() > signals_before;
        CaseResult cr = done && !hit ? std::move(*done) : interrupted_case();
        cr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (progress) *ctx.err << "\r\033[K" << std::flush;
        record(std::move(cr), i);
      }
    } else {
      // children; results may arrive out of order, and are recorded in order
      std::vector<std::optional<CaseResult>> arrived(cases.size());
      size_t printed = 0;
      run_cases_in_children(
          cases.size(), o->jobs, o->timeout,
          [&](size_t i) {
            if (progress) *ctx.err << "\r[" << printed + 1 << "/" << cases.size() << "] " << terminal_safe(cases[i].id) << "\033[K" << std::flush;
            return start_case_child(cases[i].file, base, i);
          },
          [&](size_t i, CaseResult cr) {
            arrived[i] = std::move(cr);
            if (progress) *ctx.err << "\r\033[K" << std::flush;
            while (printed < cases.size() && arrived[printed] && !failed_fast) {
              record(std::move(*arrived[printed]), printed);
              ++printed;
            }
          },
          [&]() { return interrupt_count() != 0 || failed_fast; });
    }
    if (failed_fast)
      report.stopped = "--fail-fast: stopped after the first failure, " + std::to_string(cases.size() - report.results.size()) + " cases not run";
    const int sig = interrupt_signal();
    if (sig) {
      size_t finished = 0;
      for (const auto& c : report.results) finished += !c.interrupted;
      report.stopped = "interrupted by signal " + std::to_string(sig) + " after " + std::to_string(finished) + " of " + std::to_string(cases.size()) + " cases";
    }
    report.seconds = elapsed();
    summarise(report, sig);

    // ---- print the summary (the JSON document holds every case) ----
    if (jsonl) print_summary_jsonl(*ctx.out, report);
    else if (!table) print_check_json(*ctx.out, report);
    else print_check_summary(*ctx.out, report);
    if (!o->junit.empty()) write_file_atomic(o->junit, junit_xml(report));
    ctx.exit_code = report.exit_code;
    if (abandoned) {
      // the abandoned case still runs on its thread: the report is whole (and -o's file
      // in place), so end here rather than wait for it
      ctx.out->flush();
      try {
        if (ctx.output_file) ctx.output_file->commit();
      } catch (const Error& e) {
        *ctx.err << "mlactl: error: " << terminal_safe(e.what()) << "\n";
      }
      ctx.err->flush();
      std::cerr.flush();
      remove_temp_paths();
      ::_exit(report.exit_code);
    }
  });
}

}  // namespace mlactl::cli
