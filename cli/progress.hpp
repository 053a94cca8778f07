// A one-line progress indicator on stderr for long work (docs/design.md §6: only when
// stderr is a terminal, never with -q, never into redirected output). It appears only
// once the work has taken longer than `delay` (short runs stay quiet), refreshes the
// elapsed time from a ticker thread, and erases itself when done.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace mlactl::cli {

class ProgressLine {
 public:
  // enabled == false makes every call a no-op (not a terminal, -q, a captured stream)
  ProgressLine(std::ostream& err, std::string label, bool enabled,
               std::chrono::milliseconds delay = std::chrono::milliseconds(700));
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void set(const std::string& what);  // e.g. "[4/6] reference"
  void finish();                      // erase the line and stop the ticker
 private:
  void draw_locked();
  std::ostream& err_;
  std::string label_, what_;
  bool enabled_, shown_ = false, done_ = false;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread ticker_;
};

// Whether a progress line may be drawn on this stream: the process's stderr, a terminal.
bool progress_allowed(const std::ostream& err, bool quiet);

}  // namespace mlactl::cli
