// `mlactl defects [ID]`: the defect catalog (docs/design.md §7) — every id `inject` accepts,
// its seed, the PR that fixed it, the stage it switches and the symptom; with an ID,
// the plain-English explanation and the fixture pair that shows it.
#include <filesystem>

#include "cli/app.hpp"
#include "core/defects.hpp"

namespace mlactl::cli {

namespace {

nlohmann::ordered_json defect_json(const DefectInfo& d, bool full) {
  nlohmann::ordered_json j;
  j["id"] = d.id;
  j["seed"] = d.seed;
  j["fixed_by"] = d.fixed_by;
  j["stage"] = d.stage;
  j["changes"] = d.changes;
  j["symptom"] = d.symptom;
  j["fixture"] = "fixtures/" + defect_fixture(d) + ".json";
  j["fixed_fixture"] = "fixtures/" + defect_fixed_fixture(d) + ".json";
  if (full) {
    j["introduced"] = d.introduced;
    j["where"] = d.where;
    j["explanation"] = d.explanation;
    auto extra = nlohmann::ordered_json::array();
    for (const auto& f : d.extra_fixtures) extra.push_back("fixtures/" + f + ".json");
    j["related_fixtures"] = extra;
  }
  return j;
}

// The CSV: one record per defect with the fields of its JSON object (lists joined by ';').
void print_defects_csv(std::ostream& os, const std::vector<const DefectInfo*>& defects) {
  Table t;
  for (const DefectInfo* d : defects) {
    const nlohmann::ordered_json j = defect_json(*d, true);
    if (t.header.empty())
      for (auto it = j.begin(); it != j.end(); ++it) t.header.push_back(it.key());
    std::vector<std::string> row;
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string v;
      if (it->is_string()) v = it->get<std::string>();
      else if (it->is_array())
        for (const auto& e : *it) v += (v.empty() ? "" : ";") + (e.is_string() ? e.get<std::string>() : e.dump());
      else v = it->dump();
      row.push_back(v);
    }
    t.add(row);
  }
  t.print(os, Format::csv);
}

// Where the fixtures are, so that the `try:` line works from any folder: installed
// beside the binary (PREFIX/share/mlactl/fixtures, `cmake --install`), else in the source
// tree the binary was built from, else the name relative to the repository root.
std::string fixtures_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "mlactl" / "fixtures";
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
#ifdef MLACTL_SOURCE_FIXTURES
  if (fs::is_directory(MLACTL_SOURCE_FIXTURES, ec)) return MLACTL_SOURCE_FIXTURES;
#endif
  return "fixtures";
}

// A path as one shell word.
std::string shell_word(const std::string& s) {
  if (s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Greedy word wrap for the explanation paragraph.
std::string wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(pos, sp - pos);
    pos = sp + 1;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace

void setup_defects(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("defects", "the defect catalog: ids for `inject`, their seeds, fixing PRs, stages and symptoms");
  sub->add_option("id", *id, "show one defect with its explanation and fixtures");
  sub->callback([id, &ctx]() {
    auto& os = *ctx.out;
    const Format fmt = ctx.global.fmt();
    if (!id->empty()) {
      const DefectInfo* d = find_defect(*id);
      if (!d) throw Error(kExitUsage, "", "unknown defect id \"" + *id + "\"" + defect_suggestion(*id) + "; known ids: " + defect_id_list());
      if (fmt == Format::json) {
        auto j = json_envelope("defects");
        const auto part = defect_json(*d, true);
        for (auto it = part.begin(); it != part.end(); ++it) j[it.key()] = it.value();
        print_json(os, j);
        return;
      }
      if (fmt == Format::csv) {
        print_defects_csv(os, {d});
        return;
      }
      const Style st = ctx.global.style();
      const std::string dir = fixtures_dir();
      std::vector<std::pair<std::string, std::string>> kv = {
          {"id", st.bold(d->id)},
          {"seed", d->seed},
          // a bare "#N" is a vLLM pull request; other projects' ids carry their name ("sglang #19902")
          {"fixed by", (d->fixed_by.rfind('#', 0) == 0 ? "vLLM " : "") + d->fixed_by},
          {"introduced", d->introduced},
          {"stage", d->stage},
          {"switch acts in", d->where},
          {"changes", d->changes},
          {"symptom", d->symptom},
          {"fixture (defect on)", dir + "/" + defect_fixture(*d) + ".json"},
          {"fixture (fixed)", dir + "/" + defect_fixed_fixture(*d) + ".json"},
      };
      for (const auto& f : d->extra_fixtures) kv.push_back({"related fixture", dir + "/" + f + ".json"});
      print_kv(os, kv);
      os << "\n" << wrap(d->explanation, 88, "  ");
      // absolute where the fixtures were found: the line works from any folder
      os << "\ntry: mlactl check " << shell_word(dir + "/" + defect_fixture(*d) + ".json") << " "
         << shell_word(dir + "/" + defect_fixed_fixture(*d) + ".json") << "\n";
      return;
    }
    if (fmt == Format::json) {
      auto j = json_envelope("defects");
      auto arr = nlohmann::ordered_json::array();
      for (const auto& d : defect_catalog()) arr.push_back(defect_json(d, true));
      j["defects"] = arr;
      print_json(os, j);
      return;
    }
    if (fmt == Format::csv) {
      std::vector<const DefectInfo*> all;
      for (const auto& d : defect_catalog()) all.push_back(&d);
      print_defects_csv(os, all);
      return;
    }
    Table t;
    t.header = {"id", "seed", "fixed by", "stage", "symptom"};
    for (const auto& d : defect_catalog()) t.add({d.id, d.seed, d.fixed_by, d.stage, d.symptom});
    t.print(os, fmt);
    if (fmt == Format::table) os << "\n`mlactl defects ID` explains one; switch one on with `inject: [ID]` in a batch or `--inject ID`.\n";
  });
}

}  // namespace mlactl::cli
