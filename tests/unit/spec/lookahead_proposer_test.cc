// Lookahead decoding's proposer and its n-gram pool, against a toy "model" whose next token is a
// fixed function of the previous one: the window's rows have the documented tree shape, the
// Jacobi iterations turn its columns into the model's own n-grams, and the drafts they give are
// the model's continuation, though the sequence never contained it. Also the config keys.
#include "spec/lookahead_proposer.h"

#include <gtest/gtest.h>

#include "lumen/error.h"
#include "spec/speculative_config.h"

namespace lumen::spec {
namespace {

std::vector<int32_t> as_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST(NgramPool, KeepsTheMostRecentDistinctNgramsPerFirstToken) {
  NgramPool pool(2, 3);
  EXPECT_TRUE(pool.find(7).empty());
  const std::vector<int32_t> a = {1, 2}, b = {3, 4}, c = {5, 6}, d = {7, 8};
  pool.add(7, a);
  pool.add(7, b);
  pool.add(9, c);
  ASSERT_EQ(pool.find(7).size(), 2u);
  EXPECT_EQ(as_vector(pool.find(7)[0]), b);
  EXPECT_EQ(as_vector(pool.find(7)[1]), a);
  pool.add(7, a);  // seen again: first, not twice
  ASSERT_EQ(pool.find(7).size(), 2u);
  EXPECT_EQ(as_vector(pool.find(7)[0]), a);
  pool.add(7, c);
  pool.add(7, d);  // full: the oldest (b) goes
  ASSERT_EQ(pool.find(7).size(), 3u);
  EXPECT_EQ(as_vector(pool.find(7)[0]), d);
  EXPECT_EQ(as_vector(pool.find(7)[1]), c);
  EXPECT_EQ(as_vector(pool.find(7)[2]), a);
  EXPECT_EQ(pool.n_ngrams(), 4u);
}

// The toy model: after x comes (x + 1) mod 11.
int32_t next_of(int32_t x) { return (x + 1) % 11; }

struct Step {
  std::vector<int32_t> draft;
  ExtraRows rows;
};

Step propose(LookaheadProposer& p, const std::vector<int32_t>& tokens, int32_t max_tokens = 8) {
  Step s;
  const DraftRequest r{1, tokens, max_tokens, &s.draft, 0, &s.rows};
  p.propose(std::span(&r, 1));
  return s;
}

TEST(LookaheadProposer, TheWindowIsAChainAtLevelZeroAndColumnsAboveIt) {
  LookaheadProposer p({.window = 3, .ngram = 4, .guesses = 2});
  const Step s = propose(p, {5, 6, 7, 8, 9});
  // W - 1 rows at level 0, then W at each of levels 1 and 2.
  ASSERT_EQ(s.rows.size(), 8u);
  EXPECT_EQ(s.rows.depth, (std::vector<int32_t>{1, 2, 1, 2, 3, 2, 3, 4}));
  // Level 0: t, row 0, row 1. Level 1: column 0 on t, columns 1 and 2 on level 0's rows 0 and 1.
  // Level 2: on level 1's rows.
  EXPECT_EQ(s.rows.parent, (std::vector<int32_t>{-1, 0, -1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(s.rows.n_logits, 3);
  for (int32_t token : s.rows.tokens) EXPECT_TRUE(token >= 5 && token <= 9) << "picked from the sequence";
  EXPECT_TRUE(s.draft.empty());  // nothing pooled yet
}

TEST(LookaheadProposer, JacobiIterationsPoolTheModelsOwnNgramsAndDraftItsContinuation) {
  const LookaheadShape shape{.window = 4, .ngram = 4, .guesses = 3};
  LookaheadProposer p(shape);
  // The sequence holds none of the toy model's runs of three: it never drafts by copying.
  std::vector<int32_t> tokens = {3, 0, 7, 2, 9, 5};
  int drafted = 0;
  for (int step = 0; step < 40; ++step) {
    Step s = propose(p, tokens);
    ASSERT_EQ(std::ssize(s.rows.tokens), shape.extra_rows());
    // Every pooled n-gram is the model's: the draft is the true continuation of the last token.
    int32_t expected = tokens.back();
    for (int32_t token : s.draft) EXPECT_EQ(token, expected = next_of(expected)) << "step " << step;
    if (!s.draft.empty()) ++drafted;
    // The toy model's argmax after each top-level row is a function of that row's token alone.
    std::vector<int32_t> outputs;
    for (size_t r = s.rows.size() - static_cast<size_t>(s.rows.n_logits); r < s.rows.size(); ++r) {
      outputs.push_back(next_of(s.rows.tokens[r]));
    }
    p.observe(1, outputs);
    tokens.push_back(next_of(tokens.back()));  // the step's own token (drafts aside)
  }
  // Column i holds a chain of the model's guesses after N - 2 iterations; from then on the pool
  // fills, and with 11 tokens in the model's cycle and 4 columns, the last token is soon a key.
  EXPECT_GT(drafted, 20);
  ASSERT_NE(p.pool(1), nullptr);
  EXPECT_GT(p.pool(1)->n_ngrams(), 0u);
  // The draft respects the engine's room.
  EXPECT_LE(propose(p, tokens, 2).draft.size(), 2u);
  p.forget_ended([](uint64_t) { return false; });
  EXPECT_EQ(p.pool(1), nullptr);
}

TEST(LookaheadProposer, ObservationsWithoutProposedRowsChangeNothing) {
  LookaheadProposer p({.window = 2, .ngram = 3, .guesses = 1});
  p.observe(1, std::vector<int32_t>{1, 2});  // unknown sequence
  const Step s = propose(p, {4, 4, 4});
  p.observe(1, std::vector<int32_t>{1, 2, 3});  // wrong width: ignored
  p.observe(1, std::vector<int32_t>{1, 2});
  p.observe(1, std::vector<int32_t>{1, 2});  // nothing proposed since
  EXPECT_EQ(propose(p, {4, 4, 4}).rows.tokens, (std::vector<int32_t>{s.rows.tokens[2], 1, 2}));
}

TEST(LookaheadConfig, KeysDefaultsAndRanges) {
  SpeculativeConfig c = SpeculativeConfig::from_json(R"({"method": "lookahead"})", "--speculative-config");
  EXPECT_EQ(c.method, SpeculativeMethod::Lookahead);
  c = resolved(c);
  EXPECT_EQ(c.window_size, kDefaultLookaheadWindow);
  EXPECT_EQ(c.ngram_size, kDefaultLookaheadNgram);
  EXPECT_EQ(c.guess_set_size, kDefaultLookaheadGuesses);
  EXPECT_EQ(c.num_speculative_tokens, kDefaultLookaheadNgram - 1);
  EXPECT_NE(make_proposer(c), nullptr);
  c = resolved(SpeculativeConfig::from_json(
      R"({"method": "lookahead", "window_size": 7, "ngram_size": 5, "guess_set_size": 2, "num_speculative_tokens": 3})",
      "x"));
  EXPECT_EQ(c.window_size, 7);
  EXPECT_EQ(c.ngram_size, 5);
  EXPECT_EQ(c.guess_set_size, 2);
  EXPECT_EQ(c.num_speculative_tokens, 3);
  auto refuses = [](const std::string& json, const std::string& field) {
    try {
      SpeculativeConfig::from_json(json, "--speculative-config");
      ADD_FAILURE() << json << " accepted, expected an error about " << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refuses(R"({"method": "lookahead", "ngram_size": 2})", "ngram_size");
  refuses(R"({"method": "lookahead", "ngram_size": 9})", "ngram_size");
  refuses(R"({"method": "lookahead", "window_size": -1})", "window_size");
  refuses(R"({"method": "lookahead", "window_size": 17})", "window_size");
  refuses(R"({"method": "lookahead", "guess_set_size": 100})", "guess_set_size");
  refuses(R"({"method": "lookahead", "ngram_size": 3, "num_speculative_tokens": 3})", "num_speculative_tokens");
  refuses(R"({"method": "lookahead", "window_size": "4"})", "window_size");
  refuses(R"({"method": "ngram", "num_speculative_tokens": 3, "window_size": 4})", "lookahead only");
  refuses(R"({"method": "lookahead", "prompt_lookup_max": 4})", "ngram only");
  refuses(R"({"method": "jacobi"})", "lookahead");
}

}  // namespace
}  // namespace lumen::spec
