// `mlactl schedule`: the split-KV work list a route's planner builds, its reduce
// maps, buffer sizes vs capacity, balance, and the invariant check.
#include <chrono>
#include <sstream>

#include "core/batch_parse.hpp"
#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/schedule_svg.hpp"
#include <algorithm>

#include "core/stacks/registry.hpp"
#include "core/captured.hpp"
#include "core/invariants.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"

namespace mlactl::cli {

namespace {

struct PlannedCase {
  RoutePlan plan;
  InvariantReport inv;
  double plan_ms = 0, check_ms = 0;
};

PlannedCase plan_and_check(const Batch& b, const RoutedBatch& rb, const std::vector<RowWindow>& rows, std::optional<PlannerId> planner) {
  PlannedCase pc;
  auto t0 = std::chrono::steady_clock::now();
  pc.plan = plan_batch(b, rb, rows, planner);
  auto t1 = std::chrono::steady_clock::now();
  pc.inv = check_plan_invariants(pc.plan, rb.metadata.max_qo_len);
  auto t2 = std::chrono::steady_clock::now();
  pc.plan_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  pc.check_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  return pc;
}


std::string view_text(const KernelView& v) {
  std::ostringstream os;
  os << v.heads << " heads x fold " << v.fold_ratio << ", " << to_string(v.q_layout) << ", " << v.q_tokens_per_tile << " q tokens/tile, "
     << (v.causal ? "causal" : "non-causal") << ", head_dim " << v.head_dim << ", q " << to_string(v.q_dtype) << " / kv " << to_string(v.kv_dtype);
  return os.str();
}

// Why the planned view and the kernel view disagree on causality, where they do: the
// work list is laid out under the first and executed under the second.
std::string causality_note(const KernelView& planned, const KernelView& kernel) {
  if (planned.causal == kernel.causal) return "";
  const char* p = planned.causal ? "causal" : "non-causal";
  const char* k = kernel.causal ? "causal" : "non-causal";
  if (!planned.causal && planned.q_layout == QLayout::flattened_rows && planned.q_tokens_per_tile == 1)
    return std::string("planned ") + p + ", kernel " + k +
           ": the planner lays out each flattened row as a one-token query whose KV range already ends at its causal limit, so it has "
           "no diagonal to place; the kernel runs with its causal flag, which masks nothing past that limit";
  return std::string("planned ") + p + ", kernel " + k +
         ": the planner lays out the works for the causality it was handed, the routed kernel runs its own; the position audit "
         "(`run`) checks what the kernel then reads";
}

void print_schedule_json(std::ostream& os, const Batch& b, const RouteDecision& rd, const std::vector<PlannedCase>& cases,
                         const std::optional<CapturedDiff>& cdiff) {
  JsonWriter w(os, json_compact());
  w.begin_object().members(json_envelope("schedule"));
  w.field("case", b.name);
  w.key("route").value(route_json(rd));
  if (cdiff) w.key("captured").value(captured_json(*cdiff));
  w.key("plans").begin_array();
  for (const auto& c : cases) {
    w.begin_object();
    write_plan_members(w, c.plan, c.inv);
    w.key("timing_ms").value(nlohmann::ordered_json{{"planner", c.plan.planner_ms}, {"plan", c.plan_ms}, {"check", c.check_ms}});
    w.end_object();
  }
  w.end_array().end_object().finish();
}

// several planners side by side (the table format with --planner a,b)
void print_schedule_comparison(std::ostream& os, const std::vector<PlannedCase>& cases) {
  Table t;
  t.header = {"planner", "route", "workgroups", "works", "split_tiles", "partial_rows", "max_load", "efficiency", "invariants", "plan_ms"};
  t.right_align = {false, false, true, true, true, true, true, true, false, true};
  for (const auto& c : cases)
    t.add({to_string(c.plan.planner), to_string(c.plan.route), std::to_string(c.inv.balance.workgroups), std::to_string(c.inv.balance.works),
           std::to_string(c.inv.balance.split_tiles), std::to_string(c.plan.work.num_partial_rows), fmt_double(c.inv.balance.max_load, 6),
           fmt_double(c.inv.balance.efficiency, 4), c.inv.ok ? "ok" : "broken (" + std::to_string(c.inv.total_violations) + ")",
           fmt_double(c.plan_ms, 3)});
  t.print(os, Format::table);
}

// The CSV: one record per work of every plan (the JSON's work_info_set, with the
// workgroup each work runs on and the plan it belongs to).
void print_schedule_csv(std::ostream& os, const std::vector<PlannedCase>& cases) {
  Table t;
  t.header = {"planner", "kernel_route", "workgroup", "work", "batch_idx", "partial_qo_loc", "qo_start", "qo_end", "kv_start", "kv_end", "kv_offset"};
  for (const auto& c : cases) {
    const WorkList& w = c.plan.work;
    for (int g = 0; g < w.num_workgroups; ++g)
      for (int32_t i = w.work_indptr[g]; i < w.work_indptr[g + 1] && i < (int32_t)w.work_info.size(); ++i) {
        const auto& x = w.work_info[i];
        t.add({to_string(c.plan.planner), to_string(c.plan.route), std::to_string(g), std::to_string(i), std::to_string(x.batch_idx),
               std::to_string(x.partial_qo_loc), std::to_string(x.qo_start), std::to_string(x.qo_end), std::to_string(x.kv_start),
               std::to_string(x.kv_end), std::to_string(x.kv_offset)});
      }
  }
  t.print(os, Format::csv);
}

// -q: one verdict line per plan
void print_schedule_verdict(std::ostream& os, const std::vector<PlannedCase>& cases) {
  for (const auto& c : cases)
    os << to_string(c.plan.planner) << ": " << c.plan.work.work_info.size() << " works on " << c.plan.work.num_workgroups << " workgroups, invariants "
       << (c.inv.ok ? "ok" : "broken (" + std::to_string(c.inv.total_violations) + " violations)") << "\n";
}

void print_schedule_table(std::ostream& os, const Batch& b, const PlannedCase& c, int max_works, const Style& st) {
  const WorkList& w = c.plan.work;
  std::vector<std::pair<std::string, std::string>> kv = {
      {"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)},
      {"route", to_string(c.plan.route)},
      {"planner", std::string(to_string(c.plan.planner)) + " (" + w.planner +
                      (stack_for(b).planner_rules_text(b).empty() ? ")" : ", " + stack_for(b).planner_rules_text(b) + ")")},
      {"planned view", view_text(w.planned_view)},
      {"kernel view", view_text(c.plan.kernel_view)},
      {"workgroups", std::to_string(w.num_workgroups) + ", " + std::to_string(w.work_info.size()) + " works, " +
                         std::to_string(c.inv.balance.split_tiles) + " split tiles, " + std::to_string(w.num_partial_rows) + " partial rows"},
      // the unit said: the SVG's lane bars count KV entries read, this the planner's cost model
      {"balance", "max load " + fmt_double(c.inv.balance.max_load, 6) + ", mean " + fmt_double(c.inv.balance.mean_load, 6) + ", efficiency " +
                      fmt_double(c.inv.balance.efficiency, 4) + " (load: the planner's cost, 16-entry KV blocks + 16 per work)"},
  };
  if (const std::string why = causality_note(w.planned_view, c.plan.kernel_view); !why.empty()) kv.insert(kv.begin() + 5, {"views", why});
  if (c.plan.capacity) {
    const auto& m = *c.plan.capacity;
    auto cap = [&](size_t used, int64_t capn) {
      std::string s = std::to_string(used) + " / " + std::to_string(capn);
      return (int64_t)used > capn ? st.red(s + " OVER") : s;
    };
    kv.push_back({"buffers (used / get_mla_metadata_info_v1)",
                  "work_indptr " + cap(w.work_indptr.size(), m.work_indptr) + ", work_info_set " + cap(w.work_info.size(), m.work_info_set) +
                      ", reduce_indptr " + cap(w.reduce_indptr.size(), m.reduce_indptr) + ", reduce_final_map " +
                      cap(w.reduce_final_map.size(), m.reduce_final_map) + ", reduce_partial_map " + cap(w.reduce_partial_map.size(), m.reduce_partial_map)});
  }
  kv.push_back({"reduce_indptr", join_ints(w.reduce_indptr)});
  kv.push_back({"reduce_partial_map", join_ints(w.reduce_partial_map)});
  kv.push_back({"invariants", c.inv.ok ? st.green("ok") : st.red("BROKEN: " + std::to_string(c.inv.total_violations) + " violations")});
  for (const auto& a : c.plan.stack_arrays)
    if (a.row_width <= 0) {
      std::vector<int32_t> v(a.values.begin(), a.values.end());
      kv.push_back({a.name, a.scalar && v.size() == 1 ? std::to_string(v[0]) : join_ints(v, 48)});
    }
  for (const auto& n : c.plan.notes) kv.push_back({"note", n});
  print_kv(os, kv);
  // the stack's own scheduler rows in words (FlashMLA: one line per tile_scheduler_metadata row)
  if (!c.plan.schedule_words.empty()) {
    const StackArray* rows = nullptr;
    for (const auto& a : c.plan.stack_arrays)
      if (a.row_width > 0) rows = &a;
    os << "\n" << (rows ? rows->name : std::string("scheduler rows")) << " (half-open ranges; blocks of 64 KV tokens):\n";
    for (size_t i = 0; i < c.plan.schedule_words.size(); ++i) {
      if (max_works > 0 && (int64_t)i >= max_works) {
        os << "  ... " << (c.plan.schedule_words.size() - i) << " more rows (--max-works 0 lists all)\n";
        break;
      }
      std::string raw;
      if (rows && (i + 1) * rows->row_width <= rows->values.size()) {
        std::vector<int32_t> r(rows->values.begin() + i * rows->row_width, rows->values.begin() + (i + 1) * rows->row_width);
        raw = join_ints(r) + "  ";
      }
      os << "  " << raw << c.plan.schedule_words[i] << "\n";
    }
  }
  os << "\nworks (ranges half-open [begin, end); kv in index-list entries):\n";
  Table t;
  t.header = {"wg", "work", "batch", "partial_qo_loc", "qo", "kv", "kv_len", "kv_offset"};
  t.right_align = {true, true, true, true, false, false, true, true};
  int64_t listed = 0;
  for (int g = 0; g < w.num_workgroups; ++g)
    for (int32_t i = w.work_indptr[g]; i < w.work_indptr[g + 1]; ++i) {
      if (max_works > 0 && listed >= max_works) continue;
      const auto& x = w.work_info[i];
      t.add({std::to_string(g), std::to_string(i), std::to_string(x.batch_idx), std::to_string(x.partial_qo_loc),
             "[" + std::to_string(x.qo_start) + ", " + std::to_string(x.qo_end) + ")", "[" + std::to_string(x.kv_start) + ", " + std::to_string(x.kv_end) + ")",
             std::to_string(x.kv_end - x.kv_start), std::to_string(x.kv_offset)});
      ++listed;
    }
  t.print(os, Format::table);
  if ((int64_t)w.work_info.size() > listed) os << "... " << (w.work_info.size() - listed) << " more works (--max-works 0 lists all)\n";
  if (!c.inv.ok) {
    os << "\nviolations:\n";
    for (const auto& v : c.inv.violations) os << "  " << st.red(v.kind) << ": " << v.message << "\n";
    if (c.inv.total_violations > (int64_t)c.inv.violations.size())
      os << "  ... " << (c.inv.total_violations - (int64_t)c.inv.violations.size()) << " more\n";
  }
}

// `schedule --stack a,b`: one batch planned under each stack (docs/design.md §1.3), its
// arch switched to the stack's where it belongs to another one.
struct StackCase {
  std::string stack, arch, route, planner, refusal, case_name;
  RouteDecision decision;  // the JSON's route object
  int num_cu = 0;
  std::optional<PlannedCase> pc;
  std::vector<int64_t> splits;  // per request: distinct KV fragments (empty when the layout does not map rows to requests)
};

std::vector<int64_t> splits_per_request(const RoutePlan& p, const DecodeMetadata& md) {
  const std::vector<int32_t>* indptr = nullptr;
  if (p.kernel_view.q_layout == QLayout::per_request) indptr = &md.paged_kv_indptr;
  else if (p.kernel_view.q_layout == QLayout::flattened_rows && (int64_t)p.row_indptr.size() == md.num_requests + 1) indptr = &p.row_indptr;
  if (!indptr) return {};
  std::vector<std::vector<int32_t>> starts((size_t)md.num_requests);
  for (const auto& w : p.work.work_info) {
    auto it = std::upper_bound(indptr->begin(), indptr->end(), w.kv_start);
    const int64_t r = (int64_t)(it - indptr->begin()) - 1;
    if (r >= 0 && r < md.num_requests && w.kv_end > w.kv_start) starts[r].push_back(w.kv_start);
  }
  std::vector<int64_t> out;
  for (auto& v : starts) {
    std::sort(v.begin(), v.end());
    out.push_back((int64_t)(std::unique(v.begin(), v.end()) - v.begin()));
  }
  return out;
}

std::string c_name(const std::vector<StackCase>& cs) { return cs.empty() ? "" : cs.front().case_name; }

// The batch under another stack for `schedule --stack A,B` (core/batch_parse.hpp
// retarget_batch_document says what an item is), routed and planned.
StackCase plan_under_stack(const BatchOptions& opts, const std::string& item) {
  const RetargetedDocument rt = retarget_batch_document(batch_document(opts), item);
  StackCase sc;
  sc.stack = item;
  sc.arch = rt.arch;
  const Batch b = parse_batch(rt.doc);
  sc.num_cu = b.platform.num_cu;
  sc.case_name = b.name;
  const RoutedBatch rb = route_batch(b);
  sc.route = to_string(rb.decision.route);
  sc.decision = rb.decision;
  if (rb.refused()) {
    sc.refusal = rb.refusal();
    return sc;
  }
  try {
    sc.pc = plan_and_check(b, rb, oracle_windows(b), std::nullopt);
    sc.planner = to_string(sc.pc->plan.planner);
    sc.splits = splits_per_request(sc.pc->plan, rb.metadata);
  } catch (const Error& e) {
    if (e.exit_code() != kExitRefused) throw;
    sc.refusal = e.what();
  }
  return sc;
}

void print_stack_comparison(std::ostream& os, const std::vector<StackCase>& cs, Format fmt) {
  auto splits_text = [](const std::vector<int64_t>& v) {
    if (v.empty()) return std::string("-");
    std::string s;
    for (size_t i = 0; i < v.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return v.size() > 16 ? s + ",..." : s;
  };
  if (fmt == Format::svg) {
    // one panel per stack that planned the batch
    std::vector<SchedulePanel> panels;
    for (const auto& c : cs)
      if (c.pc) panels.push_back({&c.pc->plan, &c.pc->inv});
    os << schedule_svg(c_name(cs), panels);
    return;
  }
  if (fmt == Format::json) {
    JsonWriter w(os, json_compact());
    w.begin_object().members(json_envelope("schedule"));
    w.key("stacks").begin_array();
    for (const auto& c : cs) {
      w.begin_object();
      w.field("stack", c.stack).field("arch", c.arch).field("num_cu", c.num_cu);
      w.key("route").value(route_json(c.decision));  // the one route object (docs/design.md §6)
      if (!c.pc) {
        w.field("refused", c.refusal);
      } else {
        w.key("splits_per_request").int_array(c.splits);
        w.key("plan").begin_object();
        write_plan_members(w, c.pc->plan, c.pc->inv);
        w.end_object();
      }
      w.end_object();
    }
    w.end_array().end_object().finish();
    return;
  }
  Table t;
  t.header = {"stack", "arch", "cus", "route", "planner", "workgroups", "works", "split_tiles", "max_load", "efficiency", "invariants", "splits per request"};
  t.right_align = {false, false, true, false, false, true, true, true, true, true, false, false};
  for (const auto& c : cs) {
    if (!c.pc) {
      t.add({c.stack, c.arch, std::to_string(c.num_cu), c.route, "-", "-", "-", "-", "-", "-", "-", "refused: " + c.refusal});
      continue;
    }
    const auto& inv = c.pc->inv;
    t.add({c.stack, c.arch, std::to_string(c.num_cu), c.route, c.planner, std::to_string(inv.balance.workgroups), std::to_string(inv.balance.works),
           std::to_string(inv.balance.split_tiles), fmt_double(inv.balance.max_load, 6), fmt_double(inv.balance.efficiency, 4),
           inv.ok ? "ok" : "broken (" + std::to_string(inv.total_violations) + ")", splits_text(c.splits)});
  }
  t.print(os, fmt);
  if (fmt != Format::table || cs.size() < 2 || cs[0].splits.empty() || cs[1].splits.size() != cs[0].splits.size()) return;
  std::string diff;
  int64_t n = 0;
  for (size_t r = 0; r < cs[0].splits.size(); ++r)
    if (cs[0].splits[r] != cs[1].splits[r]) {
      if (n++ < 12) diff += std::string(diff.empty() ? "" : ", ") + "request " + std::to_string(r) + " (" + std::to_string(cs[0].splits[r]) + " vs " + std::to_string(cs[1].splits[r]) + ")";
    }
  os << "\nsplits per request differ on " << n << " of " << cs[0].splits.size() << " requests" << (diff.empty() ? "" : ": " + diff) << (n > 12 ? ", ..." : "") << "\n";
  os << "(max_load and efficiency: the invariant checker's one cost model for both, per workgroup the sum of ceil(kv_len / 16) + 16 over its works)\n";
}

}  // namespace

void setup_schedule(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto kernel = std::make_shared<std::string>();
  auto planners = std::make_shared<std::vector<std::string>>();
  auto max_works = std::make_shared<int>(64);
  auto* sub = app.add_subcommand("schedule", "the split-KV work list a route's planner builds, reduce maps, buffer sizes, balance, invariants");
  add_batch_options(sub, *opts, false, false);
  add_kernel_option(sub, *kernel);
  sub->add_option("--planner", *planners, "plan with these planners instead of the route's (comma-separated to compare, or repeat the flag)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember(planner_names()));
  sub->add_option("--max-works", *max_works, "works listed in the table output (0 = all)")->capture_default_str();
  auto stacks = std::make_shared<std::vector<std::string>>();
  sub->add_option("--stack", *stacks,
                  "platform.stack; with several (comma-separated) plan the batch under each and compare them: a serving stack "
                  "(vllm, sglang) on the batch's arch, stack@arch (vllm@sm90), or a modelled stack's id (vllm-rocm-aiter, vllm-cuda, sglang), "
                  "each with its own defaults")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->callback([opts, kernel, planners, max_works, stacks, &ctx]() {
    if (stacks->size() == 1 && ((*stacks)[0] == "vllm" || (*stacks)[0] == "sglang")) {
      opts->stack = (*stacks)[0];  // one serving stack: the batch's platform.stack
      stacks->clear();
    }
    if (!stacks->empty()) {
      if (!planners->empty() || !kernel->empty()) throw Error(kExitUsage, "", "--stack compares each stack's own route and planner: give it without --planner/--kernel");
      std::vector<StackCase> cs;
      for (const auto& s : *stacks) cs.push_back(plan_under_stack(*opts, s));
      print_stack_comparison(*ctx.out, cs, ctx.global.fmt());
      for (const auto& c : cs)
        if (c.pc && !c.pc->inv.ok) ctx.exit_code = kExitVerifyFailed;
      return;
    }
    Batch b = load_batch(*opts);
    const RoutedBatch routed = route_batch(b, forced_route(*kernel));
    const RouteDecision& rd = routed.decision;
    std::vector<std::optional<PlannerId>> ids;
    for (const auto& name : *planners) ids.push_back(planner_option(name));
    if (ids.empty()) {
      if (routed.refused()) throw Error(kExitRefused, "", "route refused: " + routed.refusal() + " (use --planner to plan anyway)");
      ids.push_back(std::nullopt);
    }
    auto rows = oracle_windows(b);
    const Stack& stack = *routed.stack;
    std::vector<PlannedCase> cases;
    for (const auto& id : ids) {
      // a copy only where the planner needs another route or metadata: the routed batch
      // holds the metadata's index list (268 MB for 16,384 requests x 4096 tokens)
      std::optional<RoutedBatch> changed;
      if (id) {
        // a planner runs with a route it serves: the batch's route when it is one
        const PlannerEntry* entry = find_planner(stack, *id);
        const bool serves = entry && std::find(entry->serves.begin(), entry->serves.end(), rd.route) != entry->serves.end();
        if (!serves) {
          changed = routed;
          changed->decision.route = stack.route_for_planner(*id, b, routed.metadata.max_qo_len);
        }
      }
      const RoutedBatch& cur = changed ? *changed : routed;
      if (stack.needs_flattened_metadata(cur.decision.route) && cur.metadata.flat_indptr.empty()) {
        if (!changed) changed = routed;
        changed->metadata = stack.build_metadata(b, true);
      }
      cases.push_back(plan_and_check(b, changed ? *changed : routed, rows, id));
    }
    int worst = 0;
    for (const auto& c : cases)
      if (!c.inv.ok) worst = kExitVerifyFailed;
    // captured arrays (docs/design.md §2): validated as a plan of this batch (exit 3), then
    // diffed with the plan shown; a difference fails like a windows mismatch (exit 1)
    std::optional<CapturedDiff> cdiff;
    if (!b.captured.is_null() && !routed.refused()) {
      const CapturedMetadata cap = parse_captured(b, b.captured, (int64_t)rows.size());
      if (cap.work_indptr || !cap.stack_arrays.empty()) (void)plan_captured(b, routed, rows, cap);
      cdiff = diff_captured(b, routed.metadata, rows, cap, &cases.front().plan);
      if (!cdiff->same) worst = kExitVerifyFailed;
    }
    if (ctx.global.verbose)
      for (const auto& c : cases)
        *ctx.err << "schedule: " << to_string(c.plan.planner) << " planner " << fmt_double(c.plan.planner_ms, 3) << " ms (plan with index lists "
                 << fmt_double(c.plan_ms, 3) << " ms), invariants checked in " << fmt_double(c.check_ms, 3) << " ms\n";

    const Format fmt = ctx.global.fmt();
    if (fmt == Format::json) print_schedule_json(*ctx.out, b, rd, cases, cdiff);
    else if (fmt == Format::csv) print_schedule_csv(*ctx.out, cases);
    else if (fmt == Format::svg) {
      std::vector<SchedulePanel> panels;
      for (const auto& c : cases) panels.push_back({&c.plan, &c.inv});
      *ctx.out << schedule_svg(b.name, panels);
    } else if (ctx.global.quiet) print_schedule_verdict(*ctx.out, cases);
    else if (cases.size() > 1) print_schedule_comparison(*ctx.out, cases);
    else print_schedule_table(*ctx.out, b, cases.front(), *max_works, ctx.global.style());
    if (cdiff && ctx.global.fmt() == Format::table)
      *ctx.out << "\ncaptured: " << (cdiff->same ? cdiff->message : ctx.global.style().red("first difference: ") + cdiff->message) << "\n";
    ctx.exit_code = worst;
  });
}

}  // namespace mlactl::cli
