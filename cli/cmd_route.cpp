// `mlactl route`: which kernel the modelled stack picks and why, or the error it raises.
#include "cli/app.hpp"
#include "cli/common.hpp"
#include "core/routed.hpp"

namespace mlactl::cli {

nlohmann::ordered_json route_json(const RouteDecision& rd) {
  nlohmann::ordered_json j;
  j["route"] = to_string(rd.route);
  j["persistent_schedule"] = rd.persistent_schedule;
  j["padded_heads"] = rd.padded_heads;
  if (rd.backend.empty()) {
    j["aiter_rules"] = rd.aiter_rules;
    j["aiter_kernel"] = rd.aiter_kernel;
  } else {
    j["backend"] = rd.backend;  // vllm-cuda: vLLM's attention backend name
  }
  if (rd.route == Route::refused) {
    j["error_type"] = rd.error_type;
    j["error"] = rd.error;
  }
  auto chain = nlohmann::ordered_json::array();
  for (const auto& p : rd.chain) {
    // a predicate's truth is a JSON boolean (the table prints the same word)
    const nlohmann::ordered_json value = p.value == "true" ? nlohmann::ordered_json(true) : p.value == "false" ? nlohmann::ordered_json(false) : nlohmann::ordered_json(p.value);
    chain.push_back({{"name", p.name}, {"value", value}, {"why", p.why}});
  }
  j["chain"] = chain;
  j["findings"] = rd.findings;
  // upstream kernel faults the batch lands on (docs/known_faults.md), apart from the findings
  auto kf = nlohmann::ordered_json::array();
  for (const auto& w : rd.known_faults) kf.push_back({{"id", w.id}, {"warning", w.warning}, {"link", w.link}, {"state", w.state}});
  j["known_faults"] = kf;
  return j;
}

void setup_route(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto kernel = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("route", "which kernel the modelled stack routes the batch to, and why (or the error it raises): vLLM ROCm AITER, or vLLM CUDA on sm90");
  add_batch_options(sub, *opts);
  add_kernel_option(sub, *kernel);
  sub->callback([opts, kernel, &ctx]() {
    Batch b = load_batch(*opts);
    const RoutedBatch rb = route_batch(b, forced_route(*kernel));
    const RouteDecision& rd = rb.decision;
    auto& os = *ctx.out;
    if (ctx.global.fmt() == Format::json) {
      // the one route object every verb's JSON carries under "route" (docs/design.md §6)
      auto j = json_envelope("route");
      j["case"] = b.name;
      j["route"] = route_json(rd);
      print_json(os, j);
      return;
    }
    if (ctx.global.fmt() == Format::csv) {
      // one record per predicate of the chain, with the decision on every record
      Table t;
      // known_faults: every warning's line, "; "-joined (the decision's, so on every record)
      std::string faults;
      for (const auto& w : rd.known_faults) faults += (faults.empty() ? "" : "; ") + known_fault_text(w);
      t.header = {"case", "route", "error_type", "error", "padded_heads", "aiter_kernel", "backend", "known_faults", "step", "name", "value", "why"};
      for (size_t i = 0; i < rd.chain.size(); ++i)
        t.add({b.name, to_string(rd.route), rd.error_type, rd.error, std::to_string(rd.padded_heads), rd.aiter_kernel, rd.backend,
               faults, std::to_string(i + 1), rd.chain[i].name, rd.chain[i].value, rd.chain[i].why});
      t.print(os, Format::csv);
      return;
    }
    const Style st = ctx.global.style();
    if (ctx.global.quiet) {
      os << (rd.route == Route::refused ? "refused: " + rd.error_type + ": " + rd.error : std::string(to_string(rd.route))) << "\n";
      // the verdict alone on stdout; an upstream kernel fault still reaches the user (issue 38)
      for (const auto& w : rd.known_faults) *ctx.err << "warning: " << known_fault_text(w) << "\n";
      return;
    }
    std::vector<std::pair<std::string, std::string>> kv = {
        {"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)},
        {"route", rd.route == Route::refused ? st.red("refused") : st.bold(to_string(rd.route))},
    };
    if (rd.route == Route::refused) kv.push_back({"error", rd.error_type + ": " + rd.error});
    kv.push_back({"persistent schedule", rd.persistent_schedule ? "yes" : "no"});
    kv.push_back({"head padding", head_padding_text(rb.metadata.heads, rd)});  // worded as `metadata` words it
    if (!rd.aiter_rules.empty()) kv.push_back({"aiter rules", rd.aiter_rules});
    if (!rd.aiter_kernel.empty()) kv.push_back({"aiter kernel", rd.aiter_kernel});
    if (!rd.backend.empty()) kv.push_back({"backend", rd.backend});
    for (const auto& f : rd.findings) kv.push_back({"finding", st.yellow(f)});
    for (const auto& w : rd.known_faults) kv.push_back({"warning", st.yellow(known_fault_text(w))});
    print_kv(os, kv);
    os << "\n";
    Table t;
    t.header = {"#", "predicate", "value", "why"};
    t.right_align = {true, false, false, false};
    for (size_t i = 0; i < rd.chain.size(); ++i) t.add({std::to_string(i + 1), rd.chain[i].name, rd.chain[i].value, rd.chain[i].why});
    t.print(os, Format::table);
    // a refusal is an answer: exit 0 (docs/design.md §6)
  });
}

}  // namespace mlactl::cli
