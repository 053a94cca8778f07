// Every verb x every format (docs/design.md §6): the verb either writes valid output in
// that format or refuses it with exit 2 and nothing on stdout.
//   table: exit 0/1/77;  jsonl: every line an object with a "type", the last the summary;
//   json: one document with the envelope, `command` the verb (the
//   JSON Schema itself for `schema`), and
//   the shared shapes (a `route` is always the route object);  csv: a header and records
//   of exactly its field count (RFC 4180 quoting);  svg: one <svg> document.
// A verb skipped for want of a GPU (77) must still print its JSON envelope.
//   format_matrix MLACTL WORKDIR
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int rc = -1;
  std::string out;
};

Result run(const std::string& cmd) {
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// RFC 4180 records; false when a quote is unbalanced
bool parse_csv(const std::string& s, std::vector<std::vector<std::string>>& records) {
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') quoted = true, any = true;
    else if (c == ',') rec.push_back(field), field.clear(), any = true;
    else if (c == '\n') {
      rec.push_back(field);
      records.push_back(rec);
      rec.clear(), field.clear(), any = false;
    } else field += c, any = true;
  }
  if (any) rec.push_back(field), records.push_back(rec);
  return !quoted;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: format_matrix MLACTL WORKDIR\n";
    return 2;
  }
  const std::string mlactl = argv[1], dir = argv[2];
  const std::vector<std::pair<std::string, std::string>> verbs = {
      {"validate", "fixtures/seed000-verify-causal.json"},
      {"schema", ""},
      {"metadata", "fixtures/seed000-verify-causal.json"},
      {"windows", "fixtures/seed000-verify-causal.json --inject verify-window-broadcast"},
      {"route", "--heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal"},
      {"schedule", "--heads 16 --qlen 1 --context 100,700,40 --num-cu 4 --planner aiter,gluon"},
      {"run", "fixtures/noncausal-draft-block.json --backend cpu"},
      {"check", "fixtures/noncausal-draft-block.json --backend cpu"},
      {"defects", ""},
      {"bench", "fixtures/noncausal-draft-block.json --iters 20"},
  };
  int failures = 0, cells = 0;
  auto fail = [&](const std::string& cell, const std::string& why, const std::string& out) {
    ++failures;
    std::cout << "FAIL  " << cell << ": " << why << "\n" << out.substr(0, 2000) << "\n";
  };
  for (const auto& [verb, args] : verbs)
    for (const std::string fmt : {"table", "json", "csv", "svg", "jsonl"}) {
      ++cells;
      const std::string cell = "--format " + fmt + " " + verb;
      const Result r = run("cd '" + dir + "' && '" + mlactl + "' --format " + fmt + " " + verb + " " + args + " 2>/dev/null");
      if (r.rc == 2) {
        if (fmt == "table" || fmt == "json") fail(cell, "refused a format every verb writes", r.out);
        else if (!r.out.empty()) fail(cell, "refused (exit 2) but wrote to stdout", r.out);
        else std::cout << "ok    " << cell << ": refused (exit 2)\n";
        continue;
      }
      if (r.rc != 0 && r.rc != 1 && r.rc != 77) {
        fail(cell, "exit " + std::to_string(r.rc), r.out);
        continue;
      }
      if (fmt == "json") {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(r.out);
        } catch (const std::exception& e) {
          fail(cell, std::string("not one JSON document: ") + e.what(), r.out);
          continue;
        }
        // `schema` prints the JSON Schema itself, a document for validators, not a report
        if (verb == "schema") {
          if (!j.contains("$schema")) fail(cell, "not a JSON Schema", r.out);
          else std::cout << "ok    " << cell << ": the JSON Schema\n";
          continue;
        }
        if (j.value("schema_version", 0) != 1 || !j.contains("tool") || j.value("command", "") != verb) {
          fail(cell, "no envelope (schema_version 1, tool, command \"" + verb + "\")", r.out);
          continue;
        }
        if (j.contains("route") && !(j["route"].is_object() && j["route"].contains("route") && j["route"]["route"].is_string())) {
          fail(cell, "`route` is not the route object", r.out);
          continue;
        }
        std::cout << "ok    " << cell << ": JSON, exit " << r.rc << "\n";
      } else if (fmt == "csv") {
        if (r.rc == 77 && r.out.empty()) {
          std::cout << "ok    " << cell << ": skipped (77)\n";
          continue;
        }
        std::vector<std::vector<std::string>> rec;
        if (!parse_csv(r.out, rec) || rec.size() < 2) {
          fail(cell, "not a CSV with a header and at least one record", r.out);
          continue;
        }
        size_t bad = 0;
        for (const auto& x : rec) bad += x.size() != rec.front().size();
        if (bad) {
          fail(cell, std::to_string(bad) + " records without the header's " + std::to_string(rec.front().size()) + " fields", r.out);
          continue;
        }
        std::cout << "ok    " << cell << ": CSV, " << rec.front().size() << " fields x " << rec.size() - 1 << " records\n";
      } else if (fmt == "jsonl") {
        // JSON Lines: every line one object with a "type"; the last one the summary
        std::istringstream lines(r.out);
        std::string line, last_type, why;
        size_t n = 0;
        while (why.empty() && std::getline(lines, line)) {
          ++n;
          try {
            const nlohmann::json j = nlohmann::json::parse(line);
            if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) why = "line " + std::to_string(n) + " is not an object with a \"type\"";
            else last_type = j["type"];
          } catch (const std::exception& e) {
            why = "line " + std::to_string(n) + " is not JSON: " + e.what();
          }
        }
        if (why.empty() && last_type != "summary") why = "the last line is not the summary";
        if (!why.empty()) {
          fail(cell, why, r.out);
          continue;
        }
        std::cout << "ok    " << cell << ": JSON Lines, " << n << " lines\n";
      } else if (fmt == "svg") {
        if (r.out.rfind("<svg ", 0) != 0 || r.out.find("</svg>\n") != r.out.size() - 7) {
          fail(cell, "not one <svg> document", r.out);
          continue;
        }
        std::cout << "ok    " << cell << ": SVG\n";
      } else {
        std::cout << "ok    " << cell << ": table, exit " << r.rc << "\n";
      }
    }
  std::cout << cells << " verb x format cells, " << failures << " failed\n";
  return failures ? 1 : 0;
}
