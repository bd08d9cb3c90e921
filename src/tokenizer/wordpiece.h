#pragma once
// WordPiece (BERT and its embedding models: bge, nomic-embed, all-MiniLM...), as Hugging Face's
// BertTokenizerFast runs an uncased vocabulary:
//   - normalising: control characters (Unicode C*, but tab, newline and return), NUL and U+FFFD
//     dropped; other whitespace becomes a space; spaces around each CJK ideograph; NFD with its
//     nonspacing marks (Mn) dropped, so accents go ("café" is "cafe"); lowercased;
//   - pre-tokenizing: words split on whitespace, and each punctuation character (ASCII
//     punctuation or Unicode P*) a word of its own;
//   - each word, greedily, the longest vocabulary piece from its start, then the longest
//     continuation piece from where that ended, and so on; a word with a remainder no piece
//     matches, or of more than 100 characters, is one unknown token.
// llama.cpp's converter writes the vocabulary with a "phantom space": a word-initial piece
// "hello" is stored as "\u2581hello" and a continuation "##lo" as "lo"; control tokens ([CLS],
// [SEP]...) as they are. Vocabularies are read as uncased, as llama.cpp reads them; a file that
// says it is cased (tokenizer.ggml.normalizer.lowercase false, newer converters) is refused.
//
// token_bytes(): a word-initial piece as " hello", a continuation as "lo", so that decoding
// joins pieces into words as BERT's decoder does (with one leading space to strip).
#include <memory>

#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {

// Throws lumen::Error for a vocabulary without an unknown token ([UNK]).
std::unique_ptr<TokenizerModel> make_wordpiece(std::shared_ptr<const Vocab> vocab);

// The normalised words WordPiece splits (exposed for tests).
std::vector<std::string> bert_words(std::string_view text);

}  // namespace lumen::tokenizer
