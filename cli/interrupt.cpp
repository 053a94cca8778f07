#include "cli/interrupt.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <utility>
#include <cstring>

namespace mlactl::cli {

namespace {

// The registry the handler reads: fixed storage, no allocation, each slot published
// by its state (free -> claimed -> live) so the handler never reads a half-written path.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
enum SlotState : int { kFree = 0, kClaimed = 1, kLive = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  bool directory = false;
  char path[kPathMax] = {};
};
Slot g_slots[kSlots];

// process groups to end on a signal (ProcessGroupGuard): 0 is a free slot
constexpr int kGroups = 16;
std::atomic<pid_t> g_groups[kGroups];

// live ProcessGroupGuards: while one is, every descendant of mlactl is an executor's
std::atomic<int> g_live_groups{0};

// The pids whose parent is `parent`, from /proc/<pid>/stat (field 4, after the last ')'):
// read with open/read/getdents64 only, so the signal handler may call it, and it needs no
// CONFIG_PROC_CHILDREN (/proc/<pid>/task/<tid>/children). At most `max` of them.
int children_of(pid_t parent, pid_t* out, int max) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int found = 0;
  alignas(8) char buf[8192];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char* name = buf + off + 19;
      off += reclen;
      pid_t pid = 0;
      const char* c = name;
      for (; *c >= '0' && *c <= '9' && pid < (1 << 26); ++c) pid = pid * 10 + (*c - '0');
      if (*c != '\0' || pid <= 0) continue;
      char path[64] = "/proc/";
      size_t len = 6;
      for (const char* d = name; *d && len < 40; ++d) path[len++] = *d;
      std::memcpy(path + len, "/stat", 6);
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char st[512];
      const ssize_t k = ::read(fd, st, sizeof st - 1);
      ::close(fd);
      if (k <= 0) continue;
      st[k] = '\0';
      const char* rp = nullptr;  // the last ')': a command name may hold one
      for (const char* q = st; *q; ++q)
        if (*q == ')') rp = q;
      if (!rp || rp[1] != ' ' || rp[2] == '\0' || rp[3] != ' ') continue;
      pid_t ppid = 0;
      for (const char* q = rp + 4; *q >= '0' && *q <= '9'; ++q) ppid = ppid * 10 + (*q - '0');
      if (ppid == parent && found < max) out[found++] = pid;
    }
  }
  ::close(dir);
  return found;
}

// SIGKILLs every descendant of `root` (not root): each is stopped first (SIGSTOP), so
// it neither forks nor exits while its children are listed, then all are killed. One
// whose parent died meanwhile is a child of mlactl (the subreaper: become_subreaper) and
// found by the next sweep. Bounded: 2048 at a time. Returns how many were signalled.
int kill_descendants_of(pid_t root) {
  constexpr int kMax = 2048;
  pid_t all[kMax];
  int n = children_of(root, all, kMax);
  for (int i = 0; i < n; ++i) {
    ::kill(all[i], SIGSTOP);
    n += children_of(all[i], all + n, kMax - n);
  }
  for (int i = 0; i < n; ++i) ::kill(all[i], SIGKILL);
  return n;
}

void kill_groups() {
  for (auto& g : g_groups) {
    const pid_t p = g.load();
    if (p > 0) ::kill(-p, SIGKILL);
  }
  // a process that left the group (setsid, setpgid) is still a descendant, or, its parent
  // gone, a child of mlactl (the subreaper): while an executor runs, every descendant is its
  if (g_live_groups.load() > 0)
    for (int pass = 0; pass < 2; ++pass) kill_descendants_of(::getpid());
}

std::atomic<int> g_count{0};
std::atomic<int> g_first{0};
std::atomic<bool> g_deferred{false};
std::atomic<const char*> g_first_message{nullptr};

void write_stderr(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t k = ::write(STDERR_FILENO, s, n);
    if (k <= 0) return;
    s += k;
    n -= (size_t)k;
  }
}

// Removes what is under the open folder `fd` (depth-limited: the case folders mlactl
// makes are two levels deep), with getdents64: opendir allocates, which a signal
// handler must not.
void remove_under(int fd, int depth) {
  if (depth > 8) return;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) return;
    int removed = 0;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const unsigned char type = (unsigned char)buf[off + 18];
      const char* name = buf + off + 19;
      off += reclen;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      if (type == DT_DIR) {
        const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
          remove_under(sub, depth + 1);
          ::close(sub);
        }
        removed += ::unlinkat(fd, name, AT_REMOVEDIR) == 0;
      } else {
        removed += ::unlinkat(fd, name, 0) == 0;
      }
    }
    if (removed == 0) return;  // what is left cannot be removed
    // entries were removed while reading: start over from the beginning
    ::lseek(fd, 0, SEEK_SET);
  }
}

extern "C" void on_interrupt(int sig) {
  const int n = g_count.fetch_add(1) + 1;
  if (n == 1) g_first = sig;
  kill_groups();  // a running executor ends with mlactl, deferred or not
  if (g_deferred && n <= 2) {
    if (n == 1) {
      const char* m = g_first_message.load();
      if (m) write_stderr(m);
    } else {
      write_stderr("mlactl: stopping now\n");
    }
    return;
  }
  remove_temp_paths();
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends by the signal
}

struct sigaction g_old_int {}, g_old_term {};
int g_depth = 0;

}  // namespace

void remove_temp_paths() {
  for (Slot& s : g_slots) {
    if (s.state.load() != kLive) continue;
    if (s.directory) {
      const int fd = ::open(s.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        remove_under(fd, 0);
        ::close(fd);
      }
      ::rmdir(s.path);
    } else {
      ::unlink(s.path);
    }
  }
}

InterruptScope::InterruptScope() {
  if (g_depth++ > 0) return;
  g_count = 0;
  g_first = 0;
  g_deferred = false;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a waiting poll() or sleep wakes up
  // a signal the process was started ignoring (nohup, a background job of a script)
  // stays ignored, as the shell meant
  for (auto [sig, old] : {std::pair<int, struct sigaction*>{SIGINT, &g_old_int}, {SIGTERM, &g_old_term}}) {
    sigaction(sig, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
}

InterruptScope::~InterruptScope() {
  if (--g_depth > 0) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_deferred = false;
  g_first_message = nullptr;
}

TempPathGuard::TempPathGuard(const std::string& path, bool directory) {
  if (path.empty() || path.size() >= kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kClaimed)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].directory = directory;
    g_slots[i].state = kLive;
    slot_ = i;
    return;
  }
}

TempPathGuard::~TempPathGuard() { release(); }

void TempPathGuard::release() {
  if (slot_ >= 0) g_slots[slot_].state = kFree;
  slot_ = -1;
}

void become_subreaper() {
  // Linux ≥ 3.4, no privilege needed; elsewhere (or refused) orphans go to init as before
  static const bool done = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  (void)done;
}

void end_descendants() {
  // Kill, reap, repeat: killed parents' children move to mlactl (the subreaper) and the
  // next sweep finds them; the zombies are reaped by pid, never another verb's child.
  for (int round = 0; round < 200; ++round) {  // ~2 s at most
    pid_t kids[1024];
    const int n = children_of(::getpid(), kids, 1024);
    if (n == 0) break;
    kill_descendants_of(::getpid());
    for (int i = 0; i < n; ++i) ::waitpid(kids[i], nullptr, WNOHANG);
    struct timespec ts {0, 10 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
}

ProcessGroupGuard::ProcessGroupGuard(pid_t pgid) {
  if (pgid <= 0) return;
  for (int i = 0; i < kGroups; ++i) {
    pid_t expected = 0;
    if (g_groups[i].compare_exchange_strong(expected, pgid)) {
      slot_ = i;
      ++g_live_groups;
      return;
    }
  }
}

ProcessGroupGuard::~ProcessGroupGuard() {
  if (slot_ < 0) return;
  g_groups[slot_] = 0;
  --g_live_groups;
}

void defer_interrupts(const char* first_message) {
  g_first_message = first_message;
  g_deferred = true;
}

void reset_interrupts_after_fork() {
  g_deferred = false;
  g_count = 0;
  g_first = 0;
  for (Slot& s : g_slots) s.state = kFree;
  for (auto& g : g_groups) g = 0;
  g_live_groups = 0;
}

int interrupt_count() { return g_count.load(); }
int interrupt_signal() { return g_first.load(); }

}  // namespace mlactl::cli
