// Control tokens recognised by text (tokenizer/control_token_detection.h): gpt-oss's harmony
// vocabulary (both <|return|> and <|call|>) keeps <|end|> out of the tokens that end
// generation, since it closes the reply's reasoning message and the final one follows; the
// markers stay control tokens (a client's text that spells them is text). Elsewhere <|end|>
// (Phi-3's end of turn) ends generation as before.
#include "tokenizer/control_token_detection.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lumen::tokenizer {
namespace {

Vocab vocab_of(std::vector<std::string> tokens) {
  Vocab v;
  v.kind = VocabKind::BytePairGpt2;
  v.types.assign(tokens.size(), TokenType::Normal);
  v.tokens = std::move(tokens);
  return v;
}

bool ends(const Vocab& v, int32_t id) {
  return std::find(v.end_of_generation.begin(), v.end_of_generation.end(), id) != v.end_of_generation.end();
}

TEST(ControlTokens, HarmonyEndClosesAMessageNotTheReply) {
  Vocab v =
      vocab_of({"a", "<|endoftext|>", "<|return|>", "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|call|>"});
  v.special.eos = 2;  // <|return|>
  detect_control_tokens(v);
  EXPECT_FALSE(ends(v, 4)) << "<|end|>";
  EXPECT_TRUE(ends(v, 2)) << "<|return|>";
  EXPECT_TRUE(ends(v, 7)) << "<|call|>";
  EXPECT_TRUE(ends(v, 1)) << "<|endoftext|>";
  EXPECT_EQ(v.types[4], TokenType::Control);
}

TEST(ControlTokens, EndStillEndsPhi3Turns) {
  Vocab v = vocab_of({"a", "<|endoftext|>", "<|end|>", "<|user|>"});
  detect_control_tokens(v);
  EXPECT_TRUE(ends(v, 2));
}

}  // namespace
}  // namespace lumen::tokenizer
