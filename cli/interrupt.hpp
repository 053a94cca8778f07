// SIGINT and SIGTERM for every verb (docs/design.md §9). By default a signal removes
// the temporary files and folders mlactl is writing (registered below) and ends the
// process as the signal would (a shell reports 128 + the signal). A verb that can stop
// by itself (`check`) defers them instead: the first is acknowledged on stderr at once
// and counted, the verb stops when it next looks (interrupt_count()); a second is
// counted too (the verb stops now, still printing its summary); a third ends the
// process as above, whatever the verb is doing.
#pragma once
#include <string>

#include <sys/types.h>

namespace mlactl::cli {

// Installs the handlers for its lifetime and restores the previous ones after
// (run_cli is also called in-process, by the unit tests).
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// A path the handler removes if a signal ends the process (a file, or a folder and
// everything under it), for the lifetime of the guard. An empty path registers
// nothing. At most 64 paths at once (more are not removed by the handler; the code
// that made them still removes them on the normal path).
class TempPathGuard {
 public:
  explicit TempPathGuard(const std::string& path, bool directory = false);
  ~TempPathGuard();
  TempPathGuard(const TempPathGuard&) = delete;
  TempPathGuard& operator=(const TempPathGuard&) = delete;
  void release();  // the path is no longer temporary (renamed into place, or removed)

 private:
  int slot_ = -1;
};

// A process group the handler kills (SIGKILL) when a signal arrives, deferred or not, for
// the lifetime of the guard: an --executor command and what it started end with mlactl
// (issue 39). While one is live, the handler also kills every descendant of mlactl, so
// one that left the group (setsid) ends too (docs/design.md §9, "Executors end with
// mlactl"). At most 16 groups at once.
class ProcessGroupGuard {
 public:
  explicit ProcessGroupGuard(pid_t pgid);
  ~ProcessGroupGuard();
  ProcessGroupGuard(const ProcessGroupGuard&) = delete;
  ProcessGroupGuard& operator=(const ProcessGroupGuard&) = delete;

 private:
  int slot_ = -1;
};

// Makes this process the subreaper of its descendants (prctl PR_SET_CHILD_SUBREAPER,
// Linux, no privilege): an executor's grandchild whose parent exits (a daemon that
// called setsid) becomes mlactl's child, not init's, so it can still be found and ended.
// Once per process; call before starting the executor.
void become_subreaper();
// Kills every descendant of this process and reaps them (≤ ~2 s): after an executor
// ended (exit, timeout), what it left running ends too. Only for a process whose
// children are all executors' (run, in-process check; never check's case-forking parent).
void end_descendants();

// From now until the scope ends, signals are counted rather than ending the process;
// `first_message` (one line, kept as given: a string literal) is written to stderr when
// the first arrives, "mlactl: stopping now" when the second does.
void defer_interrupts(const char* first_message);
// In a forked child (a `check` case): back to the default, and none of the parent's
// paths (its -o file) is the child's to remove.
void reset_interrupts_after_fork();
int interrupt_count();   // signals received since the scope began
int interrupt_signal();  // the first of them (SIGINT, SIGTERM), 0 when none

// Removes every registered path (async-signal-safe); the verb that stops at once after
// a second signal calls it before _exit.
void remove_temp_paths();

}  // namespace mlactl::cli
