// A draft model must number the target's texts the same way: the first difference is named.
#include "engine/vocabulary_match.h"

#include <gtest/gtest.h>

#include "lumen/error.h"

namespace lumen::engine {
namespace {

struct Pair {
  tokenizer::Vocab vocab;
  model::HParams hp;
};

Pair make(std::vector<std::string> tokens) {
  Pair p;
  p.vocab.kind = tokenizer::VocabKind::BytePairGpt2;
  p.vocab.tokens = std::move(tokens);
  p.hp.vocab_size = p.vocab.tokens.size();
  return p;
}

std::string refusal(const Pair& target, const Pair& draft) {
  try {
    require_same_vocabulary(target.vocab, target.hp, draft.vocab, draft.hp, "d.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VocabularyMatch, TheSameVocabularyPasses) {
  const Pair a = make({"a", "b", "\xc4\xa0the"});
  EXPECT_EQ(refusal(a, a), "");
}

TEST(VocabularyMatch, TheFirstDifferingTokenIsNamedWithBothTexts) {
  const Pair target = make({"a", "b", "c", "\n"});
  const Pair draft = make({"a", "b", "x", "\t"});
  const std::string message = refusal(target, draft);
  EXPECT_NE(message.find("d.gguf: token 2 is \"x\" in the draft and \"c\" in the target"), std::string::npos)
      << message;
  // Control bytes and invalid UTF-8 stay one printable line.
  const std::string control = refusal(make({"\n"}), make({"\xff"}));
  EXPECT_NE(control.find("\"\\n\" in the target"), std::string::npos) << control;
  EXPECT_EQ(control.find('\n'), std::string::npos) << control;
}

TEST(VocabularyMatch, SizesAndKindsMustMatch) {
  const Pair target = make({"a", "b", "c"});
  EXPECT_NE(refusal(target, make({"a", "b"})).find("2 tokens, the target's 3"), std::string::npos);
  Pair wider = make({"a", "b", "c"});
  wider.hp.vocab_size = 8;  // padded logits
  EXPECT_NE(refusal(target, wider).find("scores 8 token ids, the target 3"), std::string::npos);
  Pair spm = make({"a", "b", "c"});
  spm.vocab.kind = tokenizer::VocabKind::SentencePiece;
  EXPECT_NE(refusal(target, spm).find("tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace lumen::engine
