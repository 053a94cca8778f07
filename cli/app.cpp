#include "cli/app.hpp"
#include "core/batch_parse.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/build_info.hpp"
#include "cli/interrupt.hpp"
#include "core/budget.hpp"
#include "core/suggest.hpp"
#include "core/stacks/registry.hpp"

namespace mlactl::cli {

Style GlobalOptions::style() const {
  Style s;
  if (color == "always") s.color = true;
  else if (color == "never") s.color = false;
  else s.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  return s;
}

void add_batch_options(CLI::App* sub, BatchOptions& o, bool file_required, bool with_stack) {
  auto* f = sub->add_option("batch", o.file, "batch file (schema 1); omit to describe the batch inline");
  if (file_required) f->required();
  auto g = sub->add_option_group("inline batch", "describe a batch on the command line instead of a file");
  g->add_option("--heads", o.heads, "model.num_heads");
  g->add_option("--qlen", o.qlen, "query_len of every request (default 1)");
  g->add_option("--context", o.context, "context lengths, comma-separated (one request each)");
  g->add_option("--padding", o.padding, "cudagraph padding slots appended (default 0)");
  if (with_stack)
    g->add_option("--stack", o.stack, "platform.stack: the serving stack the batch comes from (default vllm)")->check(CLI::IsMember({"vllm", "sglang"}));
  g->add_option("--arch", o.arch, "platform.arch: the hardware (gfx942, gfx950, sm90)")->check(CLI::IsMember({"gfx942", "gfx950", "sm90"}));
  g->add_option("--dtype", o.dtype, "model.dtype")->check(CLI::IsMember({"bf16", "fp16"}));
  g->add_option("--kv-dtype", o.kv_dtype, "kv_cache.dtype")->check(CLI::IsMember({"auto", "bf16", "fp16", "fp8"}));
  g->add_option("--block-size", o.block_size, "kv_cache.block_size");
  g->add_option("--layout", o.layout, "kv_cache.layout")->check(CLI::IsMember({"sequential", "shuffled"}));
  g->add_option("--num-cu", o.num_cu, "platform.num_cu");
  g->add_option("--mtp-qlen", o.mtp_qlen, "decode.mtp_qlen (K)");
  g->add_option("--small-head-mode", o.small_head_mode, "decode.small_head_mode")->check(CLI::IsMember({"auto", "gluon", "asm"}));
  g->add_flag("--non-causal", o.non_causal, "decode.causal = false (a draft block)");
  // each stack's own flag and names (vLLM: decode.attention_backend, SGLang:
  // sglang.attention_backend); the batch parser refuses a name its stack does not know,
  // naming the field
  sub->add_option("--attention-backend", o.attention_backend,
                  "force the serving stack's attention backend by its own name (vLLM on sm90: FLASHMLA, ...; SGLang: fa3, flashmla, flashinfer, triton, aiter, ...)");
  sub->add_option("--seed", o.seed, "data.seed");
  // One value per flag (repeat the flag for more): `--inject ID fixtures/a.json` must
  // leave the batch path to the positional, not swallow it as a second defect id.
  sub->add_option("--set", o.sets, "override a field: key.path=value (one per flag; repeat the flag)")->allow_extra_args(false);
  sub->add_option("--inject", o.inject, "switch a defect on (one per flag; repeat the flag; see `mlactl defects`)")->allow_extra_args(false);
}

nlohmann::json batch_document(const BatchOptions& o) {
  nlohmann::json doc;
  const bool inline_given = o.heads.has_value() || !o.context.empty();
  if (!o.file.empty()) {
    if (inline_given) throw Error(kExitUsage, "", "give a batch file or an inline batch (--heads/--context), not both");
    // they shape an inline batch's requests; a file lists its own (they were ignored in silence)
    if (o.qlen || o.padding)
      throw Error(kExitUsage, "", std::string(o.qlen ? "--qlen" : "--padding") +
                                      " shapes an inline batch's requests; a batch file gives each request's query_len and padding itself (edit its requests)");
    doc = load_json_document(o.file);  // missing, malformed, too deep, duplicate keys: exit 3
    // inline knobs may still adjust a file
  } else {
    if (!inline_given) throw Error(kExitUsage, "", "no batch: give a batch file, or --heads and --context for an inline batch");
    if (!o.heads) throw Error(kExitUsage, "", "an inline batch needs --heads");
    if (o.context.empty()) throw Error(kExitUsage, "", "an inline batch needs --context (e.g. --context 0,1,37,512)");
    // bounded before built (docs/design.md §9): --padding 100000000 was 10^8 JSON objects
    // (minutes, gigabytes) before the parser's request limit saw them
    const int64_t n_context = 1 + (int64_t)std::count(o.context.begin(), o.context.end(), ',');
    const int padding = o.padding.value_or(0);
    if (padding < 0) throw Error(kExitUsage, "", "--padding: must be >= 0, got " + std::to_string(padding));
    if (n_context + padding > kMaxBatchRequests)
      throw invalid_input("/requests", "has " + std::to_string(n_context + padding) + " requests (--context and --padding), more than " +
                                           std::to_string(kMaxBatchRequests));
    doc = {{"schema", 1}, {"name", "inline"}, {"model", {{"num_heads", *o.heads}}}};
    nlohmann::json reqs = nlohmann::json::array();
    std::stringstream ss(o.context);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      long long c = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != 0 || c < 0) throw Error(kExitUsage, "", "--context: \"" + item + "\" is not a non-negative integer");
      reqs.push_back({{"context_len", c}, {"query_len", o.qlen.value_or(1)}});
    }
    for (int i = 0; i < padding; ++i) reqs.push_back({{"padding", true}});
    doc["requests"] = reqs;
  }
  auto set = [&](const char* a, const char* b, const nlohmann::json& v) { doc[a][b] = v; };
  if (!o.arch.empty()) set("platform", "arch", o.arch);
  if (o.num_cu) set("platform", "num_cu", *o.num_cu);
  if (!o.dtype.empty()) set("model", "dtype", o.dtype);
  if (!o.kv_dtype.empty()) set("kv_cache", "dtype", o.kv_dtype);
  if (o.block_size) set("kv_cache", "block_size", *o.block_size);
  if (!o.layout.empty()) set("kv_cache", "layout", o.layout);
  if (o.mtp_qlen) set("decode", "mtp_qlen", *o.mtp_qlen);
  if (!o.small_head_mode.empty()) set("decode", "small_head_mode", o.small_head_mode);
  if (o.non_causal) set("decode", "causal", false);
  if (!o.stack.empty()) set("platform", "stack", o.stack);
  if (!o.attention_backend.empty()) {
    // the field the batch's serving stack reads it from (core/stack.hpp backend_field)
    const nlohmann::json* named = doc.contains("platform") && doc["platform"].is_object() && doc["platform"].contains("stack") ? &doc["platform"]["stack"] : nullptr;
    const std::string serving = named && named->is_string() ? named->get<std::string>() : "vllm";
    const std::string field = backend_field_of(serving);
    if (field.empty()) throw Error(kExitUsage, "", "--attention-backend: the " + serving + " stack has no attention-backend switch");
    doc[nlohmann::json::json_pointer(field)] = o.attention_backend;
  }
  if (o.seed) {
    // a number as a batch file would have it, bounded by the parser naming /data/seed
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(*o.seed);
    } catch (const std::exception&) {
    }
    if (!v.is_number()) throw Error(kExitUsage, "", "--seed: expects a whole number >= 0, got \"" + *o.seed + "\"");
    doc["data"]["seed"] = v;
  }
  for (const auto& s : o.sets) apply_set(doc, s);
  if (!o.inject.empty()) {
    if (!doc.contains("inject")) doc["inject"] = nlohmann::json::array();
    for (const auto& id : o.inject) doc["inject"].push_back(id);
  }
  return doc;
}

Batch load_batch(const BatchOptions& o) { return parse_batch(batch_document(o)); }

namespace {

// The formats each verb writes (docs/design.md §6): a verb that has no honest CSV (a
// nested report) or picture refuses the format with exit 2 instead of printing the
// table under another name.
struct VerbFormats {
  const char* verb;
  std::vector<Format> formats;
};
const std::vector<VerbFormats>& verb_formats() {
  static const std::vector<VerbFormats> v = {
      {"validate", {Format::table, Format::json}},
      {"schema", {Format::table, Format::json}},
      {"metadata", {Format::table, Format::json, Format::csv}},
      {"windows", {Format::table, Format::json, Format::csv, Format::svg}},
      {"route", {Format::table, Format::json, Format::csv}},
      {"schedule", {Format::table, Format::json, Format::csv, Format::svg}},
      {"run", {Format::table, Format::json}},
      {"check", {Format::table, Format::json, Format::jsonl}},
      {"defects", {Format::table, Format::json, Format::csv}},
      {"bench", {Format::table, Format::json, Format::csv}},
  };
  return v;
}

// Whether `verb` writes format f (an unknown verb writes none).
bool verb_writes(const std::string& verb, Format f) {
  for (const auto& vf : verb_formats())
    if (verb == vf.verb) return std::find(vf.formats.begin(), vf.formats.end(), f) != vf.formats.end();
  return false;
}

std::string version_text() {
  const BuildInfo& bi = build_info();
  std::string stacks;
  for (const Stack* s : all_stacks()) stacks += (stacks.empty() ? "" : ", ") + std::string(to_string(s->id())) + " (" + s->title() + ")";
  // the AITER rule sets platform.aiter selects, each with the upstream code it was read from
  std::string rules;
  for (AiterRules r : {AiterRules::r2026_08, AiterRules::r2026_08_pr4899})
    rules += (rules.empty() ? "" : ", ") + std::string(to_string(r)) + " (" + aiter_rules_commits(r) +
             (r == Batch{}.platform.aiter ? ", default" : "") + ")";
  // and the vLLM ROCm AITER rule sets platform.vllm selects
  std::string vllm;
  for (VllmRules r : {VllmRules::r1, VllmRules::r1_pr57642})
    vllm += (vllm.empty() ? "" : ", ") + std::string(to_string(r)) + " (" + vllm_rules_commits(r) + (r == Batch{}.platform.vllm ? ", default" : "") + ")";
  return std::string("mlactl ") + bi.version + "\ncommit:   " + bi.commit + "\nbackends: " + bi.backends + "\nstacks:   " + stacks +
         "\naiter:    " + rules + "\nvllm:     " + vllm;
}

// "did you mean" (unknown subcommands and options): core/suggest.hpp
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& names) { return nearest_name(word, names); }

// Long option names of an app and its option groups ("--heads", ...).
void collect_options(const CLI::App* app, std::vector<std::string>& names) {
  for (const CLI::Option* o : app->get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  for (const CLI::App* g : app->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) collect_options(g, names);
}

// An app's option names: long ones (its option groups' too) and short ones, for the scan below.
std::vector<std::string> own_option_names(const CLI::App* app) {
  std::vector<std::string> names;
  collect_options(app, names);
  for (const CLI::Option* o : app->get_options())
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  return names;
}

// A verb's option written before the verb (`mlactl --backend cpu run f.json`): CLI11
// would take its value for the verb ("unknown command \"cpu\""). Global options go
// before or after the verb; a verb's own option is named with where it goes.
std::optional<std::string> option_before_verb(const CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<std::string> globals = own_option_names(&app);
  const auto verbs = app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); });
  auto is_verb = [&](const std::string& w) {
    return std::any_of(verbs.begin(), verbs.end(), [&](const CLI::App* v) { return v->get_name() == w; });
  };
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.size() < 2 || a[0] != '-' || is_verb(a)) return std::nullopt;  // the verb (or a word) comes first
    const std::string name = a.substr(0, a.find('='));
    if (std::find(globals.begin(), globals.end(), name) != globals.end()) {
      const CLI::Option* g = app.get_option_no_throw(name);
      if (g && g->get_expected_min() > 0 && a.find('=') == std::string::npos) ++i;  // its value
      continue;
    }
    std::vector<std::string> owners;
    for (const CLI::App* v : verbs) {
      const auto names = own_option_names(v);
      if (std::find(names.begin(), names.end(), name) != names.end()) owners.push_back(v->get_name());
    }
    if (owners.empty()) return std::nullopt;  // unknown everywhere: the parser's message (with "did you mean")
    std::string verb;
    for (size_t j = i + 1; j < args.size() && verb.empty(); ++j)
      if (is_verb(args[j])) verb = args[j];
    if (!verb.empty() && std::find(owners.begin(), owners.end(), verb) != owners.end())
      return name + " is an option of " + verb + ", not a global option; put it after the verb: mlactl " + verb + " " + name + " ...";
    std::string list;
    for (size_t k = 0; k < owners.size(); ++k) list += (k == 0 ? "" : k + 1 == owners.size() ? " and " : ", ") + owners[k];
    return name + " is an option of " + list + ", not a global option; put it after the verb" +
           (verb.empty() ? std::string() : " (`" + verb + "` has no " + name + ")");
  }
  return std::nullopt;
}

// Global options that take a value, so the scan for the subcommand word skips it.
bool global_takes_value(const std::string& a) { return a == "--format" || a == "--color" || a == "--max-memory" || a == "--output" || a == "-o"; }

// The first word that is not a global option (or its value): the subcommand, or a typo of one.
std::optional<std::string> subcommand_word(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return std::nullopt;
    if (!a.empty() && a[0] == '-') {
      if (global_takes_value(a)) ++i;
      continue;
    }
    return a;
  }
  return std::nullopt;
}

// --format json given on the command line (for errors raised before or while parsing).
// The JSON format asked for on the command line, read before parsing (a usage error is
// reported in it too): json, jsonl, or none.
std::optional<Format> json_requested(const std::vector<std::string>& args) {
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "--format" && (args[i + 1] == "json" || args[i + 1] == "jsonl")) return args[i + 1] == "json" ? Format::json : Format::jsonl;
  for (const auto& a : args)
    if (a == "--format=json" || a == "--format=jsonl") return a == "--format=json" ? Format::json : Format::jsonl;
  return std::nullopt;
}

}  // namespace

void build_app(CLI::App& app, Context& ctx) {
  app.description(
      "mlactl: MLA decode metadata, routing and kernel checker (models vLLM's ROCm AITER MLA backend, and vLLM's CUDA MLA backends on sm90).\n"
      "Every printed range is half-open [begin, end).");
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--format", ctx.global.format, "output format (csv and svg where the command has them)")
      ->check(CLI::IsMember({"table", "json", "csv", "svg", "jsonl"}))
      ->capture_default_str();
  app.add_option("--color", ctx.global.color, "colour: auto (a terminal, unless NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_flag("-v,--verbose", ctx.global.verbose, "more detail on stderr (repeatable)");
  app.add_flag("-q,--quiet", ctx.global.quiet, "only the verdict line on stdout; only errors on stderr");
  app.add_flag("--compact", ctx.global.compact, "with --format json: each JSON document on one line, no indentation (for machines)");
  app.add_option("-o,--output", ctx.global.output,
                 "write the report (what stdout would get) to FILE: a temporary file in its folder, renamed over FILE at the end; only a "
                 "regular file is replaced (a symlink is written through; a directory, device or FIFO is refused); a write error is exit 4")
      ->type_name("FILE");
  app.add_option("--max-memory", ctx.global.max_memory, "memory budget: batches needing more are refused (exit 3) [4G]")
      ->each([](const std::string& v) { set_memory_budget(parse_bytes(v)); });
  setup_validate(app, ctx);
  setup_schema(app, ctx);
  setup_metadata(app, ctx);
  setup_windows(app, ctx);
  setup_route(app, ctx);
  setup_schedule(app, ctx);
  setup_run(app, ctx);
  setup_check(app, ctx);
  setup_defects(app, ctx);
  setup_bench(app, ctx);
  app.name("mlactl");  // usage lines name the program ("Usage: mlactl run [OPTIONS] [batch]")
  // each verb's --help lists the global options too: they go before or after the verb
  std::string globals = "Global options (before or after the verb):\n";
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name(false, true);
    if (name == "-h,--help" || name == "--version") continue;
    std::string type = o->get_type_name();
    if (type.rfind("TEXT:", 0) == 0) type = type.substr(5);  // "TEXT:{table,json,...}": the choices say it
    const std::string shown = name + (o->get_expected_min() > 0 ? " " + (type.empty() ? std::string("TEXT") : type) : "");
    globals += "  " + shown + std::string(shown.size() < 28 ? 28 - shown.size() : 1, ' ') + o->get_description() + "\n";
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); })) sub->footer(globals);
  // after parsing, before the verb runs: refuse a format the verb does not write
  app.parse_complete_callback([&app, &ctx]() {
    const auto subs = app.get_subcommands();
    if (subs.empty()) return;
    const std::string verb = subs.front()->get_name();
    const Format f = ctx.global.fmt();
    for (const auto& vf : verb_formats()) {
      if (verb != vf.verb || std::find(vf.formats.begin(), vf.formats.end(), f) != vf.formats.end()) continue;
      std::string have;
      for (Format x : vf.formats) have += (have.empty() ? "" : ", ") + std::string(to_string(x));
      throw Error(kExitUsage, "", "`" + verb + "` has no --format " + to_string(f) + " output (it writes " + have + ")");
    }
    if (ctx.global.compact && f != Format::json) throw Error(kExitUsage, "", "--compact applies to --format json (JSON on one line)");
    set_json_compact(ctx.global.compact);
    // the verb's report goes to the file from here on (checked now: a directory or a
    // device is refused before the verb runs)
    if (!ctx.global.output.empty() && ctx.global.output != "-") {
      ctx.output_file = std::make_unique<AtomicFile>(ctx.global.output);
      ctx.output_buf = std::make_unique<AtomicFileBuf>(*ctx.output_file);
      ctx.output_stream = std::make_unique<std::ostream>(ctx.output_buf.get());
      ctx.out = ctx.output_stream.get();
    }
  });
}

namespace {
// An error as JSON on stdout when --format json (or jsonl: one line, "type": "error") was
// asked for (docs/design.md §6): a script reading stdout sees the same envelope whatever
// happened.
// A verb that does not write JSON Lines prints no error in them either (stdout stays empty).
// Returns whether it wrote a document (so --output knows whether FILE gets one).
bool print_error_json(std::ostream& out, Format f, const std::string& command, int exit_code, const std::string& kind, const std::string& message) {
  if (f != Format::json && f != Format::jsonl) return false;
  if (f == Format::jsonl && !verb_writes(command, Format::jsonl)) return false;
  nlohmann::ordered_json j;
  if (f == Format::jsonl) j["type"] = "error";
  j.update(json_envelope(command));
  j["status"] = kind;
  j["exit_code"] = exit_code;
  j["error"] = message;
  if (f == Format::jsonl) out << json_line(j) << "\n";
  else print_json(out, j);
  return true;
}

// --output FILE: the report is moved over FILE when it is whole (the verb finished, or
// an error was written as a JSON document); otherwise FILE is left as it was. A write
// error is exit 4 (docs/design.md §9).
int finish_output(Context& ctx, std::ostream& err, int exit_code, bool report_written) {
  if (!ctx.output_file) {
    // a report that could not be written is no success (issue 39: `metadata > /dev/full`
    // printed nothing and exited 0); exit 4, as a failed -o write is
    ctx.out->flush();
    if (!ctx.out->good()) {
      err << "mlactl: error: standard output: the report could not be written (" << std::strerror(errno ? errno : EIO) << ")\n";
      ctx.out->clear();
      return exit_code == 0 ? kExitDevice : exit_code;
    }
    return exit_code;
  }
  ctx.output_stream->flush();
  if (!report_written) {
    ctx.output_file->discard();
    return exit_code;
  }
  try {
    if (ctx.output_stream->bad()) ctx.output_stream->clear();
    ctx.output_file->commit();
  } catch (const Error& e) {
    err << "mlactl: error: " << terminal_safe(e.what()) << "\n";
    return e.exit_code();
  }
  return exit_code;
}
}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // every verb: a signal removes the temporary files (-o, --junit, dumps) before the
  // process ends; `check` defers them to stop between cases (cli/interrupt.hpp)
  InterruptScope interrupts;
  set_current_argv(args);
  set_memory_budget(kDefaultMemoryBudget);
  set_json_compact(false);
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  CLI::App app{"mlactl"};
  build_app(app, ctx);
  std::vector<std::string> verbs;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); })) verbs.push_back(s->get_name());
  const std::optional<Format> json_errors = json_requested(args);
  auto usage_error = [&](const std::string& command, const std::string& message, const std::string& hint) {
    err << "mlactl: " << terminal_safe(message) << "\n" << hint;
    if (json_errors) print_error_json(out, *json_errors, command, kExitUsage, "usage error", message);
    if (ctx.output_file) ctx.output_file->discard();  // FILE is left as it was
    return kExitUsage;
  };
  if (const auto misplaced = option_before_verb(app, args)) return usage_error("", *misplaced, "Run 'mlactl --help' for the global options.\n");
  if (const auto word = subcommand_word(args); word && std::find(verbs.begin(), verbs.end(), *word) == verbs.end()) {
    const auto near = nearest(*word, verbs);
    return usage_error("", "unknown command \"" + *word + "\"" + (near ? "; did you mean \"" + *near + "\"?" : ""),
                       "Run 'mlactl --help' for the commands.\n");
  }
  std::vector<std::string> rev(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));
  const auto command = [&]() -> std::string { return app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name(); };
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (100-127) are remapped to 2 (docs/design.md §6)
    std::string message = e.what();
    const CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
    std::vector<std::string> names;
    collect_options(&app, names);
    if (sub) collect_options(sub, names);
    for (const auto& a : args) {
      if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
      const std::string name = a.substr(0, a.find('='));
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      if (const auto near = nearest(name, names)) message += "; did you mean " + *near + "?";
      break;
    }
    return usage_error(command(), message,
                       sub ? "Run 'mlactl " + sub->get_name() + " --help' for its options.\n" : "Run 'mlactl --help' for the commands.\n");
  } catch (const Error& e) {
    err << "mlactl: error: " << terminal_lines(e.what(), "  ") << "\n";  // messages quote file-supplied strings
    const bool wrote = print_error_json(*ctx.out, ctx.global.fmt(), command(), e.exit_code(), e.exit_code() == kExitUsage ? "usage error" : e.exit_code() == kExitInvalidInput ? "invalid input"
                                                                                     : e.exit_code() == kExitRefused ? "refused"
                                                                                     : e.exit_code() == kExitSkipped ? "skipped" : "error",
                     e.what());
    return finish_output(ctx, err, e.exit_code(), wrote);
  } catch (const std::bad_alloc&) {
    err << "mlactl: error: out of memory (raise --max-memory only if the machine has it)\n";
    const bool wrote = print_error_json(*ctx.out, ctx.global.fmt(), command(), kExitInvalidInput, "invalid input", "out of memory");
    return finish_output(ctx, err, kExitInvalidInput, wrote);
  } catch (const std::exception& e) {
    err << "mlactl: internal error: " << terminal_safe(e.what()) << "\n";
    const bool wrote = print_error_json(*ctx.out, ctx.global.fmt(), command(), kExitDevice, "error", std::string("internal error: ") + e.what());
    return finish_output(ctx, err, kExitDevice, wrote);
  }
  return finish_output(ctx, err, ctx.exit_code, true);
}

}  // namespace mlactl::cli
