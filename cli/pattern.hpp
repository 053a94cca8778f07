// A regular-expression matcher that cannot backtrack: `check --filter/--exclude` match
// case ids with it (docs/design.md §6). std::regex (libstdc++) backtracks, so a nested
// pattern such as "(a*)*b" against a 30-character id ran for minutes; this one compiles
// the pattern to a Thompson NFA and simulates it (Pike VM without captures), so a match
// costs O(pattern size x id length) whatever the pattern.
//
// Syntax (an ERE subset, what filters need): literals, `.`, `[...]` with ranges and `^`
// negation, `\d \D \w \W \s \S` and escaped metacharacters, `*`, `+`, `?`, `{m}`, `{m,}`,
// `{m,n}` (m, n <= 100), `|`, `(...)`, `(?:...)`, `^`, `$`. Search semantics (like
// std::regex_search): a match anywhere in the text.
#pragma once
#include <bitset>
#include <string>
#include <vector>

namespace mlactl::cli {

class Pattern {
 public:
  // Throws Error(kExitUsage) naming `option` and the position of a syntax error.
  Pattern(const std::string& pattern, const std::string& option);
  bool search(const std::string& text) const;

  enum class Op { byte, split, jump, begin, end, match };
  struct Inst {
    Op op = Op::match;
    int x = 0, y = 0;         // split: both targets; jump: x
    std::bitset<256> bytes;   // byte: the bytes it accepts
  };

 private:
  std::vector<Inst> prog_;
};

}  // namespace mlactl::cli
