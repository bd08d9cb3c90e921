#include "tokenizer/special_tokens.h"

#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

Vocab vocab_with(std::vector<std::pair<std::string, TokenType>> entries) {
  Vocab vocab;
  vocab.kind = VocabKind::BytePairGpt2;
  vocab.model_name = "gpt2";
  vocab.pre_tokenizer = "gpt-2";
  for (auto& [text, type] : entries) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(type);
  }
  return vocab;
}

std::string describe(const std::vector<TextSegment>& segments) {
  std::string out;
  for (const TextSegment& s : segments) {
    if (s.is_token()) {
      out += '#';
      out += std::to_string(s.token);
    } else {
      out += '\'';
      out += s.text;
      out += '\'';
    }
    out += ' ';
  }
  return out;
}

TEST(SpecialTokens, ControlTokensOnlyWhenParsingSpecial) {
  LUMEN_REQUIRE_TESTDATA();
  SpecialTokenMatcher matcher(vocab_with({{"<ctl>", TokenType::Control},
                                          {"<user>", TokenType::UserDefined},
                                          {"<unk>", TokenType::Unknown},
                                          {"plain", TokenType::Normal}}));
  EXPECT_EQ(describe(matcher.split("a<ctl>b<user>c<unk>plain", false)),
            "'a<ctl>b' #1 'c<unk>plain' ");
  EXPECT_EQ(describe(matcher.split("a<ctl>b<user>c<unk>plain", true)),
            "'a' #0 'b' #1 'c' #2 'plain' ");
}

TEST(SpecialTokens, LeftmostThenLongestMatchWins) {
  LUMEN_REQUIRE_TESTDATA();
  SpecialTokenMatcher matcher(vocab_with({{"<a>", TokenType::Control},
                                          {"<a><b>", TokenType::Control},
                                          {"b><c>", TokenType::Control},
                                          {"<b>", TokenType::Control}}));
  EXPECT_EQ(describe(matcher.split("<a><b><c>", true)), "#1 '<c>' ");
  EXPECT_EQ(describe(matcher.split("x<a><a>", true)), "'x' #0 #0 ");
  EXPECT_EQ(describe(matcher.split("", true)), "");
  EXPECT_EQ(describe(matcher.split("<a", true)), "'<a' ");
}

TEST(SpecialTokens, TokenizerAppliesThemAroundThePlainText) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-qwen2.gguf"));
  // Qwen2: <|im_start|> is 151644 (control), <tool_call> 151657 (user-defined).
  std::vector<int32_t> parsed = tok.encode("<|im_start|>", {.parse_special = true});
  EXPECT_EQ(parsed, (std::vector<int32_t>{151644}));
  std::vector<int32_t> plain = tok.encode("<|im_start|>");
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok.decode(plain), "<|im_start|>");
  EXPECT_EQ(tok.encode("<tool_call>"), (std::vector<int32_t>{151657}));
  std::vector<int32_t> mixed = tok.encode("hi<|im_end|>\nok", {.parse_special = true});
  ASSERT_GE(mixed.size(), 3u);
  EXPECT_EQ(mixed[1], 151645);
  EXPECT_EQ(tok.decode(mixed), "hi<|im_end|>\nok");
}

TEST(SpecialTokens, AddSpecialFollowsTheVocabularyFlags) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer llama3 =
      Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-llama-bpe.gguf"));
  std::vector<int32_t> ids = llama3.encode("Hi", {.add_special = true});
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 128000);  // add_bos_token = true; no EOS
  EXPECT_EQ(ids.size(), llama3.encode("Hi").size() + 1);
  Tokenizer gpt2 = Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-gpt-2.gguf"));
  EXPECT_EQ(gpt2.encode("Hi", {.add_special = true}), gpt2.encode("Hi"));
  std::vector<int32_t> with_bos = {128000};
  with_bos.insert(with_bos.end(), ids.begin() + 1, ids.end());
  EXPECT_EQ(llama3.decode(with_bos, {.skip_special = true}), "Hi");
  EXPECT_EQ(llama3.decode(with_bos), "<|begin_of_text|>Hi");
}

TEST(SpecialTokens, InvalidUtf8IsReadAsReplacementCharacters) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-gpt-2.gguf"));
  EXPECT_EQ(tok.encode("a\xFF\xC0" "b"), tok.encode("a\xEF\xBF\xBD\xEF\xBF\xBD" "b"));
  EXPECT_THROW(tok.decode({50257}), Error);
  EXPECT_THROW(tok.decode({-1}), Error);
}

}  // namespace
}  // namespace lumen::tokenizer
