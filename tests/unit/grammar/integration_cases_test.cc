// llama.cpp's grammar integration cases (shared test data): strings a grammar must accept
// completely, and strings it must refuse (a character it cannot take, or an incomplete end).
//
// Only the cases of kind "grammar" run here. The "json_schema" cases need the JSON Schema
// converter (grammar/json_schema_to_gbnf.h, another branch); they join this test when it lands.
// The two cases that use llama.cpp's token syntax (<[id]>, !<[id]>) are refused by design (the
// matcher runs on text): this test checks that they are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "grammar/grammar_matcher.h"
#include "lumen_testdata.h"
#include "real_vocabulary.h"

namespace lumen::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> tiny_vocabulary() {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  bytes.push_back("");  // end of generation
  return std::make_shared<TokenVocabulary>(bytes, std::vector<bool>{}, std::vector<int32_t>{256});
}

// The llama.cpp rule: every code point accepted and some stack complete at the end.
bool matches(const std::shared_ptr<const CompiledGrammar>& compiled, const std::string& text) {
  GrammarMatcher matcher(compiled);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

TEST(GrammarIntegrationCases, GrammarKindHold) {
  LUMEN_REQUIRE_TESTDATA();
  std::ifstream in(std::string(LUMEN_TESTDATA_DIR) + "/grammars/grammar-integration-cases.json");
  nlohmann::json cases = nlohmann::json::parse(in);
  auto vocabulary = tiny_vocabulary();
  int ran = 0, token_cases = 0;
  for (const auto& c : cases) {
    if (c["kind"] != "grammar") continue;
    std::string text = c["grammar"];
    SCOPED_TRACE(c["desc"].get<std::string>());
    if (text.find('<') != std::string::npos) {
      EXPECT_THROW(parse_gbnf(text), GrammarError);
      ++token_cases;
      continue;
    }
    auto compiled = compile_grammar(parse_gbnf(text), vocabulary);
    for (const auto& s : c["pass"]) EXPECT_TRUE(matches(compiled, s.get<std::string>())) << "should pass: " << s;
    for (const auto& s : c["fail"]) EXPECT_FALSE(matches(compiled, s.get<std::string>())) << "should fail: " << s;
    ++ran;
  }
  EXPECT_EQ(ran, 12);
  EXPECT_EQ(token_cases, 2);
}

}  // namespace
}  // namespace lumen::grammar
