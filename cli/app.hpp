// The CLI application: build_app() wires one setup_<verb> per subcommand
// (CLI11, one file per subcommand); run_cli() maps everything to exit codes.
#pragma once
#include <iosfwd>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/output.hpp"
#include "cli/run_cli.hpp"
#include "core/batch.hpp"

namespace mlactl::cli {

struct GlobalOptions {
  std::string format = "table";
  std::string color = "auto";
  int verbose = 0;
  bool quiet = false;
  bool compact = false;  // --compact: JSON on one line
  std::string output;    // --output FILE ("" or "-": stdout)
  std::string max_memory;
  Format fmt() const {
    return format == "json" ? Format::json : format == "jsonl" ? Format::jsonl : format == "csv" ? Format::csv : format == "svg" ? Format::svg : Format::table;
  }
  Style style() const;
};

// A batch from a file, or inline (`--heads 12 --qlen 8 --context 0,1,37,512 --padding 1`),
// plus `--set key.path=value` overrides and `--inject ID`.
struct BatchOptions {
  std::string file;
  std::optional<int> heads;  // not given; a 0 is a value vLLM rejects (exit 3), not "absent"
  // inline batch only: given with a batch file they are an error, never ignored
  std::optional<int> qlen;     // query_len of every request (default 1)
  std::string context;         // comma-separated context lengths
  std::optional<int> padding;  // padding slots appended (default 0)
  std::string stack, arch, dtype, kv_dtype, layout, small_head_mode, attention_backend;
  // Given or not (a 0 must reach the parser and be refused naming the field, not
  // read as "not given").
  std::optional<int> block_size, num_cu, mtp_qlen;
  bool non_causal = false;
  std::optional<std::string> seed;  // as typed: the parser bounds it (CLI11 clamped 1e20 to int64's max)
  std::vector<std::string> sets;
  std::vector<std::string> inject;
};
// `with_stack`: add --stack (a verb that reads --stack itself, as `schedule`'s comparison, passes false)
void add_batch_options(CLI::App* sub, BatchOptions& o, bool file_required = false, bool with_stack = true);
nlohmann::json batch_document(const BatchOptions& o);  // raw document after --set / --inject
Batch load_batch(const BatchOptions& o);

struct Context {
  GlobalOptions global;
  int exit_code = 0;
  std::ostream* out = nullptr;  // stdout, or the --output file
  std::ostream* err = nullptr;
  // --output FILE: the report goes to a temporary file renamed over FILE at the end
  std::unique_ptr<AtomicFile> output_file;
  std::unique_ptr<AtomicFileBuf> output_buf;
  std::unique_ptr<std::ostream> output_stream;
};

// subcommands
void setup_validate(CLI::App& app, Context& ctx);
void setup_schema(CLI::App& app, Context& ctx);
void setup_metadata(CLI::App& app, Context& ctx);
void setup_windows(CLI::App& app, Context& ctx);
void setup_route(CLI::App& app, Context& ctx);
void setup_schedule(CLI::App& app, Context& ctx);
void setup_run(CLI::App& app, Context& ctx);
void setup_check(CLI::App& app, Context& ctx);
void setup_defects(CLI::App&, Context&);
void setup_bench(CLI::App&, Context&);

void build_app(CLI::App& app, Context& ctx);

}  // namespace mlactl::cli
