// WordPiece on a small vocabulary in llama.cpp's phantom-space form ("\u2581word" starts a word,
// "piece" continues one): BERT's normalising (lowercase, accents off, punctuation split), the
// greedy longest match, a word that cannot be spelled becoming one [UNK], and [CLS] ... [SEP].
// The agreement with Hugging Face's BertTokenizerFast on real text is tests/model's golden.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece.h"

namespace lumen::tokenizer {
namespace {

// Ids: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], then the pieces in order.
Tokenizer tiny_bert() {
  Vocab vocab;
  vocab.kind = VocabKind::WordPiece;
  vocab.model_name = "bert";
  vocab.tokens = {"[PAD]",       "[UNK]",      "[CLS]",       "[SEP]",        "\u2581un",
                  "\u2581unaff", "able",       "\u2581hello", "\u2581,",      "\u2581cafe",
                  "\u2581!",     "\u2581play", "ing",         "\u2581\u4e2d", "\u2581ed"};
  vocab.types.assign(vocab.tokens.size(), TokenType::Normal);
  for (int i = 0; i < 4; ++i) vocab.types[static_cast<size_t>(i)] = i == 1 ? TokenType::Unknown : TokenType::Control;
  vocab.special.unknown = 1;
  vocab.special.bos = 2;
  vocab.special.separator = 3;
  vocab.special.add_bos = true;
  vocab.special.add_sep = true;
  return Tokenizer::from_vocab(std::move(vocab));
}

TEST(WordPiece, WordsAreNormalisedAndSplitAtPunctuation) {
  EXPECT_EQ(bert_words("Hello,  CAFÉ!\tplay"), (std::vector<std::string>{"hello", ",", "cafe", "!", "play"}));
  // Control characters go, CJK ideographs stand alone, other scripts' punctuation splits too.
  EXPECT_EQ(bert_words("a\x01"
                       "b\u4e2d\u6587c\u3002d"),
            (std::vector<std::string>{"ab", "\u4e2d", "\u6587", "c", "\u3002", "d"}));
  EXPECT_TRUE(bert_words(" \n\t ").empty());
}

TEST(WordPiece, GreedyLongestMatchThenContinuations) {
  const Tokenizer tok = tiny_bert();
  // "unaffable": "unaff" is longer than "un", then the continuation "able".
  EXPECT_EQ(tok.encode("unaffable"), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(tok.encode("Playing, hello!"), (std::vector<int32_t>{11, 12, 8, 7, 10}));
  // "ed" exists only word-initially: "played" cannot be spelled, so the whole word is [UNK]
  // (not "play" + [UNK]), and the next word is unaffected.
  EXPECT_EQ(tok.encode("played hello"), (std::vector<int32_t>{1, 7}));
  EXPECT_EQ(tok.encode("\u4e2d"), (std::vector<int32_t>{13}));
}

TEST(WordPiece, OverlongWordIsUnknown) {
  const Tokenizer tok = tiny_bert();
  std::string word;
  for (int i = 0; i < 50; ++i) word += "ing";  // 150 characters: past the 100 a word may have
  EXPECT_EQ(tok.encode("hello " + word), (std::vector<int32_t>{7, 1}));
}

TEST(WordPiece, SpecialTokensWrapTheTextAndDecodeJoinsWords) {
  const Tokenizer tok = tiny_bert();
  const std::vector<int32_t> ids = tok.encode("Hello, café", {.add_special = true});
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 7, 8, 9, 3}));
  EXPECT_EQ(tok.decode({7, 11, 12}), " hello playing");
}

}  // namespace
}  // namespace lumen::tokenizer
