#include "cli/output.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <fstream>
#include <cstdio>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

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
    case Format::jsonl: return "jsonl";
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

// argv and file paths are not always UTF-8 (fuzz_argv found `--format json` with a 0xFF
// byte aborting in dump): invalid bytes print as U+FFFD instead of throwing.
std::string json_text(const nlohmann::ordered_json& j) { return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace); }

void print_json(std::ostream& os, const nlohmann::ordered_json& j) { os << json_text(j) << "\n"; }

std::string json_line(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); }

void write_file_atomic(const std::string& path, const std::string& content, Symlinks links) {
  // Only a regular file is ever replaced: as root, renaming over a device node or a
  // symlink replaced it with a regular file. A symlink is written through (the file it
  // names is replaced, the link stays) or refused; anything else that exists is refused.
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      if (links == Symlinks::refuse) throw Error(kExitUsage, "", path + ": is a symbolic link; mlactl writes no file through a link here");
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real) throw Error(kExitUsage, "", path + ": is a symbolic link to a missing file");
      target = real;
      std::free(real);
      if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(kExitUsage, "", path + ": links to " + target + ", which is not a regular file");
    } else if (!S_ISREG(st.st_mode)) {
      throw Error(kExitUsage, "", path + ": exists and is not a regular file (a directory, device, FIFO or socket); mlactl replaces only regular files");
    }
  }
  // a unique temporary file in the same folder (rename is atomic only within a file
  // system; two runs writing one path no longer share a temp name)
  const auto slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : target.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  std::string tmpl = dir + "/." + base + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw Error(kExitDevice, "", "cannot write " + path + ": " + std::strerror(errno));
  const std::string tmp(name.data());
  auto fail = [&](const std::string& what) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(kExitDevice, "", what + " " + path + " failed: " + std::strerror(e));
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing");
    done += (size_t)n;
  }
  // the mode a plain create would give (mkstemp's is 0600), or the replaced file's
  mode_t mode = 0666;
  if (::stat(target.c_str(), &st) == 0) mode = st.st_mode & 07777;
  else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  if (::fchmod(fd, mode) != 0) fail("setting the mode of");
  if (::fsync(fd) != 0) fail("flushing");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(kExitDevice, "", "writing " + path + " failed: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw Error(kExitDevice, "", "cannot move the new file over " + path + ": " + std::strerror(e));
  }
}

std::string path_component(const std::string& name) {
  std::string o;
  for (char c : name.substr(0, 100)) o += (std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (!o.empty() && o[0] == '.') o[0] = '_';  // no "..", no hidden file
  return o.empty() ? "case" : o;
}

std::string terminal_safe(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    const unsigned char c = (unsigned char)ch;
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o;
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
