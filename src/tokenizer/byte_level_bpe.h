#pragma once
// Byte-level BPE (GPT-2 style): pre-tokenizer regexes, bytes mapped to printable code points,
// merges applied by rank.
#include <memory>

#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {

// Throws lumen::Error for an unknown pre-tokenizer (vocab->pre_tokenizer).
std::unique_ptr<TokenizerModel> make_byte_level_bpe(std::shared_ptr<const Vocab> vocab);

}  // namespace lumen::tokenizer
