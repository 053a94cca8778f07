// What the SVG pictures share (cli/schedule_svg.cpp, cli/windows_svg.cpp): XML escaping,
// short coordinates, and one colour per request so both pictures of a batch agree.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

// The alarm colour: violations, overloaded lanes, mismatched windows.
constexpr const char* kAlarm = "#d00";

}  // namespace mlactl::cli::svg
