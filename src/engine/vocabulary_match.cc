#include "engine/vocabulary_match.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace lumen::engine {

namespace {

// A token's text as a JSON string: quoted, control bytes escaped, invalid UTF-8 replaced, so
// the message stays one readable line whatever the token holds.
std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void require_same_vocabulary(const tokenizer::Vocab& target, const model::HParams& target_hp,
                             const tokenizer::Vocab& draft, const model::HParams& draft_hp,
                             const std::string& draft_name) {
  if (draft.size() != target.size()) {
    fail("draft model {}: its vocabulary has {} tokens, the target's {}: a draft must share the target's vocabulary",
         draft_name, draft.size(), target.size());
  }
  if (draft_hp.vocab_size != target_hp.vocab_size) {
    fail("draft model {}: it scores {} token ids, the target {}: a draft must share the target's vocabulary",
         draft_name, draft_hp.vocab_size, target_hp.vocab_size);
  }
  if (draft.kind != target.kind) {
    fail("draft model {}: its tokenizer is {}, the target's {}", draft_name, tokenizer::vocab_kind_name(draft.kind),
         tokenizer::vocab_kind_name(target.kind));
  }
  for (size_t id = 0; id < target.size(); ++id) {
    if (draft.tokens[id] != target.tokens[id]) {
      fail("draft model {}: token {} is {} in the draft and {} in the target: a draft must share the target's "
           "vocabulary",
           draft_name, id, quoted(draft.tokens[id]), quoted(target.tokens[id]));
    }
  }
}

}  // namespace lumen::engine
