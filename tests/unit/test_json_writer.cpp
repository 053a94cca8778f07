// cli/json_writer.hpp: the bytes of nlohmann's dump(2) / dump() for the same document,
// whether written from a DOM (value()) or member by member (begin/key/int_array).
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/json_writer.hpp"

using mlactl::cli::JsonWriter;
using ojson = nlohmann::ordered_json;

namespace {
std::string written(const ojson& j, bool compact) {
  std::ostringstream os;
  JsonWriter w(os, compact);
  w.value(j).finish();
  return os.str();
}
std::string dumped(const ojson& j, bool compact) {
  return (compact ? j.dump(-1, ' ', false, ojson::error_handler_t::replace) : j.dump(2, ' ', false, ojson::error_handler_t::replace)) + "\n";
}
}  // namespace

TEST_CASE("json writer: a DOM written as nlohmann dumps it, pretty and compact", "[json_writer]") {
  const ojson j = ojson::parse(R"({"a": 1, "b": [], "c": {}, "d": [1, -2, [3, []], {"x": {}}], "e": {"f": [true, false, null]},
      "g": 0.1, "h": 1.0, "i": -1e300, "j": 18446744073709551615, "k": -9223372036854775808, "l": "q\"uo\\te\n\t\u0001\u007f é"})");
  for (bool compact : {false, true}) CHECK(written(j, compact) == dumped(j, compact));
  // NaN and infinities print as null, as dump() does
  ojson f = {{"nan", std::nan("")}, {"inf", HUGE_VAL}};
  CHECK(written(f, false) == dumped(f, false));
  // bytes that are not UTF-8 become U+FFFD, as json_text() does
  ojson bad = {{"s\xff", std::string("a\xff\xfe")}};
  CHECK(written(bad, true) == dumped(bad, true));
  CHECK(written(bad, true) == "{\"s\xef\xbf\xbd\":\"a\xef\xbf\xbd\xef\xbf\xbd\"}\n");
}

TEST_CASE("json writer: streamed arrays equal the DOM's bytes", "[json_writer]") {
  std::vector<int32_t> big(200000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = (int32_t)(i * 2654435761u);  // crosses the 64 KiB buffer many times
  const std::vector<int64_t> empty;
  const std::array<int32_t, 3> row = {1, -2, 3};
  for (bool compact : {false, true}) {
    std::ostringstream os;
    {
      JsonWriter w(os, compact);
      w.begin_object().field("n", 3).key("big").int_array(big).key("empty").int_array(empty);
      w.key("rows").begin_array().int_array(row).int_array(row).end_array();
      w.key("nested").begin_object().key("inner").begin_object().end_object().end_object();
      w.end_object().finish();
    }
    ojson j;
    j["n"] = 3;
    j["big"] = big;
    j["empty"] = empty;
    j["rows"] = {row, row};
    j["nested"] = {{"inner", ojson::object()}};
    CHECK(os.str() == dumped(j, compact));
  }
}

TEST_CASE("json writer: json_from_writer gives the DOM back", "[json_writer]") {
  const ojson j = mlactl::cli::json_from_writer([](JsonWriter& w) { w.begin_object().field("a", 1).key("b").int_array(std::vector<int>{1, 2}).end_object(); });
  CHECK(j == ojson::parse(R"({"a": 1, "b": [1, 2]})"));
}
