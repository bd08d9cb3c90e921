// The first gate of every POST: UTF-8, nesting depth, JSON, object.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "server/api_error.h"
#include "server/json_body.h"

namespace lumen::server {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));                         // U+10FFFF
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0inside", 10)));
}

TEST(Utf8, RejectsEveryKindOfIllFormedSequence) {
  for (const char* bad : {"\xff", "\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80" /* surrogate */,
                          "\xf4\x90\x80\x80" /* > U+10FFFF */, "\xf5\x80\x80\x80", "\xc3", "\xe2\x82",
                          "\xf0\x9f\x98", "a\xc3(b", "\xf0\x80\x80\x80" /* overlong */}) {
    EXPECT_FALSE(is_valid_utf8(bad)) << testing::PrintToString(std::string(bad));
  }
}

int status_of(const std::string& body) {
  try {
    parse_json_body(body);
    return 200;
  } catch (const ApiError& e) {
    return e.status();
  }
}

TEST(JsonBody, ParsesAnObject) {
  auto v = parse_json_body(R"({"prompt": "hi", "n": 2})");
  EXPECT_EQ(v["prompt"], "hi");
  EXPECT_EQ(v["n"], 2);
}

TEST(JsonBody, MalformedNonObjectAndInvalidUtf8Are400) {
  for (const std::string body : {"", "{", "{\"a\":}", "[1,2]", "\"str\"", "12", "null", "{\"a\": \"\xff\"}",
                                 "{\"a\": 1} trailing", "{'a': 1}", "\xef\xbb\xbf{\"a\":1}\xff"}) {
    EXPECT_EQ(status_of(body), 400) << body;
  }
}

TEST(JsonBody, DeepNestingIs400WithoutRecursion) {
  EXPECT_EQ(status_of(std::string(1'000'000, '[')), 400);
  EXPECT_EQ(status_of("{\"a\":" + std::string(200'000, '[') + std::string(200'000, ']') + "}"), 400);
  // Brackets inside strings do not count.
  EXPECT_EQ(status_of("{\"a\": \"" + std::string(1000, '[') + "\"}"), 200);
  std::string ok = "{\"a\":" + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_EQ(status_of(ok), 200);
}

TEST(JsonBody, RandomBytesNeverEscapeAsAnythingButApiError) {
  std::mt19937 rng(1);
  const std::string seed = R"({"prompt": ["a", [1, 2]], "stop": {"x": null}, "t": 1e5})";
  for (int i = 0; i < 20000; ++i) {
    std::string body = seed;
    const int edits = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int e = 0; e < edits; ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, body.size() - 1)(rng);
      body[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    }
    const int status = status_of(body);
    EXPECT_TRUE(status == 200 || status == 400);
  }
}

TEST(ApiErrorJson, HasOpenAiShape) {
  ApiError e(400, "bad 'x'", "x");
  auto j = e.to_json();
  EXPECT_EQ(j["error"]["message"], "bad 'x'");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "x");
  EXPECT_TRUE(j["error"]["code"].is_null());  // OpenAI: a string or null, never the HTTP status
  EXPECT_EQ(ApiError(401, "k").type(), "authentication_error");
  EXPECT_EQ(ApiError(503, "k").to_json()["error"]["param"], nullptr);
  // Invalid UTF-8 (half a character from a token) never makes serialization throw.
  EXPECT_EQ(dump_json(nlohmann::json("a\xe2\x82")), "\"a\xef\xbf\xbd\"");
}

}  // namespace
}  // namespace lumen::server
