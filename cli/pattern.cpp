#include "cli/pattern.hpp"

#include <cctype>
#include <memory>

#include "core/types.hpp"

namespace mlactl::cli {

namespace {

constexpr size_t kMaxPatternBytes = 1000;
constexpr int kMaxRepeat = 100;
constexpr size_t kMaxProgram = 20000;  // instructions after {m,n} expansion
constexpr int kMaxNesting = 100;

struct Node {
  enum Kind { empty, bytes, begin, end, cat, alt, star, plus, quest, repeat } kind = empty;
  std::bitset<256> set;
  std::vector<std::unique_ptr<Node>> kids;
  int min = 0, max = 0;  // repeat; max < 0: unbounded
};
using NodeP = std::unique_ptr<Node>;

class Parser {
 public:
  Parser(const std::string& p, const std::string& opt) : p_(p), opt_(opt) {}
  NodeP parse() {
    NodeP n = alternation(0);
    if (i_ < p_.size()) fail(p_[i_] == ')' ? "unmatched ')'" : "unexpected character");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(kExitUsage, "", opt_ + ": bad pattern \"" + p_ + "\" at offset " + std::to_string(i_) + ": " + why);
  }
  bool more() const { return i_ < p_.size(); }
  char peek() const { return p_[i_]; }

  NodeP alternation(int depth) {
    if (depth > kMaxNesting) fail("groups nested too deeply");
    NodeP left = concatenation(depth);
    while (more() && peek() == '|') {
      ++i_;
      auto n = std::make_unique<Node>();
      n->kind = Node::alt;
      n->kids.push_back(std::move(left));
      n->kids.push_back(concatenation(depth));
      left = std::move(n);
    }
    return left;
  }
  NodeP concatenation(int depth) {
    auto n = std::make_unique<Node>();
    n->kind = Node::cat;
    while (more() && peek() != '|' && peek() != ')') n->kids.push_back(repetition(depth));
    return n;
  }
  int number() {
    if (!more() || !std::isdigit((unsigned char)peek())) fail("expected a number in {m,n}");
    int v = 0;
    while (more() && std::isdigit((unsigned char)peek())) {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail("repeat counts are at most " + std::to_string(kMaxRepeat));
      ++i_;
    }
    return v;
  }
  NodeP repetition(int depth) {
    NodeP a = atom(depth);
    while (more()) {
      const char c = peek();
      Node::Kind k;
      int mn = 0, mx = 0;
      if (c == '*') k = Node::star;
      else if (c == '+') k = Node::plus;
      else if (c == '?') k = Node::quest;
      else if (c == '{') {
        ++i_;
        mn = number();
        mx = mn;
        if (more() && peek() == ',') {
          ++i_;
          mx = more() && peek() == '}' ? -1 : number();
        }
        if (!more() || peek() != '}') fail("expected '}'");
        if (mx >= 0 && mx < mn) fail("{m,n} with n < m");
        k = Node::repeat;
      } else {
        break;
      }
      ++i_;
      if (a->kind == Node::begin || a->kind == Node::end) fail("nothing to repeat");
      auto n = std::make_unique<Node>();
      n->kind = k;
      n->min = mn;
      n->max = mx;
      n->kids.push_back(std::move(a));
      a = std::move(n);
    }
    return a;
  }
  // \d \w \s (and their negations) or an escaped byte
  std::bitset<256> escape() {
    if (!more()) fail("trailing backslash");
    const char c = p_[i_++];
    std::bitset<256> s;
    auto fill = [&s](int (*pred)(int)) {
      for (int b = 0; b < 256; ++b)
        if (pred(b)) s.set((size_t)b);
    };
    switch (c) {
      case 'd': case 'D': fill([](int b) { return b < 128 && std::isdigit(b) ? 1 : 0; }); break;
      case 'w': case 'W': fill([](int b) { return b < 128 && (std::isalnum(b) || b == '_') ? 1 : 0; }); break;
      case 's': case 'S': fill([](int b) { return b < 128 && std::isspace(b) ? 1 : 0; }); break;
      case 'n': s.set('\n'); break;
      case 't': s.set('\t'); break;
      default:
        if (std::isalnum((unsigned char)c)) fail(std::string("unknown escape \\") + c);
        s.set((unsigned char)c);
    }
    if (c == 'D' || c == 'W' || c == 'S') s.flip();
    return s;
  }
  std::bitset<256> bracket() {
    std::bitset<256> s;
    bool negate = false;
    if (more() && peek() == '^') {
      negate = true;
      ++i_;
    }
    bool first = true;
    while (true) {
      if (!more()) fail("unterminated '['");
      char c = peek();
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      std::bitset<256> one;
      unsigned char lo;
      if (c == '\\') {
        ++i_;
        one = escape();
        if (one.count() != 1) {
          s |= one;
          continue;
        }
        lo = 0;
        while (!one.test(lo)) ++lo;
      } else {
        lo = (unsigned char)c;
        ++i_;
      }
      if (i_ + 1 < p_.size() && peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        unsigned char hi = (unsigned char)p_[i_++];
        if (hi == '\\') {
          std::bitset<256> h = escape();
          if (h.count() != 1) fail("a class cannot end a range");
          hi = 0;
          while (!h.test(hi)) ++hi;
        }
        if (hi < lo) fail("range out of order");
        for (int b = lo; b <= hi; ++b) s.set((size_t)b);
      } else {
        s.set(lo);
      }
    }
    if (negate) s.flip();
    return s;
  }
  NodeP atom(int depth) {
    auto n = std::make_unique<Node>();
    const char c = peek();
    ++i_;
    switch (c) {
      case '(': {
        if (i_ + 1 < p_.size() && peek() == '?' && p_[i_ + 1] == ':') i_ += 2;
        NodeP inner = alternation(depth + 1);
        if (!more() || peek() != ')') fail("missing ')'");
        ++i_;
        return inner;
      }
      case '[': n->kind = Node::bytes; n->set = bracket(); break;
      case '.': n->kind = Node::bytes; n->set.set(); n->set.reset('\n'); break;
      case '^': n->kind = Node::begin; break;
      case '$': n->kind = Node::end; break;
      case '\\': n->kind = Node::bytes; n->set = escape(); break;
      case '*': case '+': case '?': case '{': --i_; fail("nothing to repeat");
      default: n->kind = Node::bytes; n->set.set((unsigned char)c);
    }
    return n;
  }

  const std::string& p_;
  const std::string& opt_;
  size_t i_ = 0;
};

class Emitter {
 public:
  Emitter(std::vector<Pattern::Inst>& prog, const std::string& opt, const std::string& pat) : prog_(prog), opt_(opt), pat_(pat) {}
  void emit(const Node& n) {
    if (prog_.size() > kMaxProgram)
      throw Error(kExitUsage, "", opt_ + ": pattern \"" + pat_ + "\" is too large (more than " + std::to_string(kMaxProgram) + " NFA states)");
    switch (n.kind) {
      case Node::empty: break;
      case Node::bytes: add(Pattern::Op::byte).bytes = n.set; break;
      case Node::begin: add(Pattern::Op::begin); break;
      case Node::end: add(Pattern::Op::end); break;
      case Node::cat:
        for (const auto& k : n.kids) emit(*k);
        break;
      case Node::alt: {
        const int split = at(Pattern::Op::split);
        prog_[split].x = size();
        emit(*n.kids[0]);
        const int jump = at(Pattern::Op::jump);
        prog_[split].y = size();
        emit(*n.kids[1]);
        prog_[jump].x = size();
        break;
      }
      case Node::star: star(*n.kids[0]); break;
      case Node::plus: {
        const int top = size();
        emit(*n.kids[0]);
        const int split = at(Pattern::Op::split);
        prog_[split].x = top;
        prog_[split].y = size();
        break;
      }
      case Node::quest: quest(*n.kids[0]); break;
      case Node::repeat:
        for (int i = 0; i < n.min; ++i) emit(*n.kids[0]);
        if (n.max < 0) star(*n.kids[0]);
        else
          for (int i = n.min; i < n.max; ++i) quest(*n.kids[0]);
        break;
    }
  }

 private:
  int size() const { return (int)prog_.size(); }
  Pattern::Inst& add(Pattern::Op op) {
    prog_.emplace_back();
    prog_.back().op = op;
    return prog_.back();
  }
  int at(Pattern::Op op) {
    add(op);
    return size() - 1;
  }
  void star(const Node& k) {
    const int split = at(Pattern::Op::split);
    prog_[split].x = size();
    emit(k);
    at(Pattern::Op::jump);
    prog_.back().x = split;
    prog_[split].y = size();
  }
  void quest(const Node& k) {
    const int split = at(Pattern::Op::split);
    prog_[split].x = size();
    emit(k);
    prog_[split].y = size();
  }
  std::vector<Pattern::Inst>& prog_;
  const std::string& opt_;
  const std::string& pat_;
};

}  // namespace

Pattern::Pattern(const std::string& pattern, const std::string& option) {
  if (pattern.size() > kMaxPatternBytes)
    throw Error(kExitUsage, "", option + ": the pattern has " + std::to_string(pattern.size()) + " bytes, more than " + std::to_string(kMaxPatternBytes));
  Parser parser(pattern, option);
  NodeP root = parser.parse();
  Emitter(prog_, option, pattern).emit(*root);
  prog_.emplace_back();
  prog_.back().op = Op::match;
}

// Pike VM: the set of live states advances one byte at a time; each state is added once
// per step (the `mark` generation), so empty loops such as (a*)* terminate.
bool Pattern::search(const std::string& text) const {
  const int n = (int)prog_.size();
  std::vector<int> cur, next, stack;
  std::vector<size_t> mark((size_t)n, (size_t)-1);
  size_t gen = 0;
  // adds pc and its epsilon closure at position pos; true when it reaches `match`
  auto add = [&](std::vector<int>& list, int pc0, size_t pos) {
    stack.assign(1, pc0);
    while (!stack.empty()) {
      const int pc = stack.back();
      stack.pop_back();
      if (mark[(size_t)pc] == gen) continue;
      mark[(size_t)pc] = gen;
      const Inst& in = prog_[(size_t)pc];
      switch (in.op) {
        case Op::byte: list.push_back(pc); break;
        case Op::match: return true;
        case Op::jump: stack.push_back(in.x); break;
        case Op::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Op::begin:
          if (pos == 0) stack.push_back(pc + 1);
          break;
        case Op::end:
          if (pos == text.size()) stack.push_back(pc + 1);
          break;
      }
    }
    return false;
  };
  for (size_t pos = 0;; ++pos) {
    // a new attempt may start at every position (search, not match)
    if (add(cur, 0, pos)) return true;
    if (pos == text.size()) return false;
    ++gen;
    next.clear();
    const unsigned char c = (unsigned char)text[pos];
    for (int pc : cur)
      if (prog_[(size_t)pc].bytes.test(c) && add(next, pc + 1, pos + 1)) return true;
    std::swap(cur, next);
  }
}

}  // namespace mlactl::cli
