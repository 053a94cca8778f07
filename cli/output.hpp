// Printers: one readable table, CSV, and the stable JSON envelope (docs/design.md §6;
// NVBench-style: schema_version, tool, argv).
#pragma once
#include <iosfwd>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text.hpp"

namespace mlactl::cli {

enum class Format { table, json, csv, svg, jsonl };  // jsonl: one JSON object per line, as they happen (check)
const char* to_string(Format f);

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_align;  // per column; numbers right-aligned
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void print(std::ostream& os, Format f) const;  // table or csv
};

// Key/value block for table output ("name: value" lines).
void print_kv(std::ostream& os, const std::vector<std::pair<std::string, std::string>>& kv);

// {"schema_version": 1, "tool": {...}, "argv": [...], "command": ...}
nlohmann::ordered_json json_envelope(const std::string& command);
// Pretty JSON text; bytes that are not UTF-8 become U+FFFD.
std::string json_text(const nlohmann::ordered_json& j);
// One document on stdout: pretty, or one line with --compact (cli/json_writer.hpp).
void print_json(std::ostream& os, const nlohmann::ordered_json& j);
// One-line JSON text (no newline inside), for JSON Lines; the same U+FFFD rule.
std::string json_line(const nlohmann::ordered_json& j);
// --compact (run_cli sets it): every document printed on stdout is one line.
void set_json_compact(bool compact);
bool json_compact();

// Writes `content` to `path` through a unique temporary file in the same folder and a
// rename, so an interrupted run never leaves a partial file that looks complete
// (docs/design.md §9). Replaces only a regular file: a symlink is written through
// (Symlinks::follow) or refused (Symlinks::refuse, for paths made inside a folder the
// user gave); a directory, device, FIFO or socket is refused (Error(kExitUsage)). A
// failed write throws Error(kExitDevice) naming the path and the reason.
enum class Symlinks { follow, refuse };
void write_file_atomic(const std::string& path, const std::string& content, Symlinks links = Symlinks::follow);

// The same rules for a file written as it goes (`--output FILE`): the constructor checks
// the path (exit 2) and makes the temporary file; commit() moves it over the path; a
// file never committed is removed. A write error is kept and thrown by commit()
// (Error(kExitDevice)).
class TempPathGuard;
class AtomicFile {
 public:
  AtomicFile(const std::string& path, Symlinks links = Symlinks::follow);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  bool write(const char* data, size_t n);  // false after a write error (commit() reports it)
  void commit();
  void discard();  // removes the temporary file; the path is left as it was
  const std::string& path() const { return path_; }

 private:
  std::string path_, target_, tmp_;
  int fd_ = -1;
  int error_ = 0;
  bool committed_ = false;
  std::unique_ptr<TempPathGuard> guard_;  // a signal removes the temporary file (cli/interrupt.hpp)
};

// A std::ostream's buffer over an AtomicFile (ctx.out under `--output FILE`).
class AtomicFileBuf : public std::streambuf {
 public:
  explicit AtomicFileBuf(AtomicFile& f);
  ~AtomicFileBuf() override;

 protected:
  int_type overflow(int_type c) override;
  int sync() override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  bool drain();
  AtomicFile& file_;
  std::vector<char> buf_;
};

// A name from a batch file made safe as one path component: letters, digits, '-', '_',
// '.' kept, everything else '_', no leading dot (no "..", no hidden file), at most 100
// bytes, "case" when empty. `--dump-dir` joins only such names.
std::string path_component(const std::string& name);

// A string from a file (a case name, a message quoting one) made safe for a terminal:
// control bytes become visible escapes (\n, \t, \x1b; the C1 controls as \u009b, a byte
// of no valid UTF-8 sequence as \x9b), so a name cannot move the cursor, colour the line
// or forge another line of the report.
std::string terminal_safe(const std::string& s);
// The same, keeping a multi-line message (an executor's stderr tail, a Python traceback)
// as lines: each line made safe, the lines after the first indented by `indent`.
std::string terminal_lines(const std::string& s, const std::string& indent);

std::string join_ints(const std::vector<int32_t>& v, size_t max_items = 32);
using mlactl::fmt_double;  // core/text.hpp

// Colour only on a terminal, never with NO_COLOR (docs/design.md §6).
struct Style {
  bool color = false;
  std::string red(const std::string& s) const { return color ? "\033[31m" + s + "\033[0m" : s; }
  std::string green(const std::string& s) const { return color ? "\033[32m" + s + "\033[0m" : s; }
  std::string yellow(const std::string& s) const { return color ? "\033[33m" + s + "\033[0m" : s; }
  std::string bold(const std::string& s) const { return color ? "\033[1m" + s + "\033[0m" : s; }
};

// The command line of this invocation (run_cli sets it): the JSON envelope and the
// repro lines print it.
void set_current_argv(const std::vector<std::string>& argv);
const std::vector<std::string>& current_argv();

}  // namespace mlactl::cli
