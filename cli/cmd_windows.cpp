// `mlactl windows`: per query row, the oracle KV window and the window the routed
// kernel's metadata gives it, with a mismatch flag (seed 000's symptom).
#include <optional>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/windows_svg.hpp"
#include "core/stacks/registry.hpp"
#include "core/captured.hpp"
#include "core/kernel_windows.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"

namespace mlactl::cli {

namespace {
// Sorted distinct positions as half-open ranges: {0..299, 300, 302} -> [0, 301) [302, 303).
std::vector<std::pair<int64_t, int64_t>> position_ranges(const std::vector<int64_t>& positions) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t p : positions) {
    if (!out.empty() && out.back().second == p) ++out.back().second;
    else out.push_back({p, p + 1});
  }
  return out;
}
}  // namespace

void setup_windows(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto* sub = app.add_subcommand("windows", "per query row: oracle KV window [begin, end) vs the window the routed kernel's metadata gives");
  add_batch_options(sub, *opts);
  auto kernel = std::make_shared<std::string>();
  add_kernel_option(sub, *kernel);
  sub->callback([opts, kernel, &ctx]() {
    Batch b = load_batch(*opts);
    const RoutedBatch rb = route_batch(b, forced_route(*kernel));
    const RouteDecision& rd = rb.decision;
    const DecodeMetadata& md = rb.metadata;
    auto rows = oracle_windows(b);
    MetadataWindows mw = rb.stack->metadata_windows(b, md, rd.route, rows);
    // captured arrays (docs/design.md §2): the windows the real run's index pointers gave
    std::optional<CapturedDiff> cdiff;
    if (!b.captured.is_null()) {
      CapturedMetadata cap = parse_captured(b, b.captured, (int64_t)rows.size());
      // a captured work list or stack array is compared with the route's plan: never skipped
      std::optional<RoutePlan> own;
      if (!rb.refused() && (cap.work_indptr || !cap.stack_arrays.empty())) own = plan_batch(b, rb, rows);
      cdiff = diff_captured(b, md, rows, cap, own ? &*own : nullptr);
      std::vector<int64_t> len = captured_row_lengths(b, rows, cap);
      if (!len.empty()) {
        mw.path = std::string("captured paged_kv_indptr (") + (cap.flattened_rows ? "one entry per query row, as the R0 flatten hands Gluon" : "per request, with the kernel's causal diagonal") + ")";
        mw.available = true;
        for (size_t i = 0; i < rows.size(); ++i) {
          mw.begin[i] = 0;
          mw.end[i] = len[i];
        }
      }
    }
    int64_t mismatches = 0;
    std::vector<bool> flag(rows.size(), false);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!mw.available || rows[i].kind == MaskKind::padding) continue;
      const int64_t want = has_position_set(rows[i].kind) ? (int64_t)rows[i].sparse_positions.size() : rows[i].length();
      const bool bad = has_position_set(rows[i].kind) ? (mw.end[i] - mw.begin[i]) != want
                                                        : (mw.begin[i] != rows[i].begin || mw.end[i] != rows[i].end);
      flag[i] = bad;
      mismatches += bad;
    }
    auto& os = *ctx.out;
    const Style st = ctx.global.style();
    auto row_length = [](const RowWindow& w) -> int64_t {
      return w.kind == MaskKind::padding ? 0 : (has_position_set(w.kind) ? (int64_t)w.sparse_positions.size() : w.length());
    };
    if (ctx.global.fmt() == Format::json) {
      // one object per query row (131,072 for 16,384 requests x 8), written as it goes
      JsonWriter w(os, json_compact());
      w.begin_object().members(json_envelope("windows"));
      w.field("case", b.name);
      w.field("ranges", "half-open [begin, end)");
      w.key("route").value(route_json(rd));
      w.field("metadata_path", mw.path);
      w.key("min_kv_seq_len").begin_object().field("r1", md.min_kv_seq_len_r1).field("r0", md.min_kv_seq_len_r0).end_object();
      w.field("mismatched_rows", mismatches);
      if (cdiff)
        w.key("captured").value(captured_json(*cdiff));
      w.key("rows").begin_array();
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        w.begin_object();
        w.field("row", r.row).field("request", r.request).field("token", r.token).field("position", r.position);
        w.field("begin", r.begin).field("end", r.end).field("length", row_length(r)).field("mask", to_string(r.kind));
        if (r.kind == MaskKind::tree) {
          w.key("allowed").begin_array();
          for (const auto& [lo, hi] : position_ranges(r.sparse_positions)) w.begin_array().value(lo).value(hi).end_array();
          w.end_array();
        }
        if (mw.available) w.field("metadata_begin", mw.begin[i]).field("metadata_end", mw.end[i]);
        w.field("mismatch", (bool)flag[i]);
        w.end_object();
      }
      w.end_array().end_object().finish();
    } else if (ctx.global.fmt() == Format::svg) {
      WindowsPicture pic;
      pic.case_name = b.name;
      pic.route = to_string(rd.route);
      pic.metadata_path = mw.path;
      pic.rows = &rows;
      pic.metadata = &mw;
      pic.mismatch = &flag;
      pic.mismatched_rows = mismatches;
      os << windows_svg(pic);
    } else if (ctx.global.fmt() == Format::csv) {
      // the fields of the JSON rows, one record per query row (empty metadata fields
      // when the route's metadata gives no windows)
      Table t;
      t.header = {"row", "request", "token", "position", "begin", "end", "length", "mask", "metadata_begin", "metadata_end", "mismatch"};
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& w = rows[i];
        t.add({std::to_string(w.row), std::to_string(w.request), std::to_string(w.token), std::to_string(w.position), std::to_string(w.begin),
               std::to_string(w.end), std::to_string(row_length(w)), to_string(w.kind), mw.available ? std::to_string(mw.begin[i]) : "",
               mw.available ? std::to_string(mw.end[i]) : "", flag[i] ? "true" : "false"});
      }
      t.print(os, Format::csv);
    } else if (ctx.global.quiet) {
      os << rows.size() << " rows, " << mismatches << " mismatched\n";
    } else {
      os << "case: " << (b.name.empty() ? "(unnamed)" : b.name) << "   route: " << to_string(rd.route) << "\n";
      os << "metadata: " << mw.path << "\n";
      // the two min_kv_seq_len definitions, where the stack's builder has them
      if (stack_for(b).builds_min_kv_seq_len()) os << "min_kv_seq_len: R1 " << md.min_kv_seq_len_r1 << ", R0 " << md.min_kv_seq_len_r0 << "\n";
      if (cdiff) os << "captured: " << (cdiff->same ? cdiff->message : st.red("first difference: ") + cdiff->message) << "\n";
      os << "ranges are half-open [begin, end)\n\n";
      Table t;
      t.header = {"row", "request", "token", "position", "window", "length", "mask", "metadata", "check"};
      t.right_align = {true, true, true, true, false, true, false, false, false};
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& w = rows[i];
        const int64_t len = row_length(w);
        std::string win = w.kind == MaskKind::padding ? "-" : "[" + std::to_string(w.begin) + ", " + std::to_string(w.end) + ")";
        if (w.kind == MaskKind::tree) {  // a draft of a tree: its allowed positions, range by range
          win.clear();
          for (const auto& [lo, hi] : position_ranges(w.sparse_positions))
            win += (win.empty() ? "" : " + ") + ("[" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
        }
        std::string meta = mw.available ? "[" + std::to_string(mw.begin[i]) + ", " + std::to_string(mw.end[i]) + ")" : "-";
        std::string check = w.kind == MaskKind::padding ? "padding" : "ok";
        if (flag[i]) {
          const int64_t extra = (mw.end[i] - mw.begin[i]) - len;
          check = st.red(std::string("MISMATCH ") + (extra > 0 ? "+" : "") + std::to_string(extra));
        }
        t.add({std::to_string(w.row), std::to_string(w.request), std::to_string(w.token), std::to_string(w.position), win, std::to_string(len),
               to_string(w.kind), meta, check});
      }
      t.print(os, Format::table);
      os << "\n" << rows.size() << " rows, " << (mismatches ? st.red(std::to_string(mismatches) + " mismatched") : std::string("0 mismatched")) << "\n";
    }
    if (mismatches) ctx.exit_code = kExitVerifyFailed;
  });
}

}  // namespace mlactl::cli
