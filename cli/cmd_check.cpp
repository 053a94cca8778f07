// `mlactl check PATH...`: runs every fixture's `expect` block (docs/design.md §6) and prints
// one line per case; --junit, --shard K/N (stable), --filter REGEX, --format json.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/pipeline.hpp"
#include "core/captured.hpp"
#include "core/kernel_windows.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"

namespace mlactl::cli {

namespace fs = std::filesystem;

namespace {

// A case's verdict; refused-as-expected counts as passed.
enum class CaseStatus { unset, passed, refused_as_expected, incorrect, failed, invalid_input, skipped };
const char* to_string(CaseStatus s) {
  switch (s) {
    case CaseStatus::unset: return "unset";
    case CaseStatus::passed: return "passed";
    case CaseStatus::refused_as_expected: return "refused-as-expected";
    case CaseStatus::incorrect: return "incorrect";
    case CaseStatus::failed: return "failed";
    case CaseStatus::invalid_input: return "invalid_input";
    case CaseStatus::skipped: return "skipped";
  }
  return "?";
}
bool counts_as_passed(CaseStatus s) { return s == CaseStatus::passed || s == CaseStatus::refused_as_expected; }

struct CaseResult {
  std::string id;
  std::string file;
  CaseStatus status = CaseStatus::unset;
  int exit_code = 0;
  std::vector<std::string> checks;    // "route=gluon_verify ok" ...
  std::vector<std::string> failures;  // what did not match
  double seconds = 0;
};

// FNV-1a: a stable shard assignment that depends only on the case id.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::string> collect(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (auto it = fs::recursive_directory_iterator(p, ec); it != fs::recursive_directory_iterator(); ++it)
        if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path().string());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw Error(kExitUsage, "", p + ": no such file or directory");
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
  if (rd.route != Route::refused) c.fail("error: expected a refusal containing \"" + want + "\", got route " + to_string(rd.route));
  else if (rd.error.find(want) == std::string::npos) c.fail("error: expected \"" + want + "\" in \"" + rd.error + "\"");
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

struct Expectation {
  const char* key;
  ExpectFn check;
};
// In the order they run (cheap before expensive; `tolerance` is read by `run`).
const Expectation kExpectations[] = {
    {"route", expect_route},       {"error", expect_error},           {"findings", expect_findings},
    {"windows", expect_windows},   {"captured", expect_captured},     {"metadata", expect_metadata},
    {"invariants", expect_invariants}, {"schedule", expect_schedule}, {"run", expect_run},
};

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

  CaseContext c(b, expect, base, cr);
  for (const Expectation& e : kExpectations) {
    if (!expect.contains(e.key)) continue;
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
  if (cr.status == CaseStatus::unset) {
    cr.status = cr.failures.empty() ? CaseStatus::passed : CaseStatus::incorrect;
    // a refusal the fixture expected is an answer, reported as such (counts as passed)
    if (cr.failures.empty() && c.rb.refused() && (expect.contains("error") || expect.value("route", std::string()) == "refused"))
      cr.status = CaseStatus::refused_as_expected;
    cr.exit_code = cr.failures.empty() ? 0 : kExitVerifyFailed;
  }
  return cr;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// What a check run computed: every case's result and the summary; the printers below
// turn it into the table, JSON and JUnit.
struct CheckReport {
  std::vector<CaseResult> results;
  int passed = 0, failed = 0, skipped = 0;
  int exit_code = 0;  // the most severe case status
  double seconds = 0;
};

void summarise(CheckReport& r) {
  for (const auto& c : r.results) {
    if (severity(c.exit_code) > severity(r.exit_code)) r.exit_code = c.exit_code;
    if (counts_as_passed(c.status)) ++r.passed;
    else if (c.status == CaseStatus::skipped) ++r.skipped;
    else ++r.failed;
  }
}

void print_check_json(std::ostream& os, const CheckReport& r) {
  auto j = json_envelope("check");
  auto arr = nlohmann::ordered_json::array();
  for (const auto& c : r.results)
    arr.push_back({{"id", c.id}, {"file", c.file}, {"status", to_string(c.status)}, {"checks", c.checks}, {"failures", c.failures}, {"seconds", c.seconds},
                   {"repro", "mlactl check " + c.file}});
  j["results"] = arr;
  j["summary"] = {{"passed", r.passed}, {"failed", r.failed}, {"skipped", r.skipped}, {"total", r.results.size()}, {"exit_code", r.exit_code}};
  print_json(os, j);
}

void print_check_table(std::ostream& os, const CheckReport& r, const Style& st) {
  for (const auto& c : r.results) {
    const bool ok = counts_as_passed(c.status);
    const std::string word = to_string(c.status);
    std::string tag = ok ? st.green(word) : c.status == CaseStatus::skipped ? st.yellow(word) : st.red(word);
    tag += std::string(word.size() < 19 ? 19 - word.size() : 0, ' ');  // width of "refused-as-expected"
    os << tag << " " << c.id;
    if (!c.checks.empty() && ok) {
      os << "  (";
      for (size_t i = 0; i < c.checks.size(); ++i) os << (i ? ", " : "") << c.checks[i];
      os << ")";
    }
    os << "\n";
    for (const auto& f : c.failures) os << "                    " << f << "\n";
    if (!ok && c.status != CaseStatus::skipped) os << "                    repro: mlactl check " << c.file << "\n";
  }
  os << r.passed << " passed, " << r.failed << " failed" << (r.skipped ? ", " + std::to_string(r.skipped) + " skipped" : "") << "\n";
}

std::string junit_xml(const CheckReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"mlactl check\" tests=\"" << r.results.size() << "\" failures=\"" << r.failed
    << "\" skipped=\"" << r.skipped << "\">\n";
  for (const auto& c : r.results) {
    x << "  <testcase classname=\"mlactl\" name=\"" << xml_escape(c.id) << "\" time=\"" << c.seconds << "\">";
    if (c.status == CaseStatus::skipped) {
      x << "<skipped message=\"" << xml_escape(c.failures.empty() ? "" : c.failures[0]) << "\"/>";
    } else if (!counts_as_passed(c.status)) {
      std::string msg;
      for (const auto& f : c.failures) msg += f + "\n";
      x << "<failure message=\"" << xml_escape(to_string(c.status)) << "\">" << xml_escape(msg) << "</failure>";
    }
    x << "</testcase>\n";
  }
  x << "</testsuite>\n";
  return x.str();
}

}  // namespace

void setup_check(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> paths;
    std::string junit, shard, filter, backend = "auto";
    ExecutorArgs exec;
    std::string probe;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("check", "run every fixture's expect block; one line per case, a summary, the worst status as exit code");
  sub->add_option("paths", o->paths, "fixture files or directories (searched for *.json)")->required();
  sub->add_option("--junit", o->junit, "write a JUnit XML report here");
  sub->add_option("--shard", o->shard, "K/N: run only this shard (stable assignment by case id)");
  sub->add_option("--filter", o->filter, "run only cases whose id matches this regex");
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
    std::regex re;
    if (!o->filter.empty()) {
      try {
        re = std::regex(o->filter);
      } catch (const std::regex_error& e) {
        throw Error(kExitUsage, "", "--filter: bad regex: " + std::string(e.what()));
      }
    }
    RunOptions base;
    base.backend = *backend_from_string(o->backend);
    base.external = o->exec.spec();
    if (!o->probe.empty()) base.probe = probe_kind_from_string(o->probe);
    const auto files = collect(o->paths);
    const bool progress = isatty(STDERR_FILENO) && !ctx.global.quiet && ctx.global.fmt() == Format::table;

    // ---- compute ----
    CheckReport report;
    const auto t_all = std::chrono::steady_clock::now();
    size_t idx = 0;
    for (const auto& f : files) {
      ++idx;
      const std::string id = case_id(f);
      if (!o->filter.empty() && !std::regex_search(id, re)) continue;
      if (shard_n > 1 && (int)(fnv1a(id) % (uint64_t)shard_n) != shard_k - 1) continue;
      if (progress) *ctx.err << "\r[" << idx << "/" << files.size() << "] " << id << "\033[K" << std::flush;
      auto t0 = std::chrono::steady_clock::now();
      CaseResult cr;
      try {
        cr = run_case(f, base);
      } catch (const Error& e) {
        cr.file = f;
        const bool bad_input = e.exit_code() == kExitInvalidInput;
        cr.status = bad_input ? CaseStatus::invalid_input : CaseStatus::failed;
        cr.exit_code = bad_input ? kExitInvalidInput : kExitDevice;
        cr.failures.push_back(e.what());
      }
      cr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cr.id = id;
      report.results.push_back(std::move(cr));
    }
    if (progress) *ctx.err << "\r\033[K";
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
    summarise(report);

    // ---- print ----
    if (ctx.global.fmt() == Format::json) print_check_json(*ctx.out, report);
    else print_check_table(*ctx.out, report, ctx.global.style());
    if (!o->junit.empty()) write_file_atomic(o->junit, junit_xml(report));
    ctx.exit_code = report.exit_code;
  });
}

}  // namespace mlactl::cli
