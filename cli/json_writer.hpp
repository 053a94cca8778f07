// A streaming JSON writer: the bytes nlohmann's dump(2) (pretty) or dump() (compact)
// would print for the same document, written as the document is walked instead of
// built as one DOM first. The large arrays of `metadata`, `schedule` and `windows`
// (67M index entries for 16,384 requests x 4096 tokens) go element by element into a
// 64 KiB buffer; the small parts (envelope, route object) are ordinary ordered_json
// values written through value(). Strings are escaped by nlohmann itself with the
// replace handler, as json_text() does: bytes that are not UTF-8 become U+FFFD.
#pragma once
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlactl::cli {

// nlohmann's dump() leaves the C1 controls (U+0080..U+009F) as they are: a terminal
// showing the JSON would obey them (U+009B is CSI). `text`, a dump() of valid UTF-8,
// with each as its \u escape: the same JSON value (issue 39).
std::string escape_c1_controls(std::string text);

class JsonWriter {
 public:
  JsonWriter(std::ostream& os, bool compact);
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  ~JsonWriter();  // flushes what is buffered (finish() also ends the line)

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // An object member's name; the next call writes its value.
  JsonWriter& key(std::string_view k);

  // A whole value, nested objects and arrays in the writer's layout.
  JsonWriter& value(const nlohmann::ordered_json& j);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(double d);
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T v) {
    before_value();
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(std::string_view(buf, (size_t)(r.ptr - buf)));
    return *this;
  }
  // An array of integers (std::vector<int32_t>, <int64_t>, std::array, ...), element by
  // element: the hot loop of the large outputs (one separator + digits per entry).
  template <class V>
  JsonWriter& int_array(const V& v) {
    begin_array();
    if (std::begin(v) == std::end(v)) return end_array();
    std::string sep = compact_ ? std::string(",") : ",\n" + std::string(2 * stack_.size(), ' ');
    const char* first_sep = sep.data() + 1;  // "\n" + indent (pretty), nothing (compact)
    size_t first_len = sep.size() - 1;
    for (const auto& x : v) {
      if (len_ + sep.size() + 24 > kFlushBytes) flush();
      char* p = buf_.get() + len_;
      if (first_len != (size_t)-1) {
        std::memcpy(p, first_sep, first_len);
        p += first_len;
        first_len = (size_t)-1;
      } else {
        std::memcpy(p, sep.data(), sep.size());
        p += sep.size();
      }
      p = std::to_chars(p, p + 24, x).ptr;
      len_ = (size_t)(p - buf_.get());
    }
    stack_.back().empty = false;
    return end_array();
  }
  // key + value in one call
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  // Every member of a small object, written into the object that is open.
  JsonWriter& members(const nlohmann::ordered_json& obj);

  // Ends the document: a newline, as print_json() writes, and a flush.
  void finish();

 private:
  static constexpr size_t kFlushBytes = 1 << 16;  // also the largest indent: 32,768 levels, far past any document here
  void before_value();
  JsonWriter& close(char bracket);  // end_object / end_array
  void put(std::string_view s) {
    if (len_ + s.size() > kFlushBytes) {
      flush();
      if (s.size() > kFlushBytes) return write_through(s);
    }
    std::memcpy(buf_.get() + len_, s.data(), s.size());
    len_ += s.size();
  }
  void put(char c) {
    if (len_ + 1 > kFlushBytes) flush();
    buf_[len_++] = c;
  }
  void indent(size_t n) {
    if (len_ + n > kFlushBytes) flush();
    std::memset(buf_.get() + len_, ' ', n);
    len_ += n;
  }
  void write_through(std::string_view s);
  void put_string(std::string_view s);  // quoted and escaped
  void flush();

  struct Level {
    bool object;
    bool empty;
  };
  std::ostream& os_;
  const bool compact_;
  std::unique_ptr<char[]> buf_;  // kFlushBytes
  size_t len_ = 0;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

// The document `write` writes, as a DOM (for `check`, which compares a fixture's
// `expect` with the same JSON the verbs print).
nlohmann::ordered_json json_from_writer(const std::function<void(JsonWriter&)>& write);

}  // namespace mlactl::cli
