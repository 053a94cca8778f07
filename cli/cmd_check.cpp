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
#include "core/route_plan.hpp"

namespace mlactl::cli {

namespace fs = std::filesystem;

namespace {

struct CaseResult {
  std::string id;
  std::string file;
  std::string status;  // passed | incorrect | failed | invalid_input | skipped
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

CaseResult run_case(const std::string& file, const std::string& backend) {
  CaseResult cr;
  cr.file = file;
  cr.id = fs::path(file).stem().string();
  auto fail = [&](const std::string& what) { cr.failures.push_back(what); };
  nlohmann::json expect;
  Batch b;
  nlohmann::json doc;
  try {
    doc = load_json_document(file);
  } catch (const Error& e) {
    cr.status = "invalid_input";
    cr.exit_code = kExitInvalidInput;
    fail(e.what());
    return cr;
  }
  if (doc.is_object() && doc.contains("expect")) expect = doc["expect"];
  if (doc.is_object() && doc.contains("name") && doc["name"].is_string()) cr.id = doc["name"].get<std::string>();
  try {
    b = parse_batch(doc);
  } catch (const Error& e) {
    // an expected input error counts as passed
    if (expect.is_object() && expect.contains("error") && std::string(e.what()).find(expect["error"].get<std::string>()) != std::string::npos) {
      cr.status = "passed";
      cr.checks.push_back("error (invalid input, as expected)");
      return cr;
    }
    cr.status = "invalid_input";
    cr.exit_code = kExitInvalidInput;
    fail(e.what());
    return cr;
  }
  if (!b.name.empty()) cr.id = b.name;
  if (!expect.is_object() || expect.empty()) {
    cr.status = "skipped";
    cr.exit_code = kExitSkipped;
    fail("no expect block");
    return cr;
  }

  DecodeMetadata md = build_decode(b, false);
  RouteDecision rd = decide_route(b, md, "");
  if (route_needs_flatten(rd.route)) md = build_decode(b, true);
  if (expect.contains("route")) {
    const std::string want = expect["route"].get<std::string>();
    if (want != to_string(rd.route)) fail("route: expected " + want + ", got " + to_string(rd.route) + (rd.route == Route::refused ? " (" + rd.error + ")" : ""));
    else cr.checks.push_back("route");
  }
  if (expect.contains("error")) {
    const std::string want = expect["error"].get<std::string>();
    if (rd.route != Route::refused) fail("error: expected a refusal containing \"" + want + "\", got route " + to_string(rd.route));
    else if (rd.error.find(want) == std::string::npos) fail("error: expected \"" + want + "\" in \"" + rd.error + "\"");
    else cr.checks.push_back("error");
  }
  if (expect.contains("findings")) {
    for (const auto& f : expect["findings"]) {
      const std::string want = f.get<std::string>();
      bool found = false;
      for (const auto& x : rd.findings) found |= x.find(want) != std::string::npos;
      if (!found) fail("findings: no finding containing \"" + want + "\"");
    }
    cr.checks.push_back("findings");
  }
  auto rows = oracle_windows(b);
  if (expect.contains("windows")) {
    // the windows the routed kernel's metadata gives each row (padding rows: their length, 0)
    MetadataWindows mw = metadata_windows(b, md, rd.route, rows);
    std::vector<int64_t> got;
    for (size_t i = 0; i < rows.size(); ++i) got.push_back(rows[i].kind == MaskKind::padding || !mw.available ? 0 : mw.end[i] - mw.begin[i]);
    std::vector<int64_t> want = expect["windows"].get<std::vector<int64_t>>();
    if (got != want) {
      std::string why = "windows: " + std::to_string(got.size()) + " rows vs " + std::to_string(want.size()) + " expected";
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        if (got[i] != want[i]) {
          why = "windows: row " + std::to_string(i) + " (request " + std::to_string(rows[i].request) + ", token " + std::to_string(rows[i].token) +
                ") gets " + std::to_string(got[i]) + " KV entries, expected " + std::to_string(want[i]);
          break;
        }
      fail(why);
    } else {
      cr.checks.push_back("windows");
    }
  }
  if (expect.contains("captured")) {
    // "matches", or {"field": F[, "index": I]}: the first difference expected
    CapturedMetadata cap = parse_captured(b, b.captured, (int64_t)rows.size());
    std::optional<RoutePlan> plan;
    if (rd.route != Route::refused && cap.work_indptr) plan = plan_route(b, md, rd, rows);
    CapturedDiff cd = diff_captured(b, md, rows, cap, plan ? &*plan : nullptr);
    const auto& want = expect["captured"];
    if (want.is_string() && want.get<std::string>() == "matches") {
      if (!cd.same) fail("captured: expected to match, " + cd.message);
      else cr.checks.push_back("captured");
    } else if (want.is_object()) {
      if (cd.same) fail("captured: expected a difference in " + want.value("field", std::string("?")) + ", but it matches");
      else if (want.contains("field") && want["field"].get<std::string>() != cd.field) fail("captured: expected the first difference in " + want["field"].get<std::string>() + ", got " + cd.message);
      else if (want.contains("index") && want["index"].get<int64_t>() != cd.index) fail("captured: expected the first difference at index " + want["index"].dump() + ", got " + cd.message);
      else cr.checks.push_back("captured (" + cd.message + ")");
    } else {
      fail("captured: expect \"matches\" or {\"field\": ..., \"index\": ...}");
    }
  }
  if (expect.contains("metadata")) {
    nlohmann::json got = nlohmann::json::parse(metadata_json(b, md, !md.flat_indptr.empty()).dump());
    std::string why;
    if (!subset_equal(expect["metadata"], got, "metadata", &why)) fail(why);
    else cr.checks.push_back("metadata");
  }
  if (expect.contains("schedule") || expect.contains("invariants")) {
    if (rd.route == Route::refused) {
      fail("schedule: the route is refused (" + rd.error + ")");
    } else {
      RoutePlan plan = plan_route(b, md, rd, rows);
      InvariantReport inv = check_plan_invariants(plan, md.max_qo_len);
      if (expect.contains("invariants")) {
        const std::string want = expect["invariants"].get<std::string>();
        const std::string got = inv.ok ? "ok" : "broken";
        if (want != got) fail("invariants: expected " + want + ", got " + got + (inv.violations.empty() ? "" : " (" + inv.violations[0].message + ")"));
        else cr.checks.push_back("invariants");
      }
      if (expect.contains("schedule")) {
        // the same JSON `schedule --format json` prints; the fixture names a subset of it
        nlohmann::json got = nlohmann::json::parse(plan_json(plan, inv).dump());
        std::string why;
        if (!subset_equal(expect["schedule"], got, "schedule", &why)) fail(why);
        else cr.checks.push_back("schedule");
      }
    }
  }
  if (expect.contains("run")) {
    const std::string want = expect["run"].get<std::string>();
    RunOptions ro;
    ro.backend = backend;
    ro.use_captured = !b.captured.is_null();  // a fixture that carries captured arrays is about them
    if (expect.contains("tolerance")) {
      const auto& t = expect["tolerance"];
      if (t.contains("atol")) ro.atol = t["atol"].get<double>();
      if (t.contains("rtol")) ro.rtol = t["rtol"].get<double>();
      if (t.contains("cos_tol")) ro.cos_tol = t["cos_tol"].get<double>();
    }
    RunOutcome o = run_pipeline(b, ro);
    if (o.status == "skipped") {
      cr.status = "skipped";
      cr.exit_code = kExitSkipped;
      fail("run: " + o.message);
    } else if (o.status == "failed") {
      cr.status = "failed";
      cr.exit_code = kExitDevice;
      fail("run: " + o.message);
      return cr;
    } else if (o.status != want) {
      std::string why = "run: expected " + want + ", got " + o.status;
      if (!o.message.empty()) why += " (" + o.message + ")";
      if (o.audit && !o.audit->bad.empty()) why += "; first bad row: request " + std::to_string(o.audit->bad[0].request) + " token " +
                                                   std::to_string(o.audit->bad[0].token) + ": " + o.audit->bad[0].detail;
      fail(why);
    } else {
      cr.checks.push_back("run=" + want);
    }
  }
  if (cr.status.empty()) {
    cr.status = cr.failures.empty() ? "passed" : "incorrect";
    // a refusal the fixture expected is an answer, reported as such (counts as passed)
    if (cr.failures.empty() && rd.route == Route::refused && (expect.contains("error") || expect.value("route", std::string()) == "refused"))
      cr.status = "refused-as-expected";
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

}  // namespace

void setup_check(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> paths;
    std::string junit, shard, filter, backend = "auto";
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("check", "run every fixture's expect block; one line per case, a summary, the worst status as exit code");
  sub->add_option("paths", o->paths, "fixture files or directories (searched for *.json)")->required();
  sub->add_option("--junit", o->junit, "write a JUnit XML report here");
  sub->add_option("--shard", o->shard, "K/N: run only this shard (stable assignment by case id)");
  sub->add_option("--filter", o->filter, "run only cases whose id matches this regex");
  sub->add_option("--backend", o->backend, "executor for `run` expectations: auto, cpu, gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
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
    auto files = collect(o->paths);
    std::vector<CaseResult> results;
    const bool progress = isatty(STDERR_FILENO) && !ctx.global.quiet && ctx.global.fmt() == Format::table;
    const Style st = ctx.global.style();
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
        cr = run_case(f, o->backend);
      } catch (const Error& e) {
        cr.file = f;
        if (cr.id.empty()) cr.id = fs::path(f).stem().string();
        cr.status = e.exit_code() == kExitInvalidInput ? "invalid_input" : "failed";
        cr.exit_code = e.exit_code() == kExitInvalidInput ? kExitInvalidInput : kExitDevice;
        cr.failures.push_back(e.what());
      }
      cr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cr.id = id;
      results.push_back(std::move(cr));
    }
    if (progress) *ctx.err << "\r\033[K";
    int worst = 0, passed = 0, failed = 0, skipped = 0;
    for (const auto& r : results) {
      if (severity(r.exit_code) > severity(worst)) worst = r.exit_code;
      if (r.status == "passed" || r.status == "refused-as-expected") ++passed;
      else if (r.status == "skipped") ++skipped;
      else ++failed;
    }
    auto& os = *ctx.out;
    if (ctx.global.fmt() == Format::json) {
      auto j = json_envelope("check");
      auto arr = nlohmann::ordered_json::array();
      for (const auto& r : results)
        arr.push_back({{"id", r.id}, {"file", r.file}, {"status", r.status}, {"checks", r.checks}, {"failures", r.failures}, {"seconds", r.seconds},
                       {"repro", "mlactl check " + r.file}});
      j["results"] = arr;
      j["summary"] = {{"passed", passed}, {"failed", failed}, {"skipped", skipped}, {"total", results.size()}, {"exit_code", worst}};
      print_json(os, j);
    } else {
      for (const auto& r : results) {
        const bool ok = r.status == "passed" || r.status == "refused-as-expected";
        std::string tag = ok ? st.green(r.status) : r.status == "skipped" ? st.yellow(r.status) : st.red(r.status);
        tag += std::string(r.status.size() < 19 ? 19 - r.status.size() : 0, ' ');  // width of "refused-as-expected"
        os << tag << " " << r.id;
        if (!r.checks.empty() && ok) {
          os << "  (";
          for (size_t i = 0; i < r.checks.size(); ++i) os << (i ? ", " : "") << r.checks[i];
          os << ")";
        }
        os << "\n";
        for (const auto& f : r.failures) os << "                    " << f << "\n";
        if (!ok && r.status != "skipped") os << "                    repro: mlactl check " << r.file << "\n";
      }
      os << passed << " passed, " << failed << " failed" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "") << "\n";
    }
    if (!o->junit.empty()) {
      std::ostringstream x;
      x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"mlactl check\" tests=\"" << results.size() << "\" failures=\"" << failed
        << "\" skipped=\"" << skipped << "\">\n";
      for (const auto& r : results) {
        x << "  <testcase classname=\"mlactl\" name=\"" << xml_escape(r.id) << "\" time=\"" << r.seconds << "\">";
        if (r.status == "skipped") x << "<skipped message=\"" << xml_escape(r.failures.empty() ? "" : r.failures[0]) << "\"/>";
        else if (r.status != "passed" && r.status != "refused-as-expected") {
          std::string msg;
          for (const auto& f : r.failures) msg += f + "\n";
          x << "<failure message=\"" << xml_escape(r.status) << "\">" << xml_escape(msg) << "</failure>";
        }
        x << "</testcase>\n";
      }
      x << "</testsuite>\n";
      write_file_atomic(o->junit, x.str());
    }
    ctx.exit_code = worst;
  });
}

}  // namespace mlactl::cli
