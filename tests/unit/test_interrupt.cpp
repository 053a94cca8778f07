// The temporary paths a signal removes (cli/interrupt.hpp): a registered file and a
// registered folder (with files and a subfolder, as an external executor's case folder)
// are removed by remove_temp_paths(), what was released is not; the "did you mean" of
// core/suggest.hpp; an AtomicFile's temporary file is registered until it is committed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/interrupt.hpp"
#include "cli/output.hpp"
#include "core/suggest.hpp"

namespace fs = std::filesystem;
using namespace mlactl;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("mlactl-unit-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void touch(const fs::path& p) { std::ofstream(p) << "x"; }
}  // namespace

TEST_CASE("interrupt: registered files and folders are removed, released ones kept", "[interrupt]") {
  const fs::path d = fresh_dir("interrupt");
  touch(d / ".r.txt.tmp.AAAAAA");
  touch(d / "kept.txt");
  fs::create_directories(d / "case" / "sub");
  touch(d / "case" / "manifest.json");
  touch(d / "case" / "q.npy");
  touch(d / "case" / "sub" / "out.npy");
  {
    cli::TempPathGuard file((d / ".r.txt.tmp.AAAAAA").string());
    cli::TempPathGuard folder((d / "case").string(), true);
    cli::TempPathGuard released((d / "kept.txt").string());
    released.release();
    cli::remove_temp_paths();
    CHECK_FALSE(fs::exists(d / ".r.txt.tmp.AAAAAA"));
    CHECK_FALSE(fs::exists(d / "case"));
    CHECK(fs::exists(d / "kept.txt"));
  }
  // the guards are gone: nothing registered is left to remove
  touch(d / ".r.txt.tmp.AAAAAA");
  cli::remove_temp_paths();
  CHECK(fs::exists(d / ".r.txt.tmp.AAAAAA"));
  fs::remove_all(d);
}

TEST_CASE("interrupt: an AtomicFile's temporary file is registered until it is committed", "[interrupt]") {
  const fs::path d = fresh_dir("atomic");
  const std::string target = (d / "report.txt").string();
  auto temps = [&]() {
    int n = 0;
    for (const auto& e : fs::directory_iterator(d)) n += e.path().filename().string().rfind(".report.txt.tmp.", 0) == 0;
    return n;
  };
  {
    cli::AtomicFile f(target);
    f.write("a", 1);
    CHECK(temps() == 1);
    cli::remove_temp_paths();  // what the handler does on SIGINT/SIGTERM
    CHECK(temps() == 0);
  }
  {
    cli::AtomicFile f(target);
    f.write("b", 1);
    f.commit();
    cli::remove_temp_paths();  // committed: the report stays
    CHECK(fs::exists(target));
    CHECK(temps() == 0);
  }
  fs::remove_all(d);
}

TEST_CASE("suggest: the nearest name of a mistyped one", "[suggest]") {
  const std::vector<std::string> ids = {"verify-window-broadcast", "causal-flag-dropped", "pad-repeat-noop", "pad-append-only"};
  CHECK(nearest_name("verify-window-broadcst", ids) == std::optional<std::string>("verify-window-broadcast"));
  CHECK(nearest_name("causal-flag", ids) == std::optional<std::string>("causal-flag-dropped"));  // a unique prefix
  CHECK(nearest_name("pad-", ids) == std::nullopt);                                              // two prefixes, too far from both
  CHECK(nearest_name("something-else", ids) == std::nullopt);
}
