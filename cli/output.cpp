#include "cli/output.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <fstream>
#include <cstdio>

#include "cli/build_info.hpp"
#include "core/types.hpp"


namespace mlactl::cli {

namespace {
std::vector<std::string> g_argv;
}

const char* to_string(Format f) {
  switch (f) {
    case Format::table: return "table";
    case Format::json: return "json";
    case Format::csv: return "csv";
    case Format::svg: return "svg";
  }
  return "table";
}

void set_current_argv(const std::vector<std::string>& argv) { g_argv = argv; }
const std::vector<std::string>& current_argv() { return g_argv; }

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
}  // namespace

void Table::print(std::ostream& os, Format f) const {
  if (f == Format::csv) {
    for (size_t i = 0; i < header.size(); ++i) os << (i ? "," : "") << csv_field(header[i]);
    os << "\n";
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) os << (i ? "," : "") << csv_field(r[i]);
      os << "\n";
    }
    return;
  }
  std::vector<size_t> w(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
      const bool right = i < right_align.size() && right_align[i];
      std::string cell = r[i];
      std::string padding(w[i] - std::min(w[i], cell.size()), ' ');
      s += (i ? "  " : "") + (right ? padding + cell : cell + (i + 1 == r.size() ? "" : padding));
    }
    os << s << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

void print_kv(std::ostream& os, const std::vector<std::pair<std::string, std::string>>& kv) {
  size_t w = 0;
  for (const auto& p : kv) w = std::max(w, p.first.size());
  for (const auto& p : kv) os << std::left << std::setw((int)w + 1) << (p.first + ":") << " " << p.second << "\n";
}

nlohmann::ordered_json json_envelope(const std::string& command) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["tool"] = {{"name", "mlactl"}, {"version", build_info().version}, {"commit", build_info().commit}};
  j["argv"] = current_argv();
  j["command"] = command;
  return j;
}

void print_json(std::ostream& os, const nlohmann::ordered_json& j) { os << j.dump(2) << "\n"; }

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(kExitDevice, "", "cannot write " + tmp);
    f.write(content.data(), (std::streamsize)content.size());
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error(kExitDevice, "", "writing " + tmp + " failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(kExitDevice, "", "cannot move " + tmp + " to " + path);
  }
}

std::string join_ints(const std::vector<int32_t>& v, size_t max_items) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size() && i < max_items; ++i) os << (i ? "," : "") << v[i];
  if (v.size() > max_items) os << ",... (" << v.size() << " entries)";
  os << "]";
  return os.str();
}

std::string fmt_double(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v);
  return buf;
}

}  // namespace mlactl::cli
