// The next-token mask against brute force over a real vocabulary (SmolLM2's 49,152 tokens):
// on random walks through several grammars, at every step the mask must be exactly the set of
// tokens the matcher accepts (each tried, then rolled back), and rolling back restores the
// earlier masks exactly.
#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar_matcher.h"
#include "lumen_testdata.h"
#include "real_vocabulary.h"

namespace lumen::grammar {
namespace {

constexpr int kSteps = LUMEN_UNDER_SANITIZERS ? 3 : 14;

bool bit(const std::vector<uint32_t>& mask, size_t id) { return (mask[id >> 5] >> (id & 31)) & 1u; }

std::vector<uint32_t> brute_force_mask(GrammarMatcher& matcher, size_t vocabulary_size) {
  std::vector<uint32_t> mask(bitmask_words(vocabulary_size), 0);
  for (size_t id = 0; id < vocabulary_size; ++id) {
    if (matcher.accept_token(static_cast<int32_t>(id))) {
      mask[id >> 5] |= 1u << (id & 31);
      matcher.rollback(1);
    }
  }
  return mask;
}

void expect_masks_equal(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want, const TokenVocabulary& vocab,
                        int step) {
  if (got == want) return;
  int shown = 0;
  for (size_t id = 0; id < vocab.size() && shown < 8; ++id) {
    if (bit(got, id) != bit(want, id)) {
      ADD_FAILURE() << "step " << step << ": token " << id << " '" << vocab.token_bytes(static_cast<int32_t>(id))
                    << "' is " << (bit(got, id) ? "allowed" : "refused") << " by the mask, "
                    << (bit(want, id) ? "accepted" : "refused") << " by the matcher";
      ++shown;
    }
  }
}

void random_walks(const std::string& grammar_text, uint32_t seed, int walks = 2) {
  auto vocab = testing::load_real_vocabulary();
  auto compiled = compile_grammar(parse_gbnf(grammar_text), vocab);
  std::mt19937 rng(seed);
  for (int walk = 0; walk < walks; ++walk) {
    GrammarMatcher matcher(compiled);
    std::vector<std::vector<uint32_t>> masks;
    std::string text;
    bool stopped = false;  // no token allowed any more: the last mask is the current state's
    for (int step = 0; step < kSteps; ++step) {
      std::vector<uint32_t> mask(bitmask_words(vocab->size()));
      matcher.fill_next_token_bitmask(mask);
      expect_masks_equal(mask, brute_force_mask(matcher, vocab->size()), *vocab, step);
      masks.push_back(mask);
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < vocab->size(); ++id)
        if (bit(mask, id) && !vocab->is_end_of_generation(static_cast<int32_t>(id))) allowed.push_back(static_cast<int32_t>(id));
      if (allowed.empty()) {
        stopped = true;
        break;
      }
      int32_t token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      ASSERT_TRUE(matcher.accept_token(token));
      text += vocab->token_bytes(token);
    }
    SCOPED_TRACE("text: " + text);
    // Roll back to every earlier step and compare.
    // masks[i] is the mask after i tokens.
    const int accepted = static_cast<int>(masks.size()) - (stopped ? 1 : 0);
    int back = std::min(accepted, matcher.rollback_available());
    for (int k = 1; k <= back; ++k) {
      matcher.rollback(1);
      std::vector<uint32_t> mask(bitmask_words(vocab->size()));
      matcher.fill_next_token_bitmask(mask);
      EXPECT_EQ(mask, masks[static_cast<size_t>(accepted - k)]) << "after rolling back " << k;
    }
  }
}

TEST(MaskBruteForce, Json) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(testing::read_grammar_file("json.gbnf"), 1);
}
TEST(MaskBruteForce, Arithmetic) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(testing::read_grammar_file("arithmetic.gbnf"), 2);
}
TEST(MaskBruteForce, C) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(testing::read_grammar_file("c.gbnf"), 3);
}
TEST(MaskBruteForce, List) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(testing::read_grammar_file("list.gbnf"), 4);
}
TEST(MaskBruteForce, JapaneseMultiByteClasses) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(testing::read_grammar_file("japanese.gbnf"), 5);
}
TEST(MaskBruteForce, BoundedRepetition) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks("root ::= (\"0x\" [A-F0-9]{2} \" \"?){3,5} [a-z]{0,3} \"!\"", 6);
}
TEST(MaskBruteForce, SchemaLikeObject) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks(R"(root ::= "{" ws "\"name\"" ws ":" ws string ws "," ws "\"age\"" ws ":" ws int ws ("," ws "\"tags\"" ws ":" ws "[" ws (string (ws "," ws string)*)? ws "]" ws)? "}"
string ::= "\"" ([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\""
int ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
ws ::= [ \t\n]{0,4}
)", 7);
}
TEST(MaskBruteForce, NegatedAndAnyCharacters) {
  LUMEN_REQUIRE_TESTDATA();
  random_walks("root ::= ([^a-z\\u00e0-\\u00ff] | \"é\" .){1,40} \"z\"", 8);
}

}  // namespace
}  // namespace lumen::grammar
