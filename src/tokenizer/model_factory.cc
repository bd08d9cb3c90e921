#include "tokenizer/model_factory.h"

#include "tokenizer/byte_level_bpe.h"
#include "tokenizer/sentencepiece_bpe.h"
#include "tokenizer/wordpiece.h"
#include "util/error.h"

namespace lumen::tokenizer {

std::unique_ptr<TokenizerModel> make_tokenizer_model(std::shared_ptr<const Vocab> vocab) {
  switch (vocab->kind) {
    case VocabKind::BytePairGpt2: return make_byte_level_bpe(std::move(vocab));
    case VocabKind::SentencePiece: return make_sentencepiece_bpe(std::move(vocab));
    case VocabKind::WordPiece: return make_wordpiece(std::move(vocab));
    default: break;
  }
  fail("tokenizer model '{}' ({}) is not supported yet", vocab->model_name,
       vocab_kind_name(vocab->kind));
}

}  // namespace lumen::tokenizer
