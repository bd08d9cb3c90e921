// JSON Schema -> GBNF, run through the real matcher: llama.cpp's 73 converter cases and the
// json_schema integration cases from the shared test data, then our own cases for what those
// do not reach (integer ranges exhaustively, escapes, refs, limits).
#include "grammar/json_schema_to_gbnf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <utility>
#include <vector>
#include <string>

#include "grammar/grammar.h"
#include "grammar_walk.h"
#include "lumen_testdata.h"

namespace lumen::grammar {
namespace {

using lumen::testing::compile_for_bytes;
using lumen::testing::grammar_accepts;
using Json = nlohmann::ordered_json;

Json read_cases(const std::string& name) {
  std::ifstream in(std::string(LUMEN_TESTDATA_DIR) + "/grammars/" + name);
  return Json::parse(in);
}

// The looser whitespace (between tokens, not after the root): most cases below check what a
// schema allows, spelled as people and llama.cpp's grammars write JSON. The default, compact
// form has its own tests at the end.
const JsonSchemaOptions kAnyWhitespace{.compact_whitespace = false};

std::shared_ptr<const CompiledGrammar> compile_schema(const std::string& schema_text,
                                                      JsonSchemaOptions options = kAnyWhitespace) {
  return compile_for_bytes(json_schema_text_to_gbnf(schema_text, options));
}

// Cases where strings of llama.cpp's grammar may be refused by ours, on purpose:
const std::set<std::string> kDifferFromLlamaCpp = {
    // Ours is narrower (every string of ours still validates):
    "exotic formats",  // real calendar dates only (no 02-31, no year 0000)
    "mix of allOf, anyOf and $ref (similar to https://json.schemastore.org/tsconfig.json)",  // anyOf distributed
    // llama.cpp's grammar produces invalid JSON or values outside the schema:
    "regexp quote", "regexp",  // raw '"' and control characters inside a JSON string
    "optional props with empty name",  // its root rule is the integer rule (a name clash)
    "required + additional props", "optional + additional props", "required + optional + additional props",
    "optional props with nested names", "optional props with common prefix",  // raw control characters in keys
};

TEST(JsonSchemaToGbnf, LlamaCppCasesConvertOrFailAsSpecified) {
  LUMEN_REQUIRE_TESTDATA();
  const Json cases = read_cases("json-schema-to-grammar-cases.json");
  ASSERT_EQ(cases.size(), 73u);
  int failures = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    if (c["status"] == "FAILURE") {
      ++failures;
      EXPECT_THROW(json_schema_text_to_gbnf(c["schema"].get<std::string>()), GrammarError);
      continue;
    }
    std::string gbnf;
    ASSERT_NO_THROW(gbnf = json_schema_text_to_gbnf(c["schema"].get<std::string>()));
    EXPECT_NO_THROW(parse_gbnf(gbnf)) << gbnf;
  }
  EXPECT_EQ(failures, 2);
}

// Ours has no \u escapes of surrogates (a pair would be one character to a validator and two
// to the grammar's lengths); llama.cpp's strings with them are no test of ours.
bool has_surrogate_escape(const std::string& text) {
  for (size_t at = text.find("\\u"); at != std::string::npos; at = text.find("\\u", at + 1)) {
    if (at + 3 < text.size() && (text[at + 2] == 'd' || text[at + 2] == 'D') &&
        std::string("89abcdefABCDEF").find(text[at + 3]) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// llama.cpp's integer ranges let "-0" and "-0467" through; such strings are no test of ours.
bool has_negative_zero(const std::string& text) {
  for (size_t at = text.find("-0"); at != std::string::npos; at = text.find("-0", at + 1)) {
    if (at + 2 == text.size() || text[at + 2] != '.') return true;
  }
  return false;
}

// Strings llama.cpp's expected grammar produces are accepted by ours (where ours is not
// narrower on purpose): the two agree on what a schema allows.
TEST(JsonSchemaToGbnf, AcceptsWhatLlamaCppsGrammarsProduce) {
  LUMEN_REQUIRE_TESTDATA();
  std::mt19937_64 rng(7);
  for (const auto& c : read_cases("json-schema-to-grammar-cases.json")) {
    const std::string name = c["name"].get<std::string>();
    if (c["status"] != "SUCCESS" || kDifferFromLlamaCpp.count(name)) continue;
    SCOPED_TRACE(name);
    const auto expected = compile_for_bytes(c["expected_grammar"].get<std::string>());
    const auto ours = compile_schema(c["schema"].get<std::string>());
    int walked = 0;
    for (int i = 0; i < 60 && walked < 20; ++i) {
      bool dead_end = false;
      const auto text = lumen::testing::random_walk(expected, rng, 600, &dead_end);
      ASSERT_FALSE(dead_end);
      if (!text || has_negative_zero(*text) || has_surrogate_escape(*text)) continue;
      ++walked;
      // llama.cpp's root value may be followed by whitespace; ours ends where the value closes.
      const std::string value = text->substr(0, text->find_last_not_of(" \t\n") + 1);
      EXPECT_TRUE(grammar_accepts(ours, value)) << *text;
    }
    EXPECT_GT(walked, 0);
  }
}

TEST(JsonSchemaToGbnf, IntegrationCasesPassAndFail) {
  LUMEN_REQUIRE_TESTDATA();
  int cases = 0;
  for (const auto& c : read_cases("grammar-integration-cases.json")) {
    if (c["kind"] != "json_schema") continue;
    ++cases;
    SCOPED_TRACE(c["desc"].get<std::string>() + " " + c["schema"].get<std::string>());
    const auto compiled = compile_schema(c["schema"].get<std::string>());
    for (const auto& text : c["pass"]) EXPECT_TRUE(grammar_accepts(compiled, text.get<std::string>())) << text;
    for (const auto& text : c["fail"]) EXPECT_FALSE(grammar_accepts(compiled, text.get<std::string>())) << text;
  }
  EXPECT_GT(cases, 30);
}

// Every integer in a window, and leading-zero / "-0" spellings, against arithmetic.
TEST(JsonSchemaToGbnf, IntegerRangesAreExact) {
  const std::vector<std::pair<int, int>> ranges = {{0, 0},     {-1, 1},   {5, 30},  {-123, 42}, {-300, -15},
                                                   {99, 1001}, {-9, 9},   {10, 99}, {-1000, -1000}, {1, 109}};
  for (const auto& [lo, hi] : ranges) {
    SCOPED_TRACE(std::to_string(lo) + ".." + std::to_string(hi));
    const auto compiled = compile_schema(R"({"type":"integer","minimum":)" + std::to_string(lo) + R"(,"maximum":)" +
                                         std::to_string(hi) + "}");
    for (int v = -1300; v <= 1300; ++v) {
      ASSERT_EQ(grammar_accepts(compiled, std::to_string(v)), v >= lo && v <= hi) << v;
    }
    EXPECT_FALSE(grammar_accepts(compiled, "-0"));
    EXPECT_FALSE(grammar_accepts(compiled, "00"));
    EXPECT_FALSE(grammar_accepts(compiled, "0" + std::to_string(std::max(hi, 1))));
  }
}

TEST(JsonSchemaToGbnf, ExclusiveAndFractionalIntegerBounds) {
  const auto compiled = compile_schema(R"({"type":"integer","exclusiveMinimum":-2.5,"exclusiveMaximum":3})");
  for (int v = -5; v <= 5; ++v) EXPECT_EQ(grammar_accepts(compiled, std::to_string(v)), v >= -2 && v <= 2) << v;
  // Draft 4 booleans.
  const auto draft4 = compile_schema(R"({"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":3})");
  EXPECT_FALSE(grammar_accepts(draft4, "0"));
  EXPECT_TRUE(grammar_accepts(draft4, "1"));
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"type":"integer","minimum":5,"maximum":4})"), GrammarError);
}

TEST(JsonSchemaToGbnf, NumberBoundsAreRespected) {
  const auto positive = compile_schema(R"({"type":"number","exclusiveMinimum":0,"maximum":10})");
  for (const char* ok : {"0.5", "1", "9.99", "10", "0.001", "3.25"}) EXPECT_TRUE(grammar_accepts(positive, ok)) << ok;
  for (const char* bad : {"0", "0.0", "-1", "10.5", "11", "-0.5", "1e3"}) EXPECT_FALSE(grammar_accepts(positive, bad)) << bad;
  const auto negative = compile_schema(R"({"type":"number","minimum":-2,"exclusiveMaximum":0})");
  for (const char* ok : {"-2", "-1.5", "-0.25", "-1"}) EXPECT_TRUE(grammar_accepts(negative, ok)) << ok;
  for (const char* bad : {"0", "-2.5", "-3", "0.5", "-0.0"}) EXPECT_FALSE(grammar_accepts(negative, bad)) << bad;
}

TEST(JsonSchemaToGbnf, StringsUseJsonEscapes) {
  const auto compiled = compile_schema(R"({"type":"string"})");
  for (const char* ok : {R"("a\"b")", R"("\\")", R"("\u00e9\n\t")", "\"\xc3\xa9\"", R"("\/")"}) {
    EXPECT_TRUE(grammar_accepts(compiled, ok)) << ok;
  }
  for (const char* bad : {"\"a\nb\"", R"("\x")", R"("\ud800")", "\"\x01\"", R"("a"b")"}) {
    EXPECT_FALSE(grammar_accepts(compiled, bad)) << bad;
  }
  // A const with every kind of escape is matched as JSON writes it.
  const auto constant = compile_schema(R"({"const":"q\"b\\c\n\u0001é"})");
  EXPECT_TRUE(grammar_accepts(constant, R"("q\"b\\c\n\u0001é")"));
}

TEST(JsonSchemaToGbnf, PatternsMatchInsideJsonStrings) {
  const auto anchored = compile_schema(R"({"type":"string","pattern":"^[a-c\"]+\\d{2}$"})");
  EXPECT_TRUE(grammar_accepts(anchored, R"("ab\"c12")"));
  EXPECT_FALSE(grammar_accepts(anchored, R"("ab"c12")"));
  EXPECT_FALSE(grammar_accepts(anchored, R"("xab12")"));
  // Unanchored patterns are matched whole too (every such string also matches a search).
  const auto unanchored = compile_schema(R"({"type":"string","pattern":"ab+"})");
  EXPECT_TRUE(grammar_accepts(unanchored, R"("abbb")"));
  EXPECT_FALSE(grammar_accepts(unanchored, R"("xxabbby")"));
  EXPECT_THROW(json_schema_text_to_gbnf(R"j({"type":"string","pattern":"(?=a)"})j"), GrammarError);
}

TEST(JsonSchemaToGbnf, AdditionalKeysAreNeverDeclaredNames) {
  const auto compiled = compile_schema(
      R"({"properties":{"a":{"type":"integer"},"ab":{"type":"integer"},"q\"":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  EXPECT_TRUE(grammar_accepts(compiled, R"({"a":1,"ab":2,"abc":"x"})"));
  EXPECT_TRUE(grammar_accepts(compiled, R"({"b":"x","":"y"})"));
  EXPECT_TRUE(grammar_accepts(compiled, R"({"q\"":1})"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"a":"x"})"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"ab":"x"})"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"q\"":"x"})"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"\u0061":"x"})"));  // "a" spelled with an escape
}

TEST(JsonSchemaToGbnf, PropertiesInDeclaredOrderOptionalOnesSkippable) {
  const auto compiled = compile_schema(
      R"({"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"},"z":{"type":"integer"}},"required":["y"]})");
  for (const char* ok : {R"({"y":1})", R"({"x":1,"y":2})", R"({"y":1,"z":2})", R"({ "x" : 1 , "y" : 2 , "z" : 3 })"}) {
    EXPECT_TRUE(grammar_accepts(compiled, ok)) << ok;
  }
  for (const char* bad : {R"({})", R"({"x":1})", R"({"y":1,"x":2})", R"({"y":1,"w":2})", R"({,"y":1})"}) {
    EXPECT_FALSE(grammar_accepts(compiled, bad)) << bad;
  }
  const auto compact = compile_schema(R"({"type":"object","properties":{"x":{"type":"integer"}}})", {});
  EXPECT_TRUE(grammar_accepts(compact, R"({"x":1})"));
  EXPECT_FALSE(grammar_accepts(compact, R"({ "x":1})"));
}

TEST(JsonSchemaToGbnf, RecursiveRefsAndPointers) {
  const std::string tree = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})";
  const auto compiled = compile_schema(tree);
  EXPECT_TRUE(grammar_accepts(compiled, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"v":1,"kids":[{"kids":[]}]})"));
  // A pointer into properties, escaped with ~1 and %25.
  const auto pointer = compile_schema(
      R"({"properties":{"a/b":{"type":"boolean"},"c":{"$ref":"#/properties/a~1b"},"d%":{"type":"null"},"e":{"$ref":"#/properties/d%25"}},"required":["c","e"]})");
  EXPECT_TRUE(grammar_accepts(pointer, R"({"c":true,"e":null})"));
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"$ref":"https://example.com/s.json"})"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"$ref":"#/$defs/missing"})"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"),
               GrammarError);
}

TEST(JsonSchemaToGbnf, ArraysWithBoundsAndTuples) {
  const auto bounded = compile_schema(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(grammar_accepts(bounded, "[1]"));
  EXPECT_TRUE(grammar_accepts(bounded, "[1, 2]"));
  EXPECT_TRUE(grammar_accepts(bounded, "[1,2,3]"));
  EXPECT_FALSE(grammar_accepts(bounded, "[1,2,3,4]"));
  const auto tuple = compile_schema(R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"}})");
  EXPECT_TRUE(grammar_accepts(tuple, R"(["a",1])"));
  EXPECT_TRUE(grammar_accepts(tuple, R"(["a",1,true,false])"));
  EXPECT_FALSE(grammar_accepts(tuple, R"(["a",1,2])"));
}

TEST(JsonSchemaToGbnf, AllOfMergesAndAnyOfDistributes) {
  const auto merged = compile_schema(R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"a":{"minimum":5},"b":{"type":"string"}}}]})");
  EXPECT_TRUE(grammar_accepts(merged, R"({"a":5,"b":"x"})"));
  EXPECT_FALSE(grammar_accepts(merged, R"({"a":4})"));
  EXPECT_FALSE(grammar_accepts(merged, R"({"b":"x"})"));
  const auto any = compile_schema(R"({"type":"object","required":["k"],"anyOf":[{"properties":{"k":{"const":1}}},{"properties":{"k":{"const":"one"}}}]})");
  EXPECT_TRUE(grammar_accepts(any, R"({"k":1})"));
  EXPECT_TRUE(grammar_accepts(any, R"({"k":"one"})"));
  EXPECT_FALSE(grammar_accepts(any, R"({})"));
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"), GrammarError);
}

TEST(JsonSchemaToGbnf, HugeBoundsAreCheapAndSound) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"type":"array","minItems":1000000000})"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"type":"string","minLength":1e9})"), GrammarError);
  std::string gbnf;
  ASSERT_NO_THROW(gbnf = json_schema_text_to_gbnf(R"({"type":"string","maxLength":1000000000})"));
  EXPECT_LT(gbnf.size(), 2000u);
  EXPECT_NO_THROW(json_schema_text_to_gbnf(R"({"type":"string","pattern":"^a{1,1000000000}$"})"));
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"type":"string","pattern":"^a{1000000000}$"})"), GrammarError);
  // Deep nesting is refused, not recursed into without end.
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 500; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_THROW(json_schema_text_to_gbnf(deep), GrammarError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(JsonSchemaToGbnf, BadSchemasNameThePlace) {
  try {
    json_schema_text_to_gbnf(R"({"properties":{"a":{"type":"kaboom"}}})");
    FAIL();
  } catch (const GrammarError& error) {
    EXPECT_NE(std::string(error.what()).find("/properties/a/type"), std::string::npos) << error.what();
  }
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"type":"object",)"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"properties":{"a":{"minLength":-1}}})"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"({"enum":[]})"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"(false)"), GrammarError);
  EXPECT_THROW(json_schema_text_to_gbnf(R"(42)"), GrammarError);
}

TEST(JsonSchemaToGbnf, JsonObjectGrammarAcceptsObjectsOnly) {
  const auto compiled = compile_for_bytes(json_object_gbnf(kAnyWhitespace));
  EXPECT_TRUE(grammar_accepts(compiled, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(grammar_accepts(compiled, "{}"));
  EXPECT_FALSE(grammar_accepts(compiled, "[]"));
  EXPECT_FALSE(grammar_accepts(compiled, R"({"a":})"));
}

// The default is compact, as OpenAI's and vLLM's (disable_any_whitespace) JSON: not a byte of
// whitespace between tokens, where a model would otherwise pad ("Paris"\n\n,\n"country").
TEST(JsonSchemaToGbnf, CompactByDefault) {
  const std::string schema =
      R"({"type":"object","properties":{"name":{"type":"string"},"pop":{"type":"integer"},"tags":{"type":"array"}},"required":["name","pop"]})";
  const auto compiled = compile_for_bytes(json_schema_text_to_gbnf(schema));
  EXPECT_TRUE(grammar_accepts(compiled, R"({"name":"Paris","pop":2100000,"tags":["a",{"b":[1,2]}]})"));
  for (const char* padded :
       {R"({ "name":"Paris","pop":1})", R"({"name" :"Paris","pop":1})", R"({"name": "Paris","pop":1})",
        "{\"name\":\"Paris\"\n\n,\n\"pop\":1}", R"({"name":"Paris","pop":1,"tags":[1, 2]})",
        R"({"name":"Paris","pop":1,"tags":[{"b" :1}]})", R"({"name":"Paris","pop":1 })"}) {
    EXPECT_FALSE(grammar_accepts(compiled, padded)) << padded;
  }
  const auto object = compile_for_bytes(json_object_gbnf());
  EXPECT_TRUE(grammar_accepts(object, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_FALSE(grammar_accepts(object, R"({"a": 1})"));
}

// Once the root value closes the grammar is complete: nothing may follow but the end of
// generation, whatever the whitespace option (the CLI padded 17 tokens of JSON with 30 of
// "\n\n\t\t\t..." before its EOS).
TEST(JsonSchemaToGbnf, NothingFollowsTheRootValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"object","properties":{"a":{"type":"integer"}}})", R"({"a":1})"},
      {R"({"type":"string"})", R"("x")"},
      {R"({"type":"integer"})", "12"},
      {R"({"type":"boolean"})", "true"},
      {R"({"enum":["a",{"b":1}]})", R"({"b":1})"},
      {R"({"type":"array","items":{"type":"integer"}})", "[1,2]"},
      {R"({"$defs":{"n":{"type":"number"}},"$ref":"#/$defs/n"})", "1.5"},
      {R"({"anyOf":[{"type":"null"},{"type":"string","pattern":"^a+$"}]})", R"("aa")"},
      {"{}", R"({"k":[true]})"},
  };
  for (const JsonSchemaOptions& options : {JsonSchemaOptions{}, kAnyWhitespace}) {
    for (const auto& [schema, value] : cases) {
      SCOPED_TRACE(schema + (options.compact_whitespace ? " compact" : " any whitespace"));
      const auto compiled = compile_schema(schema, options);
      EXPECT_TRUE(grammar_accepts(compiled, value));
      for (const char* tail : {" ", "\n", "\t", "\n\n\t\t", "\r"}) {
        EXPECT_FALSE(grammar_accepts(compiled, value + tail)) << "after the root: " << ::testing::PrintToString(tail);
      }
    }
  }
}

// The looser form keeps its bounded whitespace between tokens.
TEST(JsonSchemaToGbnf, AnyWhitespaceBetweenTokensWhenAskedFor) {
  const auto compiled = compile_schema(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"string"}}}})");
  EXPECT_TRUE(grammar_accepts(compiled, "{ \"a\" : 1 ,\n  \"b\" : [ \"x\" , \"y\" ] }"));
  EXPECT_TRUE(grammar_accepts(compiled, "{\n\t\"a\":1}"));
  EXPECT_FALSE(grammar_accepts(compiled, "{\"a\":1\n\n\n}"));  // still bounded: at most two newlines
}

}  // namespace
}  // namespace lumen::grammar
