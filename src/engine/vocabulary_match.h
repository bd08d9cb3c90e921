#pragma once
// Speculative decoding with a draft model proposes token ids that the target verifies as its
// own, so both must number the same texts the same way: a draft whose id 1234 is another text
// than the target's 1234 would only ever be rejected (or, worse, accepted by chance while
// meaning something else to the draft). llama.cpp's speculative example checks the same.
#include <string>

#include "model/hparams.h"
#include "tokenizer/vocab.h"

namespace lumen::engine {

// Throws lumen::Error when the draft's vocabulary is not the target's: a different size (of the
// token list or of the logits), a different tokenizer kind, or the first token id whose text
// differs, with both texts. `draft_name` names the draft in the message (its path).
void require_same_vocabulary(const tokenizer::Vocab& target, const model::HParams& target_hp,
                             const tokenizer::Vocab& draft, const model::HParams& draft_hp,
                             const std::string& draft_name);

}  // namespace lumen::engine
