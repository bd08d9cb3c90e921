#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <random>
#include <string>
#include <thread>

#include "gguf/file.h"
#include "tokenizer/byte_to_unicode.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";
const std::string kBadDir = std::string(LUMEN_TESTDATA_DIR) + "/gguf-bad/";

Vocab tiny_vocab(std::vector<std::string> tokens, std::vector<std::string> merges,
                 std::string pre = "gpt-2") {
  Vocab vocab;
  vocab.kind = VocabKind::BytePairGpt2;
  vocab.model_name = "gpt2";
  vocab.pre_tokenizer = std::move(pre);
  vocab.tokens = std::move(tokens);
  vocab.types.assign(vocab.tokens.size(), TokenType::Normal);
  vocab.merges = std::move(merges);
  return vocab;
}

Tokenizer open_tokenizer(const std::string& path) {
  return Tokenizer::from_gguf(gguf::GgufFile::open(path));
}

TEST(ByteUnicodeMap, MatchesGpt2Table) {
  LUMEN_REQUIRE_TESTDATA();
  const ByteUnicodeMap& map = ByteUnicodeMap::get();
  // GPT-2's encoder.json spells a space as U+0120 'Ġ' and a newline as U+010A 'Ċ'.
  EXPECT_EQ(map.encode(' '), "\xC4\xA0");
  EXPECT_EQ(map.encode('\n'), "\xC4\x8A");
  EXPECT_EQ(map.encode('A'), "A");
  EXPECT_EQ(map.encode(0xAD), "\xC5\x83");  // soft hyphen is the last moved byte: U+0143
  for (unsigned b = 0; b < 256; ++b) {
    std::string cp = map.encode(static_cast<uint8_t>(b));
    size_t pos = 0;
    EXPECT_EQ(map.decode(next_code_point(cp, pos)), static_cast<uint8_t>(b));
  }
  EXPECT_FALSE(map.decode(0x20).has_value());  // a raw space is not a mapped byte
}

TEST(ByteLevelBpe, LowerRankMergesFirst) {
  LUMEN_REQUIRE_TESTDATA();
  std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc"};
  EXPECT_EQ(Tokenizer::from_vocab(tiny_vocab(tokens, {"b c", "a b"})).encode("abc"),
            (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(Tokenizer::from_vocab(tiny_vocab(tokens, {"a b", "b c"})).encode("abc"),
            (std::vector<int32_t>{3, 2}));
}

TEST(ByteLevelBpe, MergesChainUntilNoPairIsLeft) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = Tokenizer::from_vocab(
      tiny_vocab({"a", "b", "c", "ab", "bc", "abc"}, {"b c", "a b", "a bc"}));
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(tok.encode("abcabc"), (std::vector<int32_t>{5, 5}));
}

TEST(ByteLevelBpe, EqualRanksMergeLeftmostFirst) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = Tokenizer::from_vocab(tiny_vocab({"a", "aa"}, {"a a"}));
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<int32_t>{1, 1}));
}

TEST(ByteLevelBpe, SpacesAreByteMappedAndBytesWithoutTokensAreDropped) {
  LUMEN_REQUIRE_TESTDATA();
  // "\xC4\xA0" is U+0120, GPT-2's spelling of a space.
  Tokenizer tok = Tokenizer::from_vocab(
      tiny_vocab({"a", "\xC4\xA0", "\xC4\xA0" "a"}, {"\xC4\xA0 a"}));
  EXPECT_EQ(tok.encode("a a"), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(tok.encode("a?a"), (std::vector<int32_t>{0, 0}));  // no token for '?'
  EXPECT_EQ(tok.decode({2, 0}), " aa");
}

TEST(ByteLevelBpe, UnknownPreTokenizerIsAClearErrorAtLoad) {
  LUMEN_REQUIRE_TESTDATA();
  try {
    Tokenizer::from_vocab(tiny_vocab({"a"}, {}, "no-such-pre"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-pre'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre"), std::string::npos) << e.what();
  }
}

TEST(ByteLevelBpe, KnownPreTokenizerNamesAllCompile) {
  LUMEN_REQUIRE_TESTDATA();
  for (std::string_view name : known_pre_tokenizers()) {
    EXPECT_NO_THROW(PreTokenizer{pre_tokenizer_spec(name)}) << name;
  }
  EXPECT_EQ(pre_tokenizer_spec("smollm").name, "starcoder");
  EXPECT_EQ(pre_tokenizer_spec("").name, "default");
}

TEST(ByteLevelBpe, FileWithoutPreTokenizerUsesTheDefault) {
  LUMEN_REQUIRE_TESTDATA();
  // tok_ok.gguf: tokens a, b, ab; merge "a b"; no tokenizer.ggml.pre.
  Tokenizer tok = open_tokenizer(kBadDir + "tok_ok.gguf");
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{2}));
  EXPECT_EQ(tok.encode("aba"), (std::vector<int32_t>{2, 0}));
}

// Pre-tokenizer splits against what the patterns mean (worked by hand from the regexes in
// the models' tokenizer.json files).
TEST(PreTokenizer, Gpt2KeepsOneSpaceWithTheNextWord) {
  LUMEN_REQUIRE_TESTDATA();
  PreTokenizer pre(pre_tokenizer_spec("gpt-2"));
  std::vector<std::string_view> words;
  pre.split("Hello world's  end\t\n", words);
  EXPECT_EQ(words, (std::vector<std::string_view>{"Hello", " world", "'s", " ", " end", "\t\n"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndContractionsIgnoreCase) {
  LUMEN_REQUIRE_TESTDATA();
  PreTokenizer pre(pre_tokenizer_spec("llama-bpe"));
  std::vector<std::string_view> words;
  pre.split("I'M 1234567", words);
  EXPECT_EQ(words, (std::vector<std::string_view>{"I", "'M", " ", "123", "456", "7"}));
}

TEST(PreTokenizer, StarcoderAndSmollmIsolateEveryDigit) {
  LUMEN_REQUIRE_TESTDATA();
  PreTokenizer pre(pre_tokenizer_spec("smollm"));
  std::vector<std::string_view> words;
  pre.split("x 42", words);
  EXPECT_EQ(words, (std::vector<std::string_view>{"x", " ", "4", "2"}));
}

TEST(PreTokenizer, NextLineCountsAsWhitespaceAsInOniguruma) {
  LUMEN_REQUIRE_TESTDATA();
  // Oniguruma (Hugging Face's regex engine) counts U+0085 as \s; PCRE2 does not. Read as
  // whitespace, "\u0085\u0085" before a letter splits like two spaces would: \s+(?!\S) takes
  // the first, \s+ the second. Read as punctuation it would stay one piece.
  PreTokenizer pre(pre_tokenizer_spec("gpt-2"));
  std::vector<std::string_view> words;
  pre.split("a\xC2\x85\xC2\x85x", words);
  EXPECT_EQ(words, (std::vector<std::string_view>{"a", "\xC2\x85", "\xC2\x85", "x"}));
}

TEST(ByteLevelBpe, EncodeIsSafeFromManyThreads) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_tokenizer(kTokDir + "ggml-vocab-qwen2.gguf");
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    texts.push_back("word" + std::to_string(i * 7919) + " Hello, wörld! 你好 " +
                    std::string(static_cast<size_t>(i % 5), ' ') + "end");
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(tok.encode(t));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          size_t k = (i + static_cast<size_t>(t * 13 + round)) % texts.size();
          if (tok.encode(texts[k]) != expected[k]) ++mismatches[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(ByteLevelBpe, HugeAndHostileInputsDoNotBreakIt) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_tokenizer(kTokDir + "ggml-vocab-llama-bpe.gguf");
  for (std::string text : {std::string(1 << 19, ' '), std::string(1 << 19, 'a'),
                           std::string(1 << 18, '\n') + "x", std::string(1 << 19, '1')}) {
    std::vector<int32_t> ids = tok.encode(text);
    EXPECT_EQ(tok.decode(ids), text);
  }
  std::mt19937 rng(7);
  std::string noise(1 << 16, '\0');
  for (char& c : noise) c = static_cast<char>(rng() & 0xFF);
  EXPECT_EQ(tok.decode(tok.encode(noise)), sanitize_utf8(noise));
}

}  // namespace
}  // namespace lumen::tokenizer
