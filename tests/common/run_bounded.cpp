// run_bounded MAX_MIB COMMAND ARGS...: runs the command with this process's stdin,
// stdout and stderr, and exits with its exit status — unless its peak resident memory
// (wait4's ru_maxrss, the child alone) was over MAX_MIB, then it says so on stderr and
// exits 125. The CLI tests' memory bounds (tests/cli/cli_tests.cmake, MAXRSS) use it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: run_bounded MAX_MIB COMMAND [ARGS...]\n");
    return 2;
  }
  char* end = nullptr;
  const double max_mib = std::strtod(argv[1], &end);
  if (!end || *end || !(max_mib > 0)) {
    std::fprintf(stderr, "run_bounded: MAX_MIB must be a positive number, got \"%s\"\n", argv[1]);
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("run_bounded: fork");
    return 126;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    std::fprintf(stderr, "run_bounded: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) {
      std::perror("run_bounded: wait4");
      return 126;
    }
  const double peak_mib = ru.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
  if (peak_mib > max_mib) {
    std::fprintf(stderr, "run_bounded: peak RSS %.1f MiB is over the bound of %.1f MiB\n", peak_mib, max_mib);
    return 125;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
