#include "cli/app.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/budget.hpp"

namespace mlactl::cli {

Style GlobalOptions::style() const {
  Style s;
  if (color == "always") s.color = true;
  else if (color == "never") s.color = false;
  else s.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  return s;
}

void add_batch_options(CLI::App* sub, BatchOptions& o, bool file_required) {
  auto* f = sub->add_option("batch", o.file, "batch file (schema 1); omit to describe the batch inline");
  if (file_required) f->required();
  auto g = sub->add_option_group("inline batch", "describe a batch on the command line instead of a file");
  g->add_option("--heads", o.heads, "model.num_heads");
  g->add_option("--qlen", o.qlen, "query_len of every request")->capture_default_str();
  g->add_option("--context", o.context, "context lengths, comma-separated (one request each)");
  g->add_option("--padding", o.padding, "cudagraph padding slots appended");
  g->add_option("--arch", o.arch, "platform.arch (sm90 selects vLLM's CUDA stack)")->check(CLI::IsMember({"gfx942", "gfx950", "sm90"}));
  g->add_option("--dtype", o.dtype, "model.dtype")->check(CLI::IsMember({"bf16", "fp16"}));
  g->add_option("--kv-dtype", o.kv_dtype, "kv_cache.dtype")->check(CLI::IsMember({"auto", "bf16", "fp16", "fp8"}));
  g->add_option("--block-size", o.block_size, "kv_cache.block_size");
  g->add_option("--layout", o.layout, "kv_cache.layout")->check(CLI::IsMember({"sequential", "shuffled"}));
  g->add_option("--num-cu", o.num_cu, "platform.num_cu");
  g->add_option("--mtp-qlen", o.mtp_qlen, "decode.mtp_qlen (K)");
  g->add_option("--small-head-mode", o.small_head_mode, "decode.small_head_mode")->check(CLI::IsMember({"auto", "gluon", "asm"}));
  g->add_flag("--non-causal", o.non_causal, "decode.causal = false (a draft block)");
  // vLLM's own flag and names; the batch parser refuses it off sm90 naming the field
  sub->add_option("--attention-backend", o.attention_backend, "decode.attention_backend: force a vLLM CUDA backend (sm90)")
      ->check(CLI::IsMember({"FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", "FLASHMLA_SPARSE", "FLASHINFER_MLA", "CUTLASS_MLA"}));
  sub->add_option("--seed", o.seed, "data.seed");
  sub->add_option("--set", o.sets, "override a field: key.path=value (repeatable)");
  sub->add_option("--inject", o.inject, "switch a defect on (repeatable; see `mlactl defects`)");
}

nlohmann::json batch_document(const BatchOptions& o) {
  nlohmann::json doc;
  const bool inline_given = o.heads.has_value() || !o.context.empty();
  if (!o.file.empty()) {
    if (inline_given) throw Error(kExitUsage, "", "give a batch file or an inline batch (--heads/--context), not both");
    doc = load_json_document(o.file);  // missing, malformed, too deep, duplicate keys: exit 3
    // inline knobs may still adjust a file
  } else {
    if (!inline_given) throw Error(kExitUsage, "", "no batch: give a batch file, or --heads and --context for an inline batch");
    if (!o.heads) throw Error(kExitUsage, "", "an inline batch needs --heads");
    if (o.context.empty()) throw Error(kExitUsage, "", "an inline batch needs --context (e.g. --context 0,1,37,512)");
    doc = {{"schema", 1}, {"name", "inline"}, {"model", {{"num_heads", *o.heads}}}};
    nlohmann::json reqs = nlohmann::json::array();
    std::stringstream ss(o.context);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      long long c = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != 0 || c < 0) throw Error(kExitUsage, "", "--context: \"" + item + "\" is not a non-negative integer");
      reqs.push_back({{"context_len", c}, {"query_len", o.qlen}});
    }
    for (int i = 0; i < o.padding; ++i) reqs.push_back({{"padding", true}});
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
  if (!o.attention_backend.empty()) set("decode", "attention_backend", o.attention_backend);
  if (o.seed) doc["data"]["seed"] = *o.seed;
  for (const auto& s : o.sets) apply_set(doc, s);
  if (!o.inject.empty()) {
    if (!doc.contains("inject")) doc["inject"] = nlohmann::json::array();
    for (const auto& id : o.inject) doc["inject"].push_back(id);
  }
  return doc;
}

Batch load_batch(const BatchOptions& o) { return parse_batch(batch_document(o)); }

void build_app(CLI::App& app, Context& ctx) {
  app.description(
      "mlactl: MLA decode metadata, routing and kernel checker (models vLLM's ROCm AITER MLA backend, and vLLM's CUDA MLA backends on sm90).\n"
      "Every printed range is half-open [begin, end).");
  app.set_version_flag("--version", std::string("mlactl ") + MLACTL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--format", ctx.global.format, "output format")->check(CLI::IsMember({"table", "json", "csv"}))->capture_default_str();
  app.add_option("--color", ctx.global.color, "colour: auto (a terminal, unless NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_flag("-v,--verbose", ctx.global.verbose, "more detail on stderr (repeatable)");
  app.add_flag("-q,--quiet", ctx.global.quiet, "only errors on stderr");
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
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  set_current_argv(args);
  set_memory_budget(kDefaultMemoryBudget);
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  CLI::App app{"mlactl"};
  build_app(app, ctx);
  std::vector<std::string> rev(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));
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
    err << "mlactl: " << e.what() << "\n";
    if (app.get_subcommands().empty()) err << "Run 'mlactl --help' for the commands.\n";
    else err << "Run 'mlactl " << app.get_subcommands().front()->get_name() << " --help' for its options.\n";
    return kExitUsage;
  } catch (const Error& e) {
    err << "mlactl: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    err << "mlactl: error: out of memory (raise --max-memory only if the machine has it)\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    err << "mlactl: internal error: " << e.what() << "\n";
    return kExitDevice;
  }
  return ctx.exit_code;
}

}  // namespace mlactl::cli
