// Python's own formatting rules, which templates print through: float repr, json.dumps, and
// str.split. Expected strings are what CPython 3.11 prints for the same values.
#include <gtest/gtest.h>

#include <limits>

#include "chat/py_string.h"
#include "chat/value.h"
#include "chat/value_json.h"

namespace lumen::chat {
namespace {

TEST(ChatPyFloatRepr, MatchesCPython) {
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(1e22), "1e+22");
  EXPECT_EQ(py_float_repr(1e-7), "1e-07");
  EXPECT_EQ(py_float_repr(123.456), "123.456");
  EXPECT_EQ(py_float_repr(5e-324), "5e-324");
  EXPECT_EQ(py_float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(py_float_repr(100.0), "100.0");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(0.00001234), "1.234e-05");
  EXPECT_EQ(py_float_repr(-2.5), "-2.5");
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(ChatPySplit, MatchesCPython) {
  using V = std::vector<std::string>;
  EXPECT_EQ(py_split("a b  c", std::string(" "), -1), (V{"a", "b", "", "c"}));
  EXPECT_EQ(py_split("  a  b ", std::nullopt, 1), (V{"a", "b "}));
  EXPECT_EQ(py_rsplit("a  b  ", std::nullopt, 1), (V{"a", "b"}));
  EXPECT_EQ(py_rsplit("  a b c", std::nullopt, 1), (V{"  a b", "c"}));
  EXPECT_EQ(py_split(" x  y z ", std::nullopt, 1), (V{"x", "y z "}));
  EXPECT_EQ(py_split("", std::string(","), -1), (V{""}));
  EXPECT_EQ(py_split("", std::nullopt, -1), V{});
}

TEST(ChatJsonDump, IndentAndEscapesMatchJsonDumps) {
  auto v = from_json(nlohmann::ordered_json::parse(R"({"a": [1, {"b": null}], "c": "x"})"));
  JsonDumpOptions indented;
  indented.indent = "  ";
  EXPECT_EQ(dump_json(v, indented),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"x\"\n}");
  EXPECT_EQ(dump_json(Value("\u2028\x7f\x1f"), {}), "\"\u2028\x7f\\u001f\"");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(dump_json(Value("😀é"), ascii), "\"\\ud83d\\ude00\\u00e9\"");
}

TEST(ChatUtf8, ValidationRejectsMalformedInput) {
  EXPECT_TRUE(utf8_valid("héllo 日本 😀"));
  EXPECT_FALSE(utf8_valid("\xff"));
  EXPECT_FALSE(utf8_valid("\xc0\xaf"));          // overlong
  EXPECT_FALSE(utf8_valid("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(utf8_valid("\xe6\x97"));          // truncated
}

}  // namespace
}  // namespace lumen::chat
