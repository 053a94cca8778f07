// Fails on an include cycle between modules of a source tree (docs/design.md §1.2: core
// is strictly downward). A module is a path without its extension, so x.hpp and x.cpp
// are one node and "a.cpp includes b.hpp, b.cpp includes a.hpp" is the cycle a <-> b.
// Usage: include_cycles ROOT DIR...   (quoted includes are resolved against ROOT)
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string module_of(const std::string& rel) {
  const fs::path p(rel);
  return (p.parent_path() / p.stem()).generic_string();
}

bool source_file(const fs::path& p) {
  static const std::set<std::string> exts = {".hpp", ".cpp", ".h", ".cuh", ".hip"};
  return exts.count(p.extension().string()) > 0;
}

// Depth-first search with colours; returns the first cycle found (a path a -> ... -> a).
bool find_cycle(const std::map<std::string, std::set<std::string>>& g, const std::string& n, std::map<std::string, int>& colour,
                std::vector<std::string>& stack, std::vector<std::string>& cycle) {
  colour[n] = 1;
  stack.push_back(n);
  auto it = g.find(n);
  if (it != g.end())
    for (const std::string& m : it->second) {
      if (colour[m] == 1) {
        auto at = std::find(stack.begin(), stack.end(), m);
        cycle.assign(at, stack.end());
        cycle.push_back(m);
        return true;
      }
      if (colour[m] == 0 && find_cycle(g, m, colour, stack, cycle)) return true;
    }
  stack.pop_back();
  colour[n] = 2;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: include_cycles ROOT DIR...\n";
    return 2;
  }
  const fs::path root = argv[1];
  const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::map<std::string, std::set<std::string>> graph;
  size_t files = 0;
  for (int a = 2; a < argc; ++a) {
    const fs::path dir = root / argv[a];
    if (!fs::is_directory(dir)) {
      std::cerr << "include_cycles: " << dir << " is not a directory\n";
      return 2;
    }
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || !source_file(e.path())) continue;
      ++files;
      const std::string self = module_of(fs::relative(e.path(), root).generic_string());
      graph[self];
      std::ifstream in(e.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line))
        if (std::regex_search(line, m, include_re)) {
          const std::string target = module_of(m[1].str());
          if (target != self && fs::exists(root / m[1].str())) graph[self].insert(target);
        }
    }
  }
  std::map<std::string, int> colour;
  for (const auto& [n, _] : graph) {
    if (colour[n] != 0) continue;
    std::vector<std::string> stack, cycle;
    if (find_cycle(graph, n, colour, stack, cycle)) {
      std::cerr << "include cycle:";
      for (size_t i = 0; i < cycle.size(); ++i) std::cerr << (i ? " -> " : " ") << cycle[i];
      std::cerr << "\n";
      return 1;
    }
  }
  std::cout << "include_cycles: " << graph.size() << " modules in " << files << " files, no cycle\n";
  return 0;
}
