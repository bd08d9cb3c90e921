// The matcher's own behaviour: end of generation, rollback, copies, jump-forward, bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "grammar/grammar_matcher.h"

namespace lumen::grammar {
namespace {

// Tokens: the 256 single bytes, then a few words, then EOS.
std::shared_ptr<const TokenVocabulary> small_vocabulary(std::vector<std::string> words = {}) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  for (auto& w : words) bytes.push_back(w);
  bytes.push_back("</s>");
  int32_t eos = static_cast<int32_t>(bytes.size() - 1);
  return std::make_shared<TokenVocabulary>(bytes, std::vector<bool>{}, std::vector<int32_t>{eos});
}

std::shared_ptr<const CompiledGrammar> compile(const std::string& text, std::vector<std::string> words = {}) {
  return compile_grammar(parse_gbnf(text), small_vocabulary(std::move(words)));
}

TEST(GrammarMatcher, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  auto compiled = compile("root ::= \"ab\" \"c\"?");
  GrammarMatcher m(compiled);
  int32_t eos = 256;
  EXPECT_FALSE(m.accept_token(eos));
  EXPECT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.can_terminate());
  GrammarMatcher fork = m;
  EXPECT_TRUE(m.accept_token(eos));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_bytes("c"));
  std::vector<uint32_t> mask(bitmask_words(257));
  m.fill_next_token_bitmask(mask);
  for (uint32_t w : mask) EXPECT_EQ(w, 0u);
  // The fork did not see the EOS.
  EXPECT_FALSE(fork.is_terminated());
  EXPECT_TRUE(fork.accept_bytes("c"));
  EXPECT_FALSE(fork.accept_bytes("c"));
}

TEST(GrammarMatcher, RefusedTokensChangeNothing) {
  auto compiled = compile("root ::= \"abc\"", {"ab", "abd", ""});
  GrammarMatcher m(compiled);
  EXPECT_FALSE(m.accept_token(257));       // "abd"
  EXPECT_FALSE(m.accept_token(258));       // the empty token is never allowed
  EXPECT_FALSE(m.accept_token(-1));
  EXPECT_FALSE(m.accept_token(100000));
  EXPECT_TRUE(m.accept_token(256));        // "ab"
  EXPECT_EQ(m.forced_continuation(), "c");
}

TEST(GrammarMatcher, RollbackIsBounded) {
  auto compiled = compile("root ::= [a-z]*");
  GrammarMatcher m(compiled, 4);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(m.accept_bytes("x"));
  EXPECT_EQ(m.rollback_available(), 4);
  EXPECT_THROW(m.rollback(5), Error);
  m.rollback(4);
  EXPECT_EQ(m.rollback_available(), 0);
}

TEST(GrammarMatcher, ForcedContinuation) {
  auto compiled = compile(
      "root ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws [a-z]+ \"}\"\nws ::= \"\"");
  GrammarMatcher m(compiled);
  EXPECT_EQ(m.forced_continuation(), "{\"name\":");
  ASSERT_TRUE(m.accept_bytes("{\"name\":ab"));
  EXPECT_EQ(m.forced_continuation(), "");
  // Nothing is forced where the grammar may end.
  auto optional = compile("root ::= \"ab\" \"cd\"?");
  GrammarMatcher o(optional);
  ASSERT_TRUE(o.accept_bytes("ab"));
  EXPECT_EQ(o.forced_continuation(), "");
  // Whole characters only: é is C3 A9, and the class forces the C3 but not the second byte.
  auto utf8 = compile("root ::= \"x\" [é-ê]");
  GrammarMatcher u(utf8);
  EXPECT_EQ(u.forced_continuation(), "x");
  auto one = compile("root ::= \"é\"");
  EXPECT_EQ(GrammarMatcher(one).forced_continuation(), "é");
}

TEST(GrammarMatcher, PartialUtf8AcrossTokens) {
  auto compiled = compile("root ::= \"日本\"");
  GrammarMatcher m(compiled);
  std::string text = "日本";
  for (char c : text) ASSERT_TRUE(m.accept_bytes(std::string(1, c)));
  EXPECT_TRUE(m.can_terminate());
  GrammarMatcher bad(compiled);
  EXPECT_TRUE(bad.accept_bytes(text.substr(0, 2)));
  EXPECT_FALSE(bad.can_terminate());  // inside a character
  EXPECT_FALSE(bad.accept_bytes("\x41"));  // not a continuation byte
  EXPECT_FALSE(GrammarMatcher(compiled).accept_bytes("\xE6\x9C\xAC"));  // 本 (E6 9C AC) cannot come first
}

TEST(GrammarMatcher, InvalidUtf8IsRefused) {
  auto compiled = compile("root ::= .*");
  for (std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF5\x80\x80\x80", "\xFF"}) {
    GrammarMatcher m(compiled);
    EXPECT_FALSE(m.accept_bytes(bad)) << "bytes of size " << bad.size();
  }
  GrammarMatcher m(compiled);
  EXPECT_TRUE(m.accept_bytes("\xF0\x9F\x98\x80"));  // 😀
}

TEST(GrammarMatcher, CopiesAreIndependent) {
  auto compiled = compile("root ::= (\"a\" | \"b\")*");
  GrammarMatcher a(compiled);
  ASSERT_TRUE(a.accept_bytes("ab"));
  GrammarMatcher b = a;
  ASSERT_TRUE(a.accept_bytes("a"));
  ASSERT_TRUE(b.accept_bytes("b"));
  a.rollback(1);
  b.rollback(2);
  EXPECT_EQ(a.rollback_available(), 1);
  EXPECT_EQ(b.rollback_available(), 0);
  GrammarMatcher moved = std::move(a);
  EXPECT_TRUE(moved.accept_bytes("b"));
}

}  // namespace
}  // namespace lumen::grammar

namespace lumen::grammar {
namespace {

TEST(GrammarMatcher, AmbiguityCostsBoundedTime) {
  // Every 'a' doubles the distinct stacks: past the step's work limit the token is refused.
  auto compiled = compile("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"");
  GrammarMatcher m(compiled);
  auto start = std::chrono::steady_clock::now();
  int accepted = 0;
  for (int i = 0; i < 40; ++i) accepted += m.accept_bytes("a");
  EXPECT_LT(accepted, 40);
  EXPECT_GT(accepted, 8);
  std::vector<uint32_t> mask(bitmask_words(257));
  m.fill_next_token_bitmask(mask);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(LUMEN_UNDER_SANITIZERS ? 30 : 3));
}

TEST(GrammarMatcher, SharedCompiledGrammarAcrossThreads) {
  auto compiled = compile("root ::= \"{\" (\"\\\"k\\\":\" [0-9]+ (\",\" \"\\\"k\\\":\" [0-9]+)*)? \"}\"", {"{\"", "\":", "12", "},"});
  std::vector<std::thread> threads;
  std::vector<std::vector<uint32_t>> masks(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      GrammarMatcher m(compiled);
      masks[static_cast<size_t>(t)].resize(bitmask_words(261));
      for (char c : std::string("{\"k\":1")) m.accept_bytes(std::string(1, c));
      m.fill_next_token_bitmask(masks[static_cast<size_t>(t)]);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(masks[static_cast<size_t>(t)], masks[0]);
}

}  // namespace
}  // namespace lumen::grammar
