// Fails when an include crosses the layering of docs/design.md §1.2 ("Dependency rule"):
//
//   * `core/` never includes `kernels/` or `cli/`, and builds with no GPU toolchain.
//   * `kernels/` sees only core's work-list and input types (`core/worklist.hpp`,
//     `core/types.hpp`), the codecs (`core/dtype.hpp`), `core/parallel.hpp` and the
//     CPU executor's arithmetic (`core/gemm.hpp`, `core/libm_exp.hpp`,
//     `core/max_scaled.hpp`). It knows nothing about batches, routes or planners.
//   * `cli/` ties them together: parse options, call core, pick an executor, print.
//
// i.e. cli -> kernels -> core. The rules checked here:
//   1. a file under core/ includes only core/ (no kernels/, cli/ or other file of the tree);
//   2. a file under core/ includes no GPU header: cuda*.h, cuda/..., hip/..., hip_*.h,
//      cooperative_groups, cub/thrust/cutlass/cute, vendor libraries (cublas, rocblas, ...),
//      nor kernels/gpu.hpp (§5: "the only file that knows the vendor");
//   3. a file under kernels/ includes nothing from cli/;
//   4. a file under kernels/ includes of core/ only the headers the second bullet lists
//      (kKernelsSeeOfCore).
//
// An include "x" is resolved as the compiler does: first against the including file's
// directory, then against ROOT; <x> against ROOT only. A path that resolves to no file of
// the tree is judged by its spelling (its first directory: core/, kernels/, cli/), so a
// fixture need not contain the included file. Block comments are not parsed.
// Usage: layering ROOT   (scans ROOT/core, ROOT/kernels, ROOT/cli: those that exist)
// Prints one line per violation "layering: FILE includes TARGET (RULE)" and exits 1.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>


// docs/design.md §1.2's second bullet: the core headers kernels/ may include.
const std::set<std::string> kKernelsSeeOfCore = {"core/worklist.hpp", "core/types.hpp",   "core/dtype.hpp",
                                                 "core/parallel.hpp", "core/gemm.hpp",    "core/libm_exp.hpp",
                                                 "core/max_scaled.hpp"};
namespace fs = std::filesystem;

namespace {

bool source_file(const fs::path& p) {
  static const std::set<std::string> exts = {".hpp", ".cpp", ".h", ".cuh", ".hip", ".cu", ".inl"};
  return exts.count(p.extension().string()) > 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string first_component(const std::string& rel) {
  const auto slash = rel.find('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

// A header of a GPU toolchain (CUDA, HIP/ROCm or a library built on them), by its spelling.
bool gpu_header(const std::string& name) {
  static const std::regex re(
      R"re(^(cuda[^/]*\.h(pp)?|cuda/.*|hip/.*|hip_[^/]*\.h|hipcub/.*|hiprand/.*|hipblas.*|hipfft.*|rocblas.*|rocprim/.*|)re"
      R"re(rocrand/.*|rccl.*|cooperative_groups(\.h|/.*)|cub/.*|thrust/.*|cutlass/.*|cute/.*|cublas.*|cufft.*|curand.*|)re"
      R"re(cusparse.*|cusolver.*|cudnn.*|nccl.*\.h|nvrtc\.h|nvml\.h|nvtx3?/.*|nvToolsExt.*|mma\.h|crt/.*|nv/.*|)re"
      R"re(device_launch_parameters\.h|device_functions\.h|sm_[0-9]+_.*\.h|vector_types\.h|texture_fetch_functions\.h)$)re");
  return std::regex_match(name, re);
}

struct Include {
  std::string spelled;   // as written between the quotes or brackets
  std::string resolved;  // relative to ROOT when it names a file of the tree, else as spelled
  bool in_tree;          // resolved names a file of the tree
};

Include resolve(const fs::path& root, const fs::path& file, const std::string& spelled, bool quoted) {
  const std::vector<fs::path> bases = quoted ? std::vector<fs::path>{file.parent_path(), root} : std::vector<fs::path>{root};
  for (const fs::path& base : bases) {
    const fs::path p = (base / spelled).lexically_normal();
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    const std::string rel = p.lexically_relative(root).generic_string();
    if (!rel.empty() && !starts_with(rel, "..")) return {spelled, rel, true};
  }
  // not in the tree: "../cli/x.hpp" still names cli/x.hpp, relative to the including file
  if (quoted && (starts_with(spelled, "./") || starts_with(spelled, "../"))) {
    const std::string rel = (file.parent_path() / spelled).lexically_normal().lexically_relative(root).generic_string();
    if (!rel.empty() && !starts_with(rel, "..")) return {spelled, rel, false};
  }
  return {spelled, fs::path(spelled).lexically_normal().generic_string(), false};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: layering ROOT\n";
    return 2;
  }
  const fs::path root = fs::absolute(argv[1]).lexically_normal();
  const std::regex include_re(R"re(^\s*#\s*include\s*(["<])([^">]+)[">])re");
  const std::set<std::string> layers = {"core", "kernels", "cli"};
  size_t files = 0, dirs = 0, violations = 0;
  for (const std::string layer : {"core", "kernels", "cli"}) {
    const fs::path dir = root / layer;
    if (!fs::is_directory(dir)) continue;
    ++dirs;
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && source_file(e.path())) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const fs::path& path : paths) {
      ++files;
      const std::string self = path.lexically_relative(root).generic_string();
      std::ifstream in(path);
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, include_re)) continue;
        const Include inc = resolve(root, path, m[2].str(), m[1].str() == "\"");
        const std::string target_layer = first_component(inc.resolved);
        const bool names_layer = layers.count(target_layer) > 0;
        std::string rule;
        if (layer == "core") {
          if (gpu_header(inc.spelled) || inc.resolved == "kernels/gpu.hpp")
            rule = "core builds with no GPU toolchain: no CUDA/HIP header, nor kernels/gpu.hpp";
          else if ((inc.in_tree || names_layer) && target_layer != "core")
            rule = "core may include only core/";
        } else if (layer == "kernels") {
          if (target_layer == "cli") rule = "kernels may include only kernels/ and core/";
          else if (target_layer == "core" && !kKernelsSeeOfCore.count(inc.resolved))
            rule = "kernels sees of core only the work list, the input types, the codecs and the CPU arithmetic "
                   "(docs/design.md 1.2)";
        }
        if (rule.empty()) continue;
        ++violations;
        const std::string shown = m[1].str() == "<" ? "<" + inc.resolved + ">" : inc.resolved;
        std::cerr << "layering: " << self << " includes " << shown << " (" << rule << ")\n";
      }
    }
  }
  if (dirs == 0) {
    std::cerr << "layering: " << root << " has none of core/, kernels/, cli/\n";
    return 2;
  }
  if (violations) {
    std::cerr << "layering: " << violations << " violation" << (violations == 1 ? "" : "s") << " of docs/design.md §1.2 (cli -> kernels -> core)\n";
    return 1;
  }
  std::cout << "layering: " << files << " files in " << dirs << " layers, cli -> kernels -> core holds\n";
  return 0;
}
