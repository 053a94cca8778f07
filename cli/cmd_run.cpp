// `mlactl run`: route, plan, audit positions, execute, compare with the reference.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/pipeline.hpp"
#include "cli/progress.hpp"

namespace mlactl::cli {

namespace {
std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:") == std::string::npos) return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}
}  // namespace

std::string repro_command() {
  std::string s = "mlactl";
  const auto& argv = current_argv();
  for (size_t i = 1; i < argv.size(); ++i) s += " " + shell_quote(argv[i]);
  return s;
}

namespace {
// The run options as parsed: ids as the user spelled them, turned into types once parsed.
struct RunArgs {
  RunOptions o;
  std::string backend = "auto", kernel, planner;
  ExecutorArgs exec;
  std::string probe;
  RunOptions resolved() const {
    RunOptions r = o;
    if (!probe.empty()) r.probe = probe_kind_from_string(probe);
    r.external = exec.spec();
    r.backend = *backend_from_string(backend);
    r.kernel = forced_route(kernel);
    r.planner = planner_option(planner);
    return r;
  }
};

void add_run_options(CLI::App* sub, RunArgs& a) {
  RunOptions& o = a.o;
  sub->add_option("--backend", a.backend, "executor: auto (GPU when present), cpu, gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  add_kernel_option(sub, a.kernel);
  sub->add_option("--planner", a.planner, "plan with this planner instead of the route's")->check(CLI::IsMember(planner_names()));
  sub->add_flag("--cross-check", o.cross_check, "also run the CPU executor on the same work list and diff it with the GPU's");
  auto* uc = sub->add_flag("--use-captured", o.use_captured, "require captured arrays (the default executes them when the batch has any)");
  sub->add_flag("--own-metadata", o.own_metadata, "execute mlactl's own metadata and plan even when the batch carries captured arrays")->excludes(uc);
  // a tolerance is a finite number >= 0: NaN, a negative value or a word is a usage error,
  // not a verdict (NaN made every comparison false)
  const auto tolerance = CLI::Validator(
      [](std::string& v) {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != 0 || !std::isfinite(d) || d < 0) return "must be a finite number >= 0, got \"" + v + "\"";
        return std::string();
      },
      "TOLERANCE");
  sub->add_option("--atol", o.atol, "absolute tolerance (overrides the dtype default)")->check(tolerance);
  sub->add_option("--rtol", o.rtol, "relative tolerance")->check(tolerance);
  sub->add_option("--cos-tol", o.cos_tol, "global cosine-diff tolerance")->check(tolerance);
  sub->add_option("--threads", o.threads, "CPU threads (0 = all cores)");
  sub->add_option("--dump-dir", o.dump_dir, "write inputs/outputs of a failing case here (.npy + JSON)");
  add_executor_options(sub, a.exec);
  auto* inputs = sub->add_option("--inputs", o.inputs_dir,
                                 "run q and the KV blocks a capture wrote to this folder (inputs.json + .npy, scripts/capture_vllm_batch.py) "
                                 "instead of tensors generated from data.seed");
  sub->add_option("--probe", a.probe,
                  "windows: black-box position probe; q and KV are built so that each head shows whether one window edge was read "
                  "(first/last allowed, first forbidden or the slot past the end, page and split edges; control heads first), "
                  "for any executor; the ordinary random-input comparison runs as well")
      ->check(CLI::IsMember({"windows"}))
      ->excludes(inputs);  // the probe writes its own q and KV
}
}  // namespace

void setup_run(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto ro = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand("run", "run the routed kernel's work list (CPU or GPU) and diff it with the Eigen reference");
  add_batch_options(sub, *opts);
  add_run_options(sub, *ro);
  sub->callback([opts, ro, &ctx]() {
    Batch b = load_batch(*opts);
    RunOptions ropt = ro->resolved();
    // a long run (a large batch's reference takes seconds) shows its stage on a terminal
    ProgressLine progress(*ctx.err, "mlactl run", progress_allowed(*ctx.err, ctx.global.quiet));
    ropt.on_stage = [&progress](RunStage s) {
      progress.set("[" + std::to_string(int(s) + 1) + "/" + std::to_string(kRunStages) + "] " + to_string(s));
    };
    RunOutcome o = run_pipeline(b, ropt);
    progress.finish();
    ctx.exit_code = o.exit_code;
    if (ctx.global.verbose)
      *ctx.err << "run: time (ms): metadata " << fmt_double(o.ms_metadata, 3) << ", plan+audit " << fmt_double(o.ms_plan, 3) << ", inputs "
               << fmt_double(o.ms_inputs, 3) << ", reference " << fmt_double(o.ms_reference, 3) << ", executor " << fmt_double(o.ms_execute, 3)
               << ", compare " << fmt_double(o.ms_compare, 3) << "\n";
    if (ctx.global.fmt() == Format::json) {
      auto j = json_envelope("run");
      j["case"] = b.name;
      const auto part = outcome_json(o);
      for (auto it = part.begin(); it != part.end(); ++it) j[it.key()] = it.value();
      if (o.exit_code == kExitVerifyFailed) j["repro"] = repro_command();
      print_json(*ctx.out, j);
    } else if (ctx.global.quiet) {
      // the verdict line: status and why
      *ctx.out << to_string(o.status) << (o.message.empty() ? "" : ": " + terminal_safe(o.message)) << "\n";  // one line, escaped
      for (const auto& w : o.route.known_faults) *ctx.err << "warning: " << known_fault_text(w) << "\n";
    } else {
      print_outcome(*ctx.out, b, o, ctx.global.style().color, ctx.global.verbose);
      if (o.exit_code == kExitVerifyFailed) *ctx.out << "\nrepro: " << repro_command() << "\n";
    }
    if (o.status == RunStatus::refused && !ctx.global.quiet) *ctx.err << "mlactl: refused: " << terminal_lines(o.message, "  ") << "\n";
    if (o.status == RunStatus::skipped && !ctx.global.quiet) *ctx.err << "mlactl: skipped: " << terminal_lines(o.message, "  ") << "\n";  // it may quote result.json
    if (o.status == RunStatus::failed) *ctx.err << "mlactl: error: " << terminal_lines(o.message, "  ") << "\n";
  });
}

}  // namespace mlactl::cli
