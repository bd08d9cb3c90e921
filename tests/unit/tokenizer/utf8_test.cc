#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace lumen::tokenizer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, ValidTextIsUnchanged) {
  std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99";  // a é € 🦙
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(sanitize_utf8(text), text);
}

// The Unicode Standard's own example (chapter 3, table 3-8, "U+FFFD for Non-Shortest Form
// Sequences" and the maximal-subpart practice): <61 F1 80 80 E1 80 C2 62 80 63 80 BF 64>
// becomes a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
TEST(Utf8, MaximalSubpartsBecomeOneReplacementEach) {
  std::string bad = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  EXPECT_FALSE(is_valid_utf8(bad));
  EXPECT_EQ(sanitize_utf8(bad), "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
}

TEST(Utf8, OverlongSurrogateAndOutOfRangeFormsAreInvalid) {
  // C0 80 (overlong NUL): C0 can never start a sequence, 80 is a stray continuation: 2 x FFFD.
  EXPECT_EQ(sanitize_utf8("\xC0\x80"), kFffd + kFffd);
  // ED A0 80 (a surrogate): ED only takes 80..9F next, so each byte is its own subpart.
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  // F4 90 80 80 (past U+10FFFF): likewise four.
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  // A truncated 4-byte sequence at the end is one subpart.
  EXPECT_EQ(sanitize_utf8("x\xF0\x9F\xA6"), "x" + kFffd);
}

TEST(Utf8, NextCodePointDecodesAndReplaces) {
  std::string text = "\xE2\x82\xAC\xFF!";
  size_t pos = 0;
  EXPECT_EQ(next_code_point(text, pos), U'\u20AC');
  EXPECT_EQ(pos, 3u);
  EXPECT_EQ(next_code_point(text, pos), kReplacementChar);
  EXPECT_EQ(pos, 4u);
  EXPECT_EQ(next_code_point(text, pos), U'!');
}

TEST(Utf8, EncodesEveryScalarValueAndRoundTrips) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s = to_utf8(cp);
    size_t pos = 0;
    ASSERT_EQ(next_code_point(s, pos), cp);
    ASSERT_EQ(pos, s.size());
  }
  EXPECT_EQ(to_utf8(0xD800), kFffd);
  EXPECT_EQ(to_utf8(0x110000), kFffd);
}

TEST(Utf8, CompletePrefixHoldsBackOnlyWhatCanStillComplete) {
  std::string euro = "\xE2\x82\xAC";
  EXPECT_EQ(complete_prefix_length("ab"), 2u);
  EXPECT_EQ(complete_prefix_length("ab\xE2"), 2u);
  EXPECT_EQ(complete_prefix_length("ab\xE2\x82"), 2u);
  EXPECT_EQ(complete_prefix_length("ab" + euro), 5u);
  EXPECT_EQ(complete_prefix_length("\xF0\x9F\xA6"), 0u);
  // Bytes that no continuation can fix are not held back.
  EXPECT_EQ(complete_prefix_length("a\x80"), 2u);
  EXPECT_EQ(complete_prefix_length("a\xE2\x41"), 3u);
  EXPECT_EQ(complete_prefix_length("a\xED\xA0"), 3u);  // would be a surrogate
  EXPECT_EQ(complete_prefix_length("a\xFF"), 2u);
}

}  // namespace
}  // namespace lumen::tokenizer
