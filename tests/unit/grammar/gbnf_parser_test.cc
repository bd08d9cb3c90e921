// GBNF parsing: every grammar of the shared test data parses; what llama.cpp refuses is
// refused, with the place in the message; hostile grammars are refused quickly.
#include <gtest/gtest.h>

#include <chrono>

#include "lumen_testdata.h"
#include "grammar/grammar.h"
#include "grammar/grammar_rules.h"
#include "real_vocabulary.h"

namespace lumen::grammar {
namespace {

TEST(GbnfParser, EveryTestDataGrammarParses) {
  LUMEN_REQUIRE_TESTDATA();
  for (const char* name : {"arithmetic.gbnf", "c.gbnf", "chess.gbnf", "english.gbnf", "japanese.gbnf", "json.gbnf",
                           "json_arr.gbnf", "list.gbnf"}) {
    std::string text = testing::read_grammar_file(name);
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_NO_THROW(parse_gbnf(text)) << name;
  }
}

size_t error_offset(std::string_view text, std::string_view root = "root") {
  try {
    parse_gbnf(text, root);
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("line "), std::string::npos) << e.what();
    return e.offset;
  }
  ADD_FAILURE() << "accepted: " << text;
  return ~size_t{0};
}

TEST(GbnfParser, RefusesWhatLlamaCppRefuses) {
  error_offset("root ::= \"a\"{,}\"");
  error_offset("root ::= \"a\"{,10}\"");
  error_offset("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}");
  error_offset("root ::= term\nterm ::= numero");  // undefined rule
  error_offset("root ::= \"a\" | root \"a\"");        // direct left recursion
  error_offset("root ::= a\na ::= b \"x\"\nb ::= a \"y\" | \"z\"");  // indirect
  error_offset("root ::= a\na ::= b? root \"x\"\nb ::= \"y\"");       // through a nullable prefix
  error_offset("root ::= (\"x\" | root) \"a\"");                     // through a group
  error_offset("main ::= \"a\"");                                     // no root
  error_offset("root ::= \"a\"", "start");                            // wrong root name
  error_offset("");
}

TEST(GbnfParser, ErrorPointsAtTheProblem) {
  std::string text = "root ::= \"a\"\nfoo ::= [a-z\n";
  size_t offset = error_offset(text);
  EXPECT_EQ(offset, text.find('['));
  try {
    parse_gbnf(text);
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2, column 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(error_offset("root ::= \"\\q\""), 10u);
  EXPECT_EQ(error_offset("root ::= x\nx ::= undefined-rule"), 17u);
}

TEST(GbnfParser, SyntaxErrors) {
  for (const char* text : {"root ::= \"abc", "root ::= [abc", "root ::= (\"a\"", "root ::= \"a\")", "root := \"a\"",
                           "root ::= *", "root ::= \"a\"{2,1}", "root ::= \"\\x4\"", "root ::= [z-a]",
                           "root ::= \"a\" \"b\" ::=", "root ::= <[10]>", "root ::= \"a\"{99999}",
                           "root ::= \"a\"\nroot ::= \"b\"", "root ::= \"\xff\""}) {
    error_offset(text);
  }
}

TEST(GbnfParser, NotationDetails) {
  // Escapes, classes, comments, multi-line groups, tail recursion through a nullable prefix.
  auto g = parse_gbnf(
      "# comment\nroot ::= \"\\x41\\u00e9\\U0001F600\\t\\\\\\\"\" [\\[\\]\\-a-c]* | # trailing\n"
      "  (\n  \"x\"\n  | \"y\" ) r\nr ::= [x]* r | \"z\"\n");
  // A line that starts with `|` does not continue the rule above (llama.cpp's rule).
  error_offset("root ::= \"a\"\n  | \"b\"");
  EXPECT_GT(g->rules.size(), 2u);
  EXPECT_NO_THROW(parse_gbnf("root ::= ( [x]* )*"));
  EXPECT_NO_THROW(parse_gbnf("root ::= [^\\x00-\\x7F]{0,3} . [a]{2} [b]{2,} [c]{0,}"));
}

TEST(GbnfParser, HostileGrammarsAreRefusedQuickly) {
  auto start = std::chrono::steady_clock::now();
  error_offset("root ::= ((((\"a\"{0,50}){0,50}){0,50}){0,50})");
  error_offset("root ::= " + std::string(2'000'000, 'a'));
  std::string deep = "root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')');
  error_offset(deep);
  // Wide is fine up to the element limit, then refused.
  std::string wide = "root ::= x{2000}\nx ::= y{2000}\ny ::= \"a\"";
  EXPECT_NO_THROW(parse_gbnf(wide));
  std::string huge = "root ::= \"" + std::string(600'000, 'a') + "\"{2}";
  error_offset(huge);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace lumen::grammar
