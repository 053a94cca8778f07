#include "cli/schedule_svg.hpp"

#include "cli/svg_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace mlactl::cli {

namespace {

using svg::esc;
using svg::num;
using svg::request_colour;

constexpr double kPlanWidth = 960, kPlanLeft = 64, kPlanRight = 150, kPlanTitle = 58, kPlanAxis = 88, kPlanGap = 24;

double plan_lane_height(int lanes) { return std::clamp(std::floor(640.0 / std::max(1, lanes)), 3.0, 18.0); }

void panel(std::ostringstream& os, double y0, const std::string& case_name, const RoutePlan& plan, const InvariantReport& inv) {
  const WorkList& w = plan.work;
  const int lanes = w.num_workgroups;
  const double lh = plan_lane_height(lanes);
  const double plot_w = kPlanWidth - kPlanLeft - kPlanRight;
  int64_t kv_total = 1;
  for (const auto& x : w.work_info) kv_total = std::max<int64_t>(kv_total, x.kv_end);
  const double sx = plot_w / double(kv_total);
  // partial row -> reduce group (tile), to mark the splits that one reduce merges
  std::map<int32_t, int64_t> group_of_partial;
  for (size_t g = 0; g + 1 < w.reduce_indptr.size(); ++g)
    for (int32_t k = w.reduce_indptr[g]; k < w.reduce_indptr[g + 1] && k < (int32_t)w.reduce_partial_map.size(); ++k)
      group_of_partial[w.reduce_partial_map[k]] = (int64_t)g;
  std::vector<bool> bad_work(w.work_info.size(), false);
  for (const auto& v : inv.violations)
    if (v.work >= 0 && v.work < (int64_t)bad_work.size()) bad_work[v.work] = true;
  // lane load in KV entries read (the picture's own unit; the JSON's balance uses the
  // planner's cost model, which adds a per-work overhead)
  std::vector<double> load(std::max(0, lanes), 0.0);
  for (int g = 0; g < lanes; ++g)
    for (int32_t i = w.work_indptr[g]; i < w.work_indptr[g + 1] && i < (int32_t)w.work_info.size(); ++i)
      load[g] += w.work_info[i].kv_end - w.work_info[i].kv_start;
  double max_load = 1, mean = 0;
  for (double l : load) max_load = std::max(max_load, l), mean += l;
  mean = load.empty() ? 0 : mean / double(load.size());

  int overloaded = 0;
  for (double l : load) overloaded += l > kOverloadFactor * mean;
  os << "<g class=\"panel\" data-planner=\"" << to_string(plan.planner) << "\" data-workgroups=\"" << lanes << "\" data-works=\"" << w.work_info.size()
     << "\" transform=\"translate(0," << num(y0) << ")\">\n";
  os << "<text x=\"" << kPlanLeft << "\" y=\"18\" class=\"title\">" << esc(case_name.empty() ? "(unnamed)" : case_name) << ": " << to_string(plan.route)
     << ", planner " << to_string(plan.planner) << " (" << esc(w.planner) << ")</text>\n";
  os << "<text x=\"" << kPlanLeft << "\" y=\"36\">" << lanes << " workgroups, " << w.work_info.size() << " works, " << inv.balance.split_tiles
     << " split tiles, " << w.num_partial_rows << " partial rows; efficiency " << num(100 * inv.balance.efficiency) << "%, " << overloaded
     << " lanes over " << num(100 * kOverloadFactor) << "% of the mean load; invariants "
     << (inv.ok ? "ok" : "BROKEN (" + std::to_string(inv.total_violations) + ")") << "</text>\n";
  // what a bar's colour is depends on the planned view: a request on per-request
  // layouts; one query row (batch_idx) on flattened ones; request x fold group when
  // heads are folded into the batch
  const KernelView& pv = w.planned_view;
  const std::string colour_of = pv.q_layout == QLayout::flattened_rows ? "flattened q row (batch_idx: one per query token)"
                                : pv.fold_ratio > 1                   ? "batch_idx (request x " + std::to_string(pv.fold_ratio) + " fold groups)"
                                                                      : "request (batch_idx)";
  os << "<text x=\"" << kPlanLeft << "\" y=\"52\" class=\"small\">x: KV index-list entries [kv_start, kv_end); colour: "
     << (pv.q_layout == QLayout::flattened_rows ? "q row" : pv.fold_ratio > 1 ? "batch_idx" : "request")
     << " (legend below); dashed: a split partial (rN: its reduce group); right: KV entries read per lane</text>\n";
  const double top = kPlanTitle;
  // axis ticks along the KV index list
  svg::kv_axis(os, kPlanLeft, sx, kv_total, top, top + lanes * lh);
  for (int g = 0; g < lanes; ++g) {
    const double y = top + g * lh;
    const bool over = g < (int)load.size() && load[g] > kOverloadFactor * mean;
    os << "<g class=\"lane" << (over ? " overloaded" : "") << "\" data-wg=\"" << g << "\">";
    if (lh >= 9 || g % 16 == 0)
      os << "<text x=\"" << kPlanLeft - 6 << "\" y=\"" << num(y + lh - 2) << "\" class=\"small\" text-anchor=\"end\">wg " << g << "</text>";
    for (int32_t i = w.work_indptr[g]; i < w.work_indptr[g + 1] && i < (int32_t)w.work_info.size(); ++i) {
      const WorkInfo& x = w.work_info[i];
      const bool partial = x.partial_qo_loc >= 0;
      const auto grp = partial ? group_of_partial.find(x.partial_qo_loc) : group_of_partial.end();
      const double bx = kPlanLeft + x.kv_start * sx, bw = std::max(1.0, (x.kv_end - x.kv_start) * sx);
      os << "<rect class=\"work" << (partial ? " partial" : "") << (bad_work[i] ? " violation" : "") << "\" x=\"" << num(bx) << "\" y=\"" << num(y + 0.5)
         << "\" width=\"" << num(bw) << "\" height=\"" << num(std::max(1.0, lh - 1)) << "\" fill=\"" << request_colour(x.batch_idx) << "\">";
      os << "<title>work " << i << ": request " << x.batch_idx << ", qo [" << x.qo_start << ", " << x.qo_end << "), kv [" << x.kv_start << ", "
         << x.kv_end << ")" << (partial ? ", partial row " + std::to_string(x.partial_qo_loc) : std::string(", final output"));
      if (grp != group_of_partial.end()) os << ", reduce group " << grp->second;
      os << "</title></rect>";
      if (grp != group_of_partial.end() && bw >= 22 && lh >= 9)
        os << "<text x=\"" << num(bx + 3) << "\" y=\"" << num(y + lh - 3) << "\" class=\"small\">r" << grp->second << "</text>";
    }
    if (g < (int)load.size()) {
      const double lw = (kPlanRight - 50) * load[g] / max_load;
      os << "<rect class=\"load" << (over ? " over" : "") << "\" x=\"" << num(kPlanWidth - kPlanRight + 10) << "\" y=\"" << num(y + 0.5) << "\" width=\""
         << num(std::max(0.5, lw)) << "\" height=\"" << num(std::max(1.0, lh - 1)) << "\"><title>wg " << g << ": " << int64_t(load[g]) << " KV entries</title></rect>";
    }
    os << "</g>\n";
  }
  os << "<text x=\"" << num(kPlanWidth - 10) << "\" y=\"" << num(top + lanes * lh + 28) << "\" class=\"small\" text-anchor=\"end\">KV entries read per lane: max "
     << int64_t(max_load) << ", mean " << int64_t(mean + 0.5) << "</text>\n";
  // the legend: the colours as drawn, and the unit of the right-hand bars against the
  // table's `balance` line (the planner's cost model, not entries read)
  std::vector<int32_t> shown;
  for (const auto& x : w.work_info)
    if (std::find(shown.begin(), shown.end(), x.batch_idx) == shown.end()) shown.push_back(x.batch_idx);
  std::sort(shown.begin(), shown.end());
  const size_t kSwatches = 12;
  const double ly = top + lanes * lh + 46;
  os << "<g class=\"legend\">";
  os << "<text x=\"" << kPlanLeft << "\" y=\"" << num(ly) << "\" class=\"small\">" << esc(colour_of) << ":</text>";
  double lx = kPlanLeft + 8 + 5.2 * double(colour_of.size() + 1);
  for (size_t k = 0; k < shown.size() && k < kSwatches; ++k) {
    os << "<rect class=\"swatch\" x=\"" << num(lx) << "\" y=\"" << num(ly - 8) << "\" width=\"9\" height=\"9\" fill=\"" << request_colour(shown[k])
       << "\"/><text x=\"" << num(lx + 12) << "\" y=\"" << num(ly) << "\" class=\"small\">" << shown[k] << "</text>";
    lx += 18 + 6 * std::to_string(shown[k]).size();
  }
  if (shown.size() > kSwatches) os << "<text x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" class=\"small\">... (" << shown.size() << ")</text>";
  os << "<text x=\"" << kPlanLeft << "\" y=\"" << num(ly + 14) << "\" class=\"small\">dashed outline: a split partial; red outline: an invariant "
        "violation; right: a lane's KV index-list entries read, red over "
     << num(100 * kOverloadFactor) << "% of the mean</text>";
  os << "<text x=\"" << kPlanLeft << "\" y=\"" << num(ly + 28) << "\" class=\"small\">units: the bars count KV index-list entries; the schedule "
        "table's balance line counts the planner's cost (16-entry KV blocks + 16 per work)</text>";
  os << "</g>\n";
  os << "</g>\n";
}

double panel_height(const RoutePlan& plan) {
  return kPlanTitle + plan.work.num_workgroups * plan_lane_height(plan.work.num_workgroups) + kPlanAxis;
}

}  // namespace

std::string schedule_svg(const std::string& case_name, const std::vector<SchedulePanel>& panels) {
  double h = 0;
  for (const auto& p : panels) h += panel_height(*p.plan) + kPlanGap;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kPlanWidth << "\" height=\"" << num(h) << "\" viewBox=\"0 0 " << kPlanWidth << " " << num(h)
     << "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n";
  os << "<style>.title{font-weight:bold;font-size:14px}.small{font-size:10px}.grid{stroke:#ddd}"
        ".work{stroke:#333;stroke-width:0.5}.partial{stroke:#000;stroke-width:1.2;stroke-dasharray:3 2}"
        ".violation{stroke:#d00;stroke-width:2.5}.load{fill:#888}.over{fill:#d00}</style>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  double y = 0;
  for (const auto& p : panels) {
    panel(os, y, case_name, *p.plan, *p.inv);
    y += panel_height(*p.plan) + kPlanGap;
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace mlactl::cli
