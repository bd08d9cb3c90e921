#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include "gguf/file.h"
#include "util/error.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";
const std::string kBadDir = std::string(LUMEN_TESTDATA_DIR) + "/gguf-bad/";

Vocab load(const std::string& path) { return load_vocab(gguf::GgufFile::open(path).metadata()); }

TEST(Vocab, LoadsByteLevelBpe) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab vocab = load(kTokDir + "ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(vocab.kind, VocabKind::BytePairGpt2);
  EXPECT_EQ(vocab.size(), 50257u);
  EXPECT_EQ(vocab.merges.size(), 50000u);
  EXPECT_EQ(vocab.tokens[0], "!");
  EXPECT_EQ(vocab.types.size(), vocab.size());
}

TEST(Vocab, LoadsSentencePieceWithScoresAndByteTokens) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab vocab = load(kTokDir + "ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(vocab.kind, VocabKind::SentencePiece);
  EXPECT_EQ(vocab.size(), 32000u);
  ASSERT_EQ(vocab.scores.size(), 32000u);
  EXPECT_EQ(vocab.types[3], TokenType::Byte);
  EXPECT_EQ(vocab.tokens[3], "<0x00>");
  EXPECT_EQ(vocab.special.bos, 1);
  EXPECT_EQ(vocab.special.eos, 2);
}

TEST(Vocab, OutOfRangeSpecialIdIsDroppedWithAWarning) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab vocab = load(kBadDir + "tok_bos_out_of_range.gguf");
  EXPECT_FALSE(vocab.special.bos.has_value());
  ASSERT_EQ(vocab.warnings.size(), 1u);
  EXPECT_NE(vocab.warnings[0].find("bos_token_id"), std::string::npos);
}

TEST(Vocab, MissingTokenTypesDefaultToNormal) {
  LUMEN_REQUIRE_TESTDATA();
  Vocab vocab = load(kBadDir + "tok_ok_no_token_type.gguf");
  ASSERT_EQ(vocab.size(), 3u);
  for (TokenType type : vocab.types) EXPECT_EQ(type, TokenType::Normal);
}

TEST(Vocab, MalformedVocabulariesAreRejected) {
  LUMEN_REQUIRE_TESTDATA();
  for (const char* name : {"tok_type_u8_array.gguf", "tok_scores_u8_array.gguf",
                           "tok_type_len_mismatch.gguf", "tok_empty_vocab.gguf",
                           "tok_unknown_model.gguf", "tok_bad_byte_token.gguf",
                           "tok_merge_no_space.gguf", "tok_type_value_bad.gguf"}) {
    EXPECT_THROW(load(kBadDir + name), Error) << name;
  }
}

}  // namespace
}  // namespace lumen::tokenizer
