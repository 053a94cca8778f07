// A tiny dynamic parallel-for over std::thread (the reference, input generation and
// the CPU executor use all cores, docs/design.md §8). Items are handed out one at a time from
// an atomic counter, so uneven items (long and short requests) balance; results
// must never depend on which thread ran an item.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mlactl {

inline int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : (int)n;
}

// Calls fn(state, i) for every i in [0, n) on up to `threads` threads (<= 0: all
// cores); each worker owns one default-constructed State (scratch buffers reused
// across its items instead of reallocated per item). After an item throws no new
// items are handed out; once all threads joined, the exception of the lowest
// failing item is rethrown: the one a single thread would have met first, so the
// error (a device fault naming its workgroup, say) does not depend on timing.
// (Items are handed out in index order, so every item below a failing one has
// already started and runs to its end.)
template <class State, class Fn>
void parallel_for_with_state(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;
  if (threads <= 0) threads = default_thread_count();
  threads = (int)std::min<int64_t>(threads, n);
  if (threads == 1) {
    State state;
    for (int64_t i = 0; i < n; ++i) fn(state, i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr first_error;
  int64_t first_error_item = n;
  std::mutex error_mutex;
  auto worker = [&]() {
    State state;
    for (;;) {
      const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        fn(state, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < first_error_item) {
          first_error = std::current_exception();
          first_error_item = i;
        }
        next.store(n, std::memory_order_relaxed);  // stop handing out items
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (first_error) std::rethrow_exception(first_error);
}

// Calls fn(i) for every i in [0, n), as above without per-worker state.
template <class Fn>
void parallel_for(int64_t n, int threads, Fn&& fn) {
  struct NoState {};
  parallel_for_with_state<NoState>(n, threads, [&](NoState&, int64_t i) { fn(i); });
}

}  // namespace mlactl
