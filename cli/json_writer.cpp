#include "cli/json_writer.hpp"

#include <cstdio>

#include <ostream>
#include <sstream>

namespace mlactl::cli {

using ojson = nlohmann::ordered_json;

std::string escape_c1_controls(std::string text) {
  // dump()'s output is valid UTF-8, so 0xc2 is always a lead byte
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const unsigned char c1 = (unsigned char)text[i + 1];
    if ((unsigned char)text[i] != 0xc2 || c1 < 0x80 || c1 > 0x9f) continue;
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\u%04x", c1);
    text.replace(i, 2, esc);
  }
  return text;
}

JsonWriter::JsonWriter(std::ostream& os, bool compact) : os_(os), compact_(compact), buf_(new char[kFlushBytes]) {}

JsonWriter::~JsonWriter() { flush(); }

void JsonWriter::flush() {
  if (len_) os_.write(buf_.get(), (std::streamsize)len_);
  len_ = 0;
}

void JsonWriter::write_through(std::string_view s) { os_.write(s.data(), (std::streamsize)s.size()); }

// nlohmann's serializer::dump layout: "{\n", members at indent + 2 each on its own line
// joined by ",\n", then "\n" + indent + "}"; an empty container is "{}" / "[]"; compact
// is the same without newlines and indents, and ":" without its space.
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level& l = stack_.back();
  if (compact_) {
    if (!l.empty) put(',');
  } else {
    put(l.empty ? std::string_view("\n") : std::string_view(",\n"));
    indent(2 * stack_.size());
  }
  l.empty = false;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  put('{');
  stack_.push_back({true, true});
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  put('[');
  stack_.push_back({false, true});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty && !compact_) {
    put('\n');
    indent(2 * stack_.size());
  }
  put(bracket);
  return *this;
}

JsonWriter& JsonWriter::end_object() { return close('}'); }

JsonWriter& JsonWriter::end_array() { return close(']'); }

void JsonWriter::put_string(std::string_view s) {
  // printable ASCII without '"' or '\\' is written as it is; anything else is escaped by
  // nlohmann (control bytes, U+FFFD for invalid UTF-8) so the bytes are dump()'s
  bool plain = true;
  for (const char ch : s) {
    const unsigned char c = (unsigned char)ch;
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    put('"');
    put(s);
    put('"');
    return;
  }
  put(escape_c1_controls(ojson(std::string(s)).dump(-1, ' ', false, ojson::error_handler_t::replace)));
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  put_string(k);
  put(compact_ ? std::string_view(":") : std::string_view(": "));
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  put_string(s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  put(b ? std::string_view("true") : std::string_view("false"));
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  // nlohmann's own number format (shortest round trip, "1.0", NaN and infinities as null)
  before_value();
  put(ojson(d).dump());
  return *this;
}

JsonWriter& JsonWriter::members(const ojson& obj) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    key(it.key());
    value(it.value());
  }
  return *this;
}

JsonWriter& JsonWriter::value(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::object:
      begin_object();
      members(j);
      return end_object();
    case ojson::value_t::array:
      begin_array();
      for (const auto& x : j) value(x);
      return end_array();
    case ojson::value_t::string: return value(std::string_view(j.get_ref<const std::string&>()));
    case ojson::value_t::boolean: return value(j.get<bool>());
    case ojson::value_t::number_integer: return value(j.get<int64_t>());
    case ojson::value_t::number_unsigned: return value(j.get<uint64_t>());
    case ojson::value_t::number_float: return value(j.get<double>());
    case ojson::value_t::null:
    case ojson::value_t::discarded:
    case ojson::value_t::binary:
      break;
  }
  before_value();
  put(j.is_null() ? std::string("null") : j.dump(-1, ' ', false, ojson::error_handler_t::replace));
  return *this;
}

void JsonWriter::finish() {
  put('\n');
  flush();
  os_.flush();
}

ojson json_from_writer(const std::function<void(JsonWriter&)>& write) {
  std::ostringstream os;
  {
    JsonWriter w(os, true);
    write(w);
  }
  return ojson::parse(os.str());
}

}  // namespace mlactl::cli
