// SentencePiece BPE, tested through its TokenizerModel (one plain segment at a time):
//  - llama.cpp's vectors for Llama 2 and Phi-3 (expected ids from Hugging Face tokenizers);
//  - Gemma 3 against Google's sentencepiece library (sentencepiece_gemma3_golden.py builds a
//    SentencePiece model from the GGUF vocabulary and wrote sentencepiece_gemma3_golden.txt);
//  - round trips and hand-checked rules on tiny vocabularies built here.
#include "tokenizer/sentencepiece_bpe.h"

#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "gguf/file.h"
#include "util/error.h"

namespace lumen::tokenizer {
namespace {

namespace fs = std::filesystem;

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::shared_ptr<const Vocab> load(const std::string& path) {
  return std::make_shared<const Vocab>(load_vocab(gguf::GgufFile::open(path).metadata()));
}

std::vector<int32_t> encode(const TokenizerModel& model, std::string_view text,
                            bool starts_text = true) {
  std::vector<int32_t> ids;
  model.encode(text, starts_text, ids);
  return ids;
}

std::string decode(const TokenizerModel& model, const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += model.token_bytes(id);
  return text;
}

// llama.cpp's test-tokenizer-0 format (see shared/testdata/README.md).
void check_vectors(const std::string& name) {
  auto vocab = load(kTokDir + name);
  auto model = make_sentencepiece_bpe(vocab);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::string inputs = read_file(kTokDir + name + ".inp");
  std::istringstream outputs(read_file(kTokDir + name + ".out"));
  size_t cases = 0;
  for (size_t pos = 0, end; (end = inputs.find(separator, pos)) != std::string::npos;
       pos = end + separator.size()) {
    std::string text = inputs.substr(pos, end - pos);
    std::string expected;
    ASSERT_TRUE(std::getline(outputs, expected)) << "no expected ids for case " << cases;
    EXPECT_EQ(encode(*model, text), parse_ids(expected)) << name << " case " << cases << ": '"
                                                         << text << "'";
    ++cases;
  }
  EXPECT_EQ(cases, 46u);
}

TEST(SentencePieceBpe, LlamaSpmVectors) {
  LUMEN_REQUIRE_TESTDATA(); check_vectors("ggml-vocab-llama-spm.gguf"); }
TEST(SentencePieceBpe, Phi3Vectors) {
  LUMEN_REQUIRE_TESTDATA(); check_vectors("ggml-vocab-phi-3.gguf"); }

class LlamaSpm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!::lumen::testing::have_testdata()) return;  // each test skips (LUMEN_REQUIRE_TESTDATA)
    vocab_ = load(kTokDir + "ggml-vocab-llama-spm.gguf");
    model_ = make_sentencepiece_bpe(vocab_).release();
  }
  static void TearDownTestSuite() { delete model_; }
  static inline std::shared_ptr<const Vocab> vocab_;
  static inline TokenizerModel* model_ = nullptr;
};

TEST_F(LlamaSpm, EmptySegmentGivesNoTokensNotEvenTheDummyPrefix) {
  LUMEN_REQUIRE_TESTDATA();
  EXPECT_TRUE(encode(*model_, "", true).empty());
  EXPECT_TRUE(encode(*model_, "", false).empty());
}

TEST_F(LlamaSpm, DummyPrefixOnlyWhereTheTextStarts) {
  LUMEN_REQUIRE_TESTDATA();
  // "▁Hello" is one piece; without the prefix "Hello" is another.
  std::vector<int32_t> with = encode(*model_, "Hello", true);
  std::vector<int32_t> without = encode(*model_, "Hello", false);
  ASSERT_EQ(with.size(), 1u);
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(vocab_->tokens[static_cast<size_t>(with[0])], "\xE2\x96\x81Hello");
  EXPECT_EQ(vocab_->tokens[static_cast<size_t>(without[0])], "Hello");
}

TEST_F(LlamaSpm, TokenBytesByType) {
  LUMEN_REQUIRE_TESTDATA();
  EXPECT_EQ(model_->token_bytes(3 + 0x41), "A");        // <0x41>
  EXPECT_EQ(model_->token_bytes(3 + 0xE2), "\xE2");     // <0xE2>: one raw byte
  EXPECT_EQ(model_->token_bytes(29871), " ");           // "▁"
  EXPECT_EQ(model_->token_bytes(1), "<s>");             // control: verbatim, the facade decides
  EXPECT_EQ(model_->token_bytes(0), "<unk>");
  EXPECT_THROW(model_->token_bytes(-1), Error);
  EXPECT_THROW(model_->token_bytes(32000), Error);
}

TEST_F(LlamaSpm, InvalidUtf8BytesFallBackOneByOne) {
  LUMEN_REQUIRE_TESTDATA();
  // Each bad byte is a symbol of its own and, being no piece, becomes its <0xXX> token; the
  // valid characters around it still merge normally.
  const std::string text = "ab\xFF\xC3(c\xE2\x96 \xF0\x9F\x98";
  std::vector<int32_t> ids = encode(*model_, text, false);
  EXPECT_EQ(decode(*model_, ids), text);
  auto count = [&](int32_t id) { return std::count(ids.begin(), ids.end(), id); };
  for (int byte : {0xFF, 0xC3, 0xE2, 0x96, 0xF0, 0x9F, 0x98}) {
    EXPECT_EQ(count(3 + byte), 1) << std::hex << byte;
  }
  // Overlong and surrogate forms are not characters either.
  for (std::string bad : {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    std::vector<int32_t> bad_ids = encode(*model_, bad, false);
    ASSERT_EQ(bad_ids.size(), bad.size());
    for (size_t i = 0; i < bad.size(); ++i) {
      EXPECT_EQ(bad_ids[i], 3 + static_cast<unsigned char>(bad[i]));
    }
  }
}

// decode(encode(s)) == s, with the dummy prefix's space in front where the text starts.
void check_round_trips(const TokenizerModel& model, bool dummy_prefix) {
  std::string all_bytes;
  for (int b = 1; b < 256; ++b) all_bytes += static_cast<char>(b);
  const std::vector<std::string> texts = {
      "The quick brown fox jumps over the lazy dog.",
      "int main(int argc, char** argv) {\n    return argv[0][0] == '\\0';\n}\n",
      "def f(x):\n\tif x:\n\t\treturn [i ** 2 for i in range(x)]  # squares\n",
      "東京は日本の首都です。我想在apple工作。한국어 텍스트도 있습니다.",
      "Emoji: 🦙🚀😶‍🌫️ 👩🏽‍💻 🇫🇷 ✅",
      "     leading, trailing and  double   spaces     ",
      "\n\n\n\t\t \r\n \u00a0\u2003\u3000",
      "Mixed: Ελληνικά русский עברית العربية हिन्दी ไทย ភាសាខ្មែរ",
      "<s> </s> <unk> <0x41> <start_of_turn>user\n",
      "Combining: e\xCC\x81 a\xCC\x8A\xCC\x81 Z\xCD\x91\xCD\x8C\xCD\x82",
      "Private use \xEE\x80\x80 and plane 16 \xF4\x8F\xBF\xBF and U+FFFD \xEF\xBF\xBD",
      "bad \xFF\xFE utf-8 \xC3 here \xE2\x82",
      all_bytes,
  };
  for (const std::string& text : texts) {
    for (bool starts : {true, false}) {
      std::string expected = (starts && dummy_prefix ? " " : "") + text;
      EXPECT_EQ(decode(model, encode(model, text, starts)), expected) << "'" << text << "'";
    }
  }
}

TEST_F(LlamaSpm, RoundTrips) {
  LUMEN_REQUIRE_TESTDATA(); check_round_trips(*model_, true); }

TEST_F(LlamaSpm, ALiteralSpaceMarkIsASpace) {
  LUMEN_REQUIRE_TESTDATA();
  // SentencePiece cannot tell U+2581 in the text from an escaped space: both decode as ' '.
  EXPECT_EQ(encode(*model_, "a\xE2\x96\x81" "b", false), encode(*model_, "a b", false));
}

// --- Gemma 3 against sentencepiece -----------------------------------------------------------

fs::path gemma_path() {
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "") / ".cache/lumen/models/gemma-3-270m-q4_k_m.gguf";
}

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

class Gemma3 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(gemma_path())) return;
    vocab_ = load(gemma_path().string());
    model_ = make_sentencepiece_bpe(vocab_).release();
  }
  static void TearDownTestSuite() { delete model_; }
  void SetUp() override {
    // A missing model is a failure, not a skip: CI downloads it (scripts/fetch_models.py).
    ASSERT_NE(model_, nullptr) << gemma_path() << " is missing (scripts/fetch_models.py)";
  }
  static inline std::shared_ptr<const Vocab> vocab_;
  static inline TokenizerModel* model_ = nullptr;
};

// Golden lines: "text HEX IDS..." (the ids sentencepiece gives for the bytes HEX) and
// "token ID IDS..." (a normal token whose own text sentencepiece does not encode as itself).
TEST_F(Gemma3, MatchesSentencePiece) {
  EXPECT_FALSE(vocab_->add_space_prefix);
  std::istringstream golden(
      read_file(fs::path(LUMEN_TOKENIZER_TEST_DIR) / "sentencepiece_gemma3_golden.txt"));
  std::map<int32_t, std::vector<int32_t>> exceptions;
  size_t texts = 0;
  for (std::string line; std::getline(golden, line);) {
    std::istringstream fields(line);
    std::string kind, key;
    fields >> kind >> key;
    std::string rest;
    std::getline(fields, rest);
    if (kind == "text") {
      std::string text = unhex(key);
      EXPECT_EQ(encode(*model_, text), parse_ids(rest)) << "'" << text << "'";
      ++texts;
    } else if (kind == "token") {
      exceptions[std::stoi(key)] = parse_ids(rest);
    }
  }
  EXPECT_GT(texts, 50u);
  ASSERT_FALSE(exceptions.empty());

  // Every normal token's text encodes as that token, except where sentencepiece says not.
  size_t checked = 0;
  for (size_t i = 0; i < vocab_->size(); ++i) {
    if (vocab_->types[i] != TokenType::Normal) continue;
    auto id = static_cast<int32_t>(i);
    std::string text = model_->token_bytes(id);
    auto it = exceptions.find(id);
    std::vector<int32_t> expected = it == exceptions.end() ? std::vector<int32_t>{id} : it->second;
    ASSERT_EQ(encode(*model_, text, true), expected) << "token " << id;
    ++checked;
  }
  EXPECT_GT(checked, 250000u);
}

TEST_F(Gemma3, RoundTrips) { check_round_trips(*model_, false); }

// --- Rules on tiny vocabularies ---------------------------------------------------------------

std::shared_ptr<const Vocab> tiny_vocab(
    const std::vector<std::tuple<std::string, float, TokenType>>& tokens, bool with_bytes) {
  Vocab vocab;
  vocab.kind = VocabKind::SentencePiece;
  vocab.add_space_prefix = false;
  auto add = [&](std::string text, float score, TokenType type) {
    vocab.tokens.push_back(std::move(text));
    vocab.scores.push_back(score);
    vocab.types.push_back(type);
  };
  add("<unk>", 0.0f, TokenType::Unknown);
  vocab.special.unknown = 0;
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name, 0.0f, TokenType::Byte);
    }
  }
  for (const auto& [text, score, type] : tokens) add(text, score, type);
  return std::make_shared<const Vocab>(std::move(vocab));
}

int32_t id_of(const Vocab& vocab, const std::string& text) {
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (vocab.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

TEST(SentencePieceBpeRules, HighestScoreFirstAndLeftmostOnTies) {
  LUMEN_REQUIRE_TESTDATA();
  auto vocab = tiny_vocab({{"a", -1.0f, TokenType::Normal},
                           {"ab", -2.0f, TokenType::Normal},
                           {"b", -1.0f, TokenType::Normal},
                           {"ba", -2.0f, TokenType::Normal},
                           {"bab", -1.5f, TokenType::Normal}},
                          false);
  auto model = make_sentencepiece_bpe(vocab);
  auto id = [&](const char* text) { return id_of(*vocab, text); };
  // "aba": "ab" and "ba" tie, so the leftmost merges; "ab"+"a" is no piece.
  EXPECT_EQ(encode(*model, "aba"), (std::vector<int32_t>{id("ab"), id("a")}));
  // "bab": "ba" (left) wins the tie, then "ba"+"b" = "bab".
  EXPECT_EQ(encode(*model, "bab"), (std::vector<int32_t>{id("bab")}));
}

TEST(SentencePieceBpeRules, UnusedPiecesAreSplitBack) {
  LUMEN_REQUIRE_TESTDATA();
  auto vocab = tiny_vocab({{"x", -1.0f, TokenType::Normal},
                           {"y", -1.0f, TokenType::Normal},
                           {"xy", -1.0f, TokenType::Unused},
                           {"xyx", -5.0f, TokenType::Normal}},
                          true);
  auto model = make_sentencepiece_bpe(vocab);
  auto id = [&](const char* text) { return id_of(*vocab, text); };
  // "xy" is formed (it may lead to "xyx") but is not emitted itself.
  EXPECT_EQ(encode(*model, "xy"), (std::vector<int32_t>{id("x"), id("y")}));
  EXPECT_EQ(encode(*model, "xyx"), (std::vector<int32_t>{id("xyx")}));
}

TEST(SentencePieceBpeRules, MergesAcrossASpaceWhereAPieceSpansIt) {
  LUMEN_REQUIRE_TESTDATA();
  // "a▁b" is a piece, so the text may not be cut into independent parts before the space.
  auto vocab = tiny_vocab({{"a", -1.0f, TokenType::Normal},
                           {"b", -1.0f, TokenType::Normal},
                           {"\xE2\x96\x81", -1.0f, TokenType::Normal},
                           {"\xE2\x96\x81" "b", -3.0f, TokenType::Normal},
                           {"a\xE2\x96\x81", -2.0f, TokenType::Normal},
                           {"a\xE2\x96\x81" "b", -4.0f, TokenType::Normal}},
                          true);
  auto model = make_sentencepiece_bpe(vocab);
  auto id = [&](const char* text) { return id_of(*vocab, text); };
  EXPECT_EQ(encode(*model, "a b"), (std::vector<int32_t>{id("a\xE2\x96\x81" "b")}));
  EXPECT_EQ(encode(*model, "b b a b"),
            (std::vector<int32_t>{id("b"), id("\xE2\x96\x81" "b"), id("\xE2\x96\x81"),
                                  id("a\xE2\x96\x81" "b")}));
}

TEST(SentencePieceBpeRules, ControlTokensAreNeverFormedByMerges) {
  LUMEN_REQUIRE_TESTDATA();
  auto vocab = tiny_vocab({{"<", -1.0f, TokenType::Normal},
                           {"s", -1.0f, TokenType::Normal},
                           {">", -1.0f, TokenType::Normal},
                           {"<s", -1.0f, TokenType::Normal},
                           {"<s>", 0.0f, TokenType::Control}},
                          true);
  auto model = make_sentencepiece_bpe(vocab);
  auto id = [&](const char* text) { return id_of(*vocab, text); };
  EXPECT_EQ(encode(*model, "<s>"), (std::vector<int32_t>{id("<s"), id(">")}));
}

TEST(SentencePieceBpeRules, WithoutByteTokensUnknownCharactersBecomeUnk) {
  LUMEN_REQUIRE_TESTDATA();
  auto vocab = tiny_vocab({{"a", -1.0f, TokenType::Normal}}, false);
  auto model = make_sentencepiece_bpe(vocab);
  // One <unk> per run of unknown characters (not per byte), as sentencepiece does.
  EXPECT_EQ(encode(*model, "a\xC3\xA9" "a\xFF"), (std::vector<int32_t>{1, 0, 1, 0}));
  EXPECT_EQ(encode(*model, "a\xC3\xA9\xC3\xA9\xFF"), (std::vector<int32_t>{1, 0}));
}

TEST(SentencePieceBpeRules, NeitherByteTokensNorUnknownIsAnError) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab vocab;
  vocab.kind = VocabKind::SentencePiece;
  vocab.tokens = {"a"};
  vocab.types = {TokenType::Normal};
  auto model = make_sentencepiece_bpe(std::make_shared<const Vocab>(vocab));
  EXPECT_EQ(encode(*model, "aa", false), (std::vector<int32_t>{0, 0}));  // no scores: all 0
  EXPECT_THROW(encode(*model, "ab", false), Error);
}

TEST(SentencePieceBpeRules, MalformedHandBuiltVocabulariesAreRejected) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab bad_byte;
  bad_byte.kind = VocabKind::SentencePiece;
  bad_byte.tokens = {"<0x4>"};
  bad_byte.types = {TokenType::Byte};
  EXPECT_THROW(make_sentencepiece_bpe(std::make_shared<const Vocab>(bad_byte)), Error);
  Vocab bad_unknown;
  bad_unknown.kind = VocabKind::SentencePiece;
  bad_unknown.tokens = {"a"};
  bad_unknown.types = {TokenType::Normal};
  bad_unknown.special.unknown = 7;
  EXPECT_THROW(make_sentencepiece_bpe(std::make_shared<const Vocab>(bad_unknown)), Error);
  Vocab bad_scores = bad_unknown;
  bad_scores.special.unknown.reset();
  bad_scores.scores = {0.0f, 1.0f};
  EXPECT_THROW(make_sentencepiece_bpe(std::make_shared<const Vocab>(bad_scores)), Error);
}

}  // namespace
}  // namespace lumen::tokenizer
