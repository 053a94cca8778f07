// Numbers in messages and tables, one way everywhere (core and cli).
#pragma once
#include <cstdio>
#include <string>

namespace mlactl {

// printf's %g with `prec` significant digits: 1e-05, 0.0721688, 2.5e+10
inline std::string fmt_double(double v, int prec = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v);
  return buf;
}

}  // namespace mlactl
