// `mlactl validate`: strict schema check; prints the resolved batch.
#include "cli/app.hpp"
#include "core/captured.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "core/stacks/registry.hpp"

namespace mlactl::cli {

void setup_validate(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto* sub = app.add_subcommand("validate", "check a batch file against schema 1 and print what it resolves to");
  add_batch_options(sub, *opts);
  sub->callback([opts, &ctx]() {
    Batch b = load_batch(*opts);
    // captured arrays checked as a plan of this batch, as `run` checks them before it runs
    // (docs/design.md §2 captured): a capture `run` refuses is not valid here either (issue 39)
    if (!b.captured.is_null()) {
      const std::vector<RowWindow> rows = oracle_windows(b);
      const CapturedMetadata cap = parse_captured(b, b.captured, (int64_t)rows.size());
      const RoutedBatch rb = route_batch(b);
      try {
        if (!rb.refused()) (void)plan_captured(b, rb, rows, cap);  // the work list, bounded (validate_captured_work)
      } catch (const Error& e) {
        if (e.exit_code() != kExitRefused) throw;  // a route modelled only up to routing: `run` refuses it (exit 5)
      }
    }
    auto& os = *ctx.out;
    if (ctx.global.fmt() == Format::json) {
      auto j = json_envelope("validate");
      j["case"] = b.name;
      j["valid"] = true;
      j["batch"] = batch_to_json(b);
      print_json(os, j);
      return;
    }
    if (ctx.global.quiet) {
      os << "valid\n";
      return;
    }
    int64_t rows = 0;
    for (const auto& w : oracle_windows(b)) rows += w.kind == MaskKind::padding ? 0 : 1;
    std::vector<std::pair<std::string, std::string>> kv = {
        {"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)},
        {"status", "valid"},
        {"platform", stack_for(b).platform_text(b)},
        {"model", std::to_string(b.model.num_heads) + " heads, " + to_string(b.model.dtype) + ", head_dim " + std::to_string(b.head_dim()) +
                      ", softmax_scale " + fmt_double(b.model.softmax_scale, 6)},
        {"kv_cache", std::string(to_string(b.kv_cache.dtype)) + (b.kv_cache.dtype_auto ? " (auto)" : "") +
                         (b.kv_cache.dtype == DType::fp8 ? std::string(" ") + to_string(b.fp8_flavor()) : "") + ", block_size " +
                         std::to_string(b.kv_cache.block_size) + ", " + std::to_string(b.kv_cache.num_blocks) + " blocks" +
                         (b.kv_cache.explicit_block_table ? " (explicit table)" : std::string(", ") + to_string(b.kv_cache.layout))},
        {"decode", std::string(b.decode.causal ? "causal" : "non-causal") + ", K " + std::to_string(b.decode.mtp_qlen) + ", q " +
                       to_string(b.decode.q_dtype) + ", " + std::to_string(b.decode.num_decode_tokens) + " decode tokens, mode " +
                       to_string(b.decode.small_head_mode)},
        {"requests", std::to_string(b.requests.size()) + " (" + std::to_string(b.num_padding()) + " padding), " + std::to_string(rows) +
                         " query rows, max seq_len " + std::to_string(b.max_seq_len())},
    };
    if (b.sparse) kv.push_back({"sparse", "topk " + std::to_string(b.sparse->topk) + (b.sparse->geometry == SparseGeometry::rope ? ", rope" : ", rope_free") +
                                              (b.sparse->random_indices ? ", random indices" : ", explicit indices")});
    if (!b.inject.empty()) {
      std::string s;
      for (const auto& d : b.inject) s += (s.empty() ? "" : ", ") + d;
      kv.push_back({"inject", s});
    }
    print_kv(os, kv);
  });
}

}  // namespace mlactl::cli
