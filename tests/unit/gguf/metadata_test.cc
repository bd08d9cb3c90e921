#include "gguf/metadata.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace lumen::gguf {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Metadata, KeepsInsertionOrderAndReplacesInPlace) {
  Metadata md;
  md.set("b", Value::u32(1));
  md.set("a", Value::u32(2));
  md.set("b", Value::u32(3));
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md.entries()[0].first, "b");
  EXPECT_EQ(md.get_unsigned("b"), 3u);
  EXPECT_TRUE(md.erase("b"));
  EXPECT_EQ(md.entries()[0].first, "a");
  EXPECT_EQ(md.get_unsigned("a"), 2u);
}

TEST(Metadata, IntegerAccessorsAcceptAnyWidthThatFits) {
  Metadata md;
  md.set("u8", Value::of_unsigned(ValueType::U8, 7));
  md.set("i16", Value::of_signed(ValueType::I16, 9));
  md.set("neg", Value::i32(-1));
  EXPECT_EQ(md.get_unsigned("u8"), 7u);
  EXPECT_EQ(md.get_unsigned("i16"), 9u);
  EXPECT_EQ(md.get_signed("neg"), -1);
  EXPECT_NE(error_of([&] { md.get_unsigned("neg"); }).find("'neg'"), std::string::npos);
}

TEST(Metadata, ErrorsNameTheKeyAndTheProblem) {
  Metadata md;
  md.set("llama.block_count", Value::of_string("thirty"));
  EXPECT_EQ(error_of([&] { md.get_unsigned("llama.block_count"); }),
            "metadata key 'llama.block_count' has type string, expected an unsigned integer");
  EXPECT_EQ(error_of([&] { md.get_string("llama.context_length"); }),
            "missing required metadata key 'llama.context_length'");
  md.set("tokens", Value::f32_array(std::vector<float>{1.0f}));
  EXPECT_EQ(error_of([&] { md.get_array("tokens", ValueType::STRING); }),
            "metadata key 'tokens' is an array of f32, expected an array of string");
}

TEST(Metadata, OptionalAccessors) {
  Metadata md;
  md.set("f", Value::f32(0.5f));
  EXPECT_EQ(md.find_float("f"), 0.5);
  EXPECT_FALSE(md.find_float("g").has_value());
  EXPECT_THROW(md.find_bool("f"), Error);
  EXPECT_EQ(md.find_array("missing", ValueType::I32), nullptr);
}

}  // namespace
}  // namespace lumen::gguf
