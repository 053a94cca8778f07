#include "cli/windows_svg.hpp"

#include <algorithm>
#include <sstream>

#include "cli/svg_common.hpp"

namespace mlactl::cli {

namespace {

using svg::esc;
using svg::num;

constexpr double kWidth = 960, kLeft = 96, kRight = 70, kTitle = 64, kAxis = 40;
constexpr const char* kAgree = "#2a8a4a";

double lane_height(size_t lanes) { return std::clamp(std::floor(640.0 / double(std::max<size_t>(1, lanes))), 3.0, 14.0); }

// What the oracle row covers on the KV axis: a sparse row spans its positions.
std::pair<int64_t, int64_t> oracle_span(const RowWindow& w) {
  if (has_position_set(w.kind))
    return w.sparse_positions.empty() ? std::pair<int64_t, int64_t>{w.begin, w.begin}
                                      : std::pair<int64_t, int64_t>{w.sparse_positions.front(), w.sparse_positions.back() + 1};
  return {w.begin, w.end};
}

}  // namespace

std::string windows_svg(const WindowsPicture& p) {
  const auto& rows = *p.rows;
  const MetadataWindows& mw = *p.metadata;
  const size_t drawn = std::min(rows.size(), kWindowsSvgMaxRows);
  const double lh = lane_height(drawn);
  int64_t kv_total = 1;
  for (size_t i = 0; i < drawn; ++i) {
    kv_total = std::max(kv_total, oracle_span(rows[i]).second);
    if (mw.available) kv_total = std::max(kv_total, mw.end[i]);
  }
  const double plot_w = kWidth - kLeft - kRight, sx = plot_w / double(kv_total);
  const double height = kTitle + drawn * lh + kAxis;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << kWidth << " "
     << num(height) << "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n";
  os << "<style>.title{font-weight:bold;font-size:14px}.small{font-size:10px}.grid{stroke:#ddd}.oracle{fill:#c8c8c8}"
        ".metadata{fill:"
     << kAgree << "}.metadata.mismatch{fill:" << svg::kAlarm << "}.bad{fill:" << svg::kAlarm << "}</style>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  os << "<g class=\"windows\" data-rows=\"" << rows.size() << "\" data-drawn=\"" << drawn << "\" data-mismatched=\"" << p.mismatched_rows << "\">\n";
  os << "<text x=\"" << kLeft << "\" y=\"18\" class=\"title\">" << esc(p.case_name.empty() ? "(unnamed)" : p.case_name) << ": route " << esc(p.route)
     << "</text>\n";
  os << "<text x=\"" << kLeft << "\" y=\"36\">" << rows.size() << " rows, " << p.mismatched_rows << " mismatched"
     << (drawn < rows.size() ? "; the first " + std::to_string(drawn) + " drawn" : std::string()) << "; metadata: " << esc(mw.path) << "</text>\n";
  os << "<text x=\"" << kLeft << "\" y=\"52\" class=\"small\">x: KV positions; grey: the oracle window [begin, end); over it: the window the "
        "metadata gives (green: the same, red: different)</text>\n";
  const double top = kTitle;
  svg::kv_axis(os, kLeft, sx, kv_total, top, top + drawn * lh);
  for (size_t i = 0; i < drawn; ++i) {
    const RowWindow& w = rows[i];
    const bool bad = (*p.mismatch)[i];
    const double y = top + i * lh;
    os << "<g class=\"row" << (bad ? " mismatch" : "") << "\" data-row=\"" << w.row << "\">";
    if (lh >= 9 || i % 16 == 0)
      os << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(y + lh - 2) << "\" class=\"small" << (bad ? " bad" : "") << "\" text-anchor=\"end\">r" << w.request
         << " t" << w.token << "</text>";
    if (w.kind == MaskKind::padding) {
      if (lh >= 9) os << "<text x=\"" << kLeft + 4 << "\" y=\"" << num(y + lh - 2) << "\" class=\"small\">padding</text>";
      os << "</g>\n";
      continue;
    }
    const auto [ob, oe] = oracle_span(w);
    os << "<rect class=\"oracle\" x=\"" << num(kLeft + ob * sx) << "\" y=\"" << num(y + 0.5) << "\" width=\"" << num(std::max(0.5, (oe - ob) * sx))
       << "\" height=\"" << num(std::max(1.0, lh - 1)) << "\"><title>row " << w.row << " (request " << w.request << ", token " << w.token << "): oracle ["
       << ob << ", " << oe << "), " << to_string(w.kind) << "</title></rect>";
    if (mw.available) {
      const int64_t mb = mw.begin[i], me = mw.end[i];
      os << "<rect class=\"metadata" << (bad ? " mismatch" : "") << "\" x=\"" << num(kLeft + mb * sx) << "\" y=\"" << num(y + lh * 0.3) << "\" width=\""
         << num(std::max(0.5, (me - mb) * sx)) << "\" height=\"" << num(std::max(1.0, lh * 0.4)) << "\"><title>metadata [" << mb << ", " << me << ")"
         << (bad ? ": MISMATCH" : "") << "</title></rect>";
      if (bad && lh >= 9) {
        const int64_t diff = (me - mb) - (oe - ob);
        os << "<text x=\"" << num(kWidth - kRight + 6) << "\" y=\"" << num(y + lh - 2) << "\" class=\"small bad\">" << (diff >= 0 ? "+" : "") << diff
           << "</text>";
      }
    }
    os << "</g>\n";
  }
  os << "</g>\n</svg>\n";
  return os.str();
}

}  // namespace mlactl::cli
