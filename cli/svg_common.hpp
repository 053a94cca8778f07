// What the SVG pictures share (cli/schedule_svg.cpp, cli/windows_svg.cpp): XML escaping,
// short coordinates, and one colour per request so both pictures of a batch agree.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>

namespace mlactl::cli::svg {

inline std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Distinct hues for neighbouring requests (golden-angle steps), stable per batch index;
// saturation and lightness keep every hue far from the pictures' alarm red (#d00).
inline std::string request_colour(int64_t request) {
  const double hue = std::fmod(double(std::max<int64_t>(0, request)) * 137.508, 360.0);
  char buf[48];
  std::snprintf(buf, sizeof buf, "hsl(%.0f,62%%,58%%)", hue);
  return buf;
}

// Grid lines and labels at 0, 1/4, ... of a KV axis of `total` entries drawn from x =
// left at `scale` px per entry, over the plot's rows [top, bottom).
inline void kv_axis(std::ostream& os, double left, double scale, int64_t total, double top, double bottom) {
  for (int t = 0; t <= 4; ++t) {
    const int64_t kv = total * t / 4;
    const double x = left + kv * scale;
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(bottom) << "\" class=\"grid\"/>\n";
    os << "<text x=\"" << num(x) << "\" y=\"" << num(bottom + 14) << "\" class=\"small\" text-anchor=\"middle\">" << kv << "</text>\n";
  }
}

// The alarm colour: violations, overloaded lanes, mismatched windows.
constexpr const char* kAlarm = "#d00";

}  // namespace mlactl::cli::svg
