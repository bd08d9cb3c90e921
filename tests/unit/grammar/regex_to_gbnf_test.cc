// Regex and choice -> GBNF through the real matcher. (tests/python/test_grammar_convert.py
// compares the regex grammars with Python's re.fullmatch on many random strings.)
#include "grammar/regex_to_gbnf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar_walk.h"

namespace lumen::grammar {
namespace {

using lumen::testing::compile_for_bytes;
using lumen::testing::grammar_accepts;

struct RegexCase {
  const char* pattern;
  std::vector<std::string> matches, non_matches;
};

TEST(RegexToGbnf, MatchesWholeStrings) {
  const std::vector<RegexCase> cases = {
      {"abc", {"abc"}, {"ab", "abcd", ""}},
      {"^a(b|c)*d$", {"ad", "abcbd"}, {"a", "abd ", "bd"}},
      {"[a-z]{2,3}\\d?", {"ab", "abc", "abc1", "ab1"}, {"a", "abcd", "AB"}},
      {"[^a-c]+", {"xyz", "é", "d"}, {"a", "xa", ""}},
      {"a.c", {"abc", "a c", "aéc"}, {"a\nc", "ac"}},
      {"(?:x|yz)+(?P<n>0)?", {"x", "yzx0", "xyz"}, {"y", "0"}},
      {"\\w+@\\w+\\.com", {"me@host.com", "a_1@b.com"}, {"me@host.org", "@b.com"}},
      {"[\\]\\-\\\\]+", {"]", "-\\]"}, {"a"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,}", {"aa", "aaaaa"}, {"a"}},
      {"a{,2}b", {"b", "ab", "aab"}, {"aaab"}},
      {"x{", {"x{"}, {"x"}},
      {"\\x41\\u00e9\\t", {"A\xc3\xa9\t"}, {"Ae\t"}},
      {"colou?r|gr[ae]y", {"color", "colour", "gray", "grey"}, {"colr", "graey"}},
      {"\\s\\S\\D\\W", {" a.!"}, {"  1a"}},
      {"a*?b+?", {"b", "aab"}, {"a"}},
      {"()|a", {"", "a"}, {"aa"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pattern);
    std::string gbnf;
    ASSERT_NO_THROW(gbnf = regex_to_gbnf(c.pattern));
    const auto compiled = compile_for_bytes(gbnf);
    for (const auto& text : c.matches) EXPECT_TRUE(grammar_accepts(compiled, text)) << text << "\n" << gbnf;
    for (const auto& text : c.non_matches) EXPECT_FALSE(grammar_accepts(compiled, text)) << text << "\n" << gbnf;
  }
}

TEST(RegexToGbnf, UnsupportedSyntaxIsRefusedWithItsOffset) {
  const std::vector<std::pair<const char*, size_t>> cases = {
      {"ab(?=c)", 2}, {"a\\bc", 1}, {"(a)\\1", 3}, {"a**", 2}, {"(ab", 0}, {"ab)", 2}, {"[ab", 0},
      {"[z-a]", 2},  {"a^b", 1},   {"a$b", 1},    {"*a", 0},  {"a{5,2}", 1}, {"\\", 0}, {"a++", 2},
  };
  for (const auto& [pattern, offset] : cases) {
    SCOPED_TRACE(pattern);
    try {
      regex_to_gbnf(pattern);
      ADD_FAILURE() << "accepted";
    } catch (const GrammarError& error) {
      EXPECT_EQ(error.offset, offset) << error.what();
    }
  }
}

TEST(RegexToGbnf, HugeRepetitionsAreBounded) {
  EXPECT_THROW(regex_to_gbnf("a{100000}"), GrammarError);
  const std::string gbnf = regex_to_gbnf("a{0,100000000}");
  EXPECT_NE(gbnf.find("{0,4096}"), std::string::npos) << gbnf;
}

TEST(ChoiceToGbnf, EscapesEveryChoiceExactly) {
  const std::vector<std::string> choices = {"plain", "with \"quotes\"", "back\\slash", "new\nline", "tab\tand\x01",
                                            "caf\xc3\xa9 \xf0\x9f\x98\x80", "", "[x] | (y)*"};
  const auto compiled = compile_for_bytes(choice_to_gbnf(choices));
  for (const auto& choice : choices) EXPECT_TRUE(grammar_accepts(compiled, choice)) << choice;
  for (const char* other : {"plai", "with quotes", "back\\\\slash", "[x]", "caf\xc3\xa9"}) {
    EXPECT_FALSE(grammar_accepts(compiled, other)) << other;
  }
  EXPECT_THROW(choice_to_gbnf(std::vector<std::string>{}), GrammarError);
  EXPECT_THROW(choice_to_gbnf(std::vector<std::string>{"bad \xff byte"}), GrammarError);
}

}  // namespace
}  // namespace lumen::grammar
