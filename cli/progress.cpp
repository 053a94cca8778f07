#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace mlactl::cli {

bool progress_allowed(const std::ostream& err, bool quiet) { return !quiet && &err == &std::cerr && isatty(STDERR_FILENO); }

ProgressLine::ProgressLine(std::ostream& err, std::string label, bool enabled, std::chrono::milliseconds delay)
    : err_(err), label_(std::move(label)), enabled_(enabled), delay_(delay), start_(std::chrono::steady_clock::now()) {
  if (!enabled_) return;
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lk(mu_);
    while (!done_) {
      cv_.wait_for(lk, std::chrono::milliseconds(250));
      if (!done_ && std::chrono::steady_clock::now() - start_ >= delay_) draw_locked();
    }
  });
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::set(const std::string& what) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lk(mu_);
  what_ = what;
  if (shown_) draw_locked();
}

void ProgressLine::draw_locked() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  err_ << "\r\033[K" << label_ << ": " << what_ << " (" << buf << ")" << std::flush;
  shown_ = true;
}

void ProgressLine::finish() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (done_) return;
    done_ = true;
    if (shown_) err_ << "\r\033[K" << std::flush;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace mlactl::cli
