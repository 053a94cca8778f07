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
#include "cli/interrupt.hpp"
#include "cli/json_writer.hpp"
#include "core/types.hpp"


namespace mlactl::cli {

namespace {
std::vector<std::string> g_argv;
bool g_compact = false;
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
std::string json_text(const nlohmann::ordered_json& j) {
  return escape_c1_controls(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

void print_json(std::ostream& os, const nlohmann::ordered_json& j) {
  JsonWriter w(os, g_compact);
  w.value(j).finish();
}

std::string json_line(const nlohmann::ordered_json& j) {
  return escape_c1_controls(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

void set_json_compact(bool compact) { g_compact = compact; }
bool json_compact() { return g_compact; }

AtomicFile::AtomicFile(const std::string& path, Symlinks links) : path_(path) {
  // Only a regular file is ever replaced: as root, renaming over a device node or a
  // symlink replaced it with a regular file. A symlink is written through (the file it
  // names is replaced, the link stays) or refused; anything else that exists is refused.
  target_ = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      if (links == Symlinks::refuse) throw Error(kExitUsage, "", path + ": is a symbolic link; mlactl writes no file through a link here");
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real) throw Error(kExitUsage, "", path + ": is a symbolic link to a missing file");
      target_ = real;
      std::free(real);
      if (::stat(target_.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(kExitUsage, "", path + ": links to " + target_ + ", which is not a regular file");
    } else if (!S_ISREG(st.st_mode)) {
      throw Error(kExitUsage, "", path + ": exists and is not a regular file (a directory, device, FIFO or socket); mlactl replaces only regular files");
    }
  }
  // a unique temporary file in the same folder (rename is atomic only within a file
  // system; two runs writing one path no longer share a temp name)
  const auto slash = target_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : target_.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? target_ : target_.substr(slash + 1);
  std::string tmpl = dir + "/." + base + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) throw Error(kExitDevice, "", "cannot write " + path + ": " + std::strerror(errno));
  tmp_ = name.data();
  guard_ = std::make_unique<TempPathGuard>(tmp_);
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
  if (guard_) guard_->release();
  fd_ = -1;
  tmp_.clear();
}

bool AtomicFile::write(const char* data, size_t n) {
  if (error_ || fd_ < 0) return false;
  size_t done = 0;
  while (done < n) {
    const ssize_t k = ::write(fd_, data + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      error_ = k < 0 ? errno : EIO;
      return false;
    }
    done += (size_t)k;
  }
  return true;
}

void AtomicFile::commit() {
  auto fail = [&](const std::string& what, int e) {
    discard();
    throw Error(kExitDevice, "", what + " " + path_ + " failed: " + std::strerror(e));
  };
  if (error_) fail("writing", error_);
  // the mode a plain create would give (mkstemp's is 0600), or the replaced file's
  struct stat st {};
  mode_t mode = 0666;
  if (::stat(target_.c_str(), &st) == 0) mode = st.st_mode & 07777;
  else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  if (::fchmod(fd_, mode) != 0) fail("setting the mode of", errno);
  if (::fsync(fd_) != 0) fail("flushing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("writing", errno);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int e = errno;
    discard();
    throw Error(kExitDevice, "", "cannot move the new file over " + path_ + ": " + std::strerror(e));
  }
  committed_ = true;
  if (guard_) guard_->release();
  tmp_.clear();
}

void write_file_atomic(const std::string& path, const std::string& content, Symlinks links) {
  AtomicFile f(path, links);
  f.write(content.data(), content.size());
  f.commit();
}

AtomicFileBuf::AtomicFileBuf(AtomicFile& f) : file_(f), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }

AtomicFileBuf::~AtomicFileBuf() { sync(); }

bool AtomicFileBuf::drain() {
  const size_t n = (size_t)(pptr() - pbase());
  setp(buf_.data(), buf_.data() + buf_.size());
  return n == 0 || file_.write(buf_.data(), n);
}

AtomicFileBuf::int_type AtomicFileBuf::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int AtomicFileBuf::sync() { return drain() ? 0 : -1; }

std::streamsize AtomicFileBuf::xsputn(const char* s, std::streamsize n) {
  // large writes (the streaming JSON writer's 64 KiB chunks) go straight to the file
  if (n >= (std::streamsize)buf_.size()) return drain() && file_.write(s, (size_t)n) ? n : 0;
  return std::streambuf::xsputn(s, n);
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
  auto hex = [&o](const char* fmt, unsigned c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, fmt, c);
    o += buf;
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    if (c < 0x80) {
      if (c == '\n') o += "\\n";
      else if (c == '\t') o += "\\t";
      else if (c == '\r') o += "\\r";
      else if (c < 0x20 || c == 0x7f) hex("\\x%02x", c);
      else o += (char)c;
      ++i;
      continue;
    }
    // UTF-8: a whole, valid sequence is kept, but U+0080..U+009F (the C1 controls: 0xc2
    // 0x9b is CSI, as the raw byte 0x9b is to an 8-bit terminal) and any byte that starts
    // no valid sequence are escaped (issue 39)
    const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) valid = ((unsigned char)s[i + k] & 0xc0) == 0x80;
    if (valid && len == 3) {  // no overlong forms, no surrogates
      const unsigned char c1 = (unsigned char)s[i + 1];
      valid = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    }
    if (valid && len == 4) {
      const unsigned char c1 = (unsigned char)s[i + 1];
      valid = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!valid) {
      hex("\\x%02x", c);
      ++i;
    } else if (len == 2 && c == 0xc2 && (unsigned char)s[i + 1] <= 0x9f) {
      hex("\\u%04x", (unsigned char)s[i + 1]);
      i += 2;
    } else {
      o.append(s, i, len);
      i += len;
    }
  }
  return o;
}

std::string terminal_lines(const std::string& s, const std::string& indent) {
  std::string o;
  size_t pos = 0;
  std::string text = s;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (;;) {
    const size_t nl = text.find('\n', pos);
    o += terminal_safe(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    o += "\n" + indent;
    pos = nl + 1;
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

}  // namespace mlactl::cli
