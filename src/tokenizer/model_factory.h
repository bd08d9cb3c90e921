#pragma once
// Chooses the tokenization algorithm a vocabulary needs.
#include <memory>

#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {

// Throws lumen::Error for a vocabulary kind or pre-tokenizer Lumen cannot run exactly.
std::unique_ptr<TokenizerModel> make_tokenizer_model(std::shared_ptr<const Vocab> vocab);

}  // namespace lumen::tokenizer
