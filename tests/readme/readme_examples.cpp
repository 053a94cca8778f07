// Keeps the README honest: runs every fenced example that starts with `$ mlactl ...`
// and compares what mlactl prints (stdout) with the lines the README shows.
//   readme_examples README.md path/to/mlactl WORKDIR [scripts/deps.sh]
// A README line matches an output line when they are equal after trailing blanks, or,
// where the line contains `...`, when the output line matches it as a pattern with
// `...` standing for any text. A line that is only `...` (indented or not) stands for any number of
// output lines (zero included): the README elides on purpose, and says so.
// With deps.sh, the README's list of Debian packages must be deps.sh's PKGS, in order.
#include <cstdio>
#include <functional>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string ltrim(const std::string& s) {
  size_t i = s.find_first_not_of(" \t");
  return i == std::string::npos ? "" : s.substr(i);
}

// `...` inside a line: any text (a glob with one wildcard spelling)
bool line_matches(const std::string& want, const std::string& got) {
  if (want == got) return true;
  std::vector<std::string> parts;
  size_t pos = 0;
  for (size_t k; (k = want.find("...", pos)) != std::string::npos; pos = k + 3) parts.push_back(want.substr(pos, k - pos));
  if (parts.empty()) return false;
  parts.push_back(want.substr(pos));
  if (got.compare(0, parts.front().size(), parts.front()) != 0) return false;
  size_t at = parts.front().size();
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    const size_t k = got.find(parts[i], at);
    if (k == std::string::npos) return false;
    at = k + parts[i].size();
  }
  const std::string& last = parts.back();
  return got.size() >= at + last.size() && got.compare(got.size() - last.size(), last.size(), last) == 0;
}

bool block_matches(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  // memo[i][j]: 0 unknown, 1 no, 2 yes
  std::vector<std::vector<char>> memo(want.size() + 1, std::vector<char>(got.size() + 1, 0));
  std::function<bool(size_t, size_t)> m = [&](size_t i, size_t j) -> bool {
    char& c = memo[i][j];
    if (c) return c == 2;
    bool r;
    if (i == want.size()) r = j == got.size();
    else if (ltrim(want[i]) == "...") {
      r = false;
      for (size_t k = j; k <= got.size() && !r; ++k) r = m(i + 1, k);
    } else r = j < got.size() && line_matches(want[i], got[j]) && m(i + 1, j + 1);
    c = r ? 2 : 1;
    return r;
  };
  return m(0, 0);
}

std::vector<std::string> run(const std::string& cmd) {
  std::vector<std::string> lines;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return lines;
  std::string cur;
  for (int ch; (ch = std::fgetc(p)) != EOF;) {
    if (ch == '\n') lines.push_back(rtrim(cur)), cur.clear();
    else cur += char(ch);
  }
  if (!cur.empty()) lines.push_back(rtrim(cur));
  pclose(p);
  return lines;
}

}  // namespace


// The backquoted words of the README's "install the Debian packages they need (...)"
// against deps.sh's PKGS="..." line.
int check_packages(const std::vector<std::string>& readme, const char* deps_path) {
  std::ifstream d(deps_path);
  std::vector<std::string> pkgs;
  for (std::string l; std::getline(d, l);)
    if (l.rfind("PKGS=\"", 0) == 0) {
      std::string list = l.substr(6, l.find('"', 6) - 6), w;
      for (char c : list + " ")
        if (c == ' ') {
          if (!w.empty()) pkgs.push_back(w);
          w.clear();
        } else w += c;
    }
  std::string text;
  for (const auto& l : readme) text += l + " ";
  const std::string marker = "install the Debian packages they need (";
  const size_t at = text.find(marker);
  if (pkgs.empty() || at == std::string::npos) {
    std::cout << "FAIL  no PKGS in " << deps_path << " or no package list in the README\n";
    return 1;
  }
  std::vector<std::string> listed;
  const size_t end = text.find(')', at + marker.size());
  for (size_t i = at + marker.size(); i < end;) {
    const size_t a = text.find('`', i);
    if (a == std::string::npos || a > end) break;
    const size_t b = text.find('`', a + 1);
    listed.push_back(text.substr(a + 1, b - a - 1));
    i = b + 1;
  }
  if (listed != pkgs) {
    std::cout << "FAIL  the README's package list differs from " << deps_path << "\n  README: ";
    for (const auto& p : listed) std::cout << p << " ";
    std::cout << "\n  deps.sh: ";
    for (const auto& p : pkgs) std::cout << p << " ";
    std::cout << "\n";
    return 1;
  }
  std::cout << "ok    README's package list = scripts/deps.sh's (" << pkgs.size() << " packages)\n";
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: readme_examples README.md MLACTL WORKDIR [deps.sh]\n";
    return 2;
  }
  std::ifstream f(argv[1]);
  if (!f) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  int examples = 0, failed = argc == 5 ? check_packages(lines, argv[4]) : 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string fence = ltrim(lines[i]);
    if (fence.rfind("```", 0) != 0) continue;
    const size_t indent = lines[i].size() - fence.size();
    std::vector<std::string> block;
    size_t j = i + 1;
    for (; j < lines.size() && ltrim(lines[j]).rfind("```", 0) != 0; ++j)
      block.push_back(rtrim(lines[j].size() >= indent ? lines[j].substr(indent) : ltrim(lines[j])));
    const size_t start_line = i + 1;
    i = j;
    if (block.empty() || block.front().rfind("$ mlactl ", 0) != 0) continue;
    ++examples;
    const std::string args = block.front().substr(std::string("$ mlactl ").size());
    const std::vector<std::string> want(block.begin() + 1, block.end());
    const std::string cmd = std::string("cd '") + argv[3] + "' && NO_COLOR=1 '" + argv[2] + "' " + args + " 2>/dev/null";
    const std::vector<std::string> got = run(cmd);
    if (block_matches(want, got)) {
      std::cout << "ok    README.md:" << start_line << ": mlactl " << args << "\n";
      continue;
    }
    ++failed;
    std::cout << "FAIL  README.md:" << start_line << ": mlactl " << args << "\n--- README shows:\n";
    for (const auto& l : want) std::cout << l << "\n";
    std::cout << "--- mlactl prints:\n";
    for (const auto& l : got) std::cout << l << "\n";
    std::cout << "---\n";
  }
  std::cout << examples << " README examples, " << failed << " differ\n";
  if (examples == 0) return 1;  // the README lost its examples, or this test its parser
  return failed ? 1 : 0;
}
