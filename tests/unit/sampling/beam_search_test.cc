// Beam search against exhaustive search on a tiny synthetic model: a vocabulary of a few
// tokens and a "model" whose logits are a pseudo-random function of the whole prefix, so that
// every prefix has its own distribution (nothing a greedy shortcut could exploit).
#include "sampling/beam_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "util/error.h"

namespace lumen::sampling {
namespace {

// Next-token logits after `prefix`: reproducible, different for every prefix.
std::vector<float> synthetic_logits(const std::vector<int32_t>& prefix, int32_t vocab, uint64_t seed) {
  uint64_t h = seed * 0x9E3779B97F4A7C15ull + 7;
  for (int32_t t : prefix) h = (h ^ static_cast<uint64_t>(t + 1)) * 0x100000001B3ull;
  std::mt19937_64 rng(h);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (float& z : logits) z = normal(rng);
  return logits;
}

double log_softmax_at(std::vector<float> logits, int32_t token, const std::vector<int32_t>& banned) {
  for (int32_t b : banned) logits[static_cast<size_t>(b)] = -std::numeric_limits<float>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  for (float z : logits) max = std::max(max, static_cast<double>(z));
  double total = 0.0;
  for (float z : logits) total += std::exp(static_cast<double>(z) - max);
  return static_cast<double>(logits[static_cast<size_t>(token)]) - max - std::log(total);
}

struct Scored {
  std::vector<int32_t> tokens;
  double score;
};

// Every hypothesis the definitions allow (ended by an end token, or at max_tokens), scored.
std::vector<Scored> exhaustive(const BeamSearchConfig& c, int32_t vocab, uint64_t seed) {
  std::vector<Scored> all;
  std::vector<int32_t> prefix;
  std::function<void(double)> visit = [&](double sum) {
    const std::vector<float> logits = synthetic_logits(prefix, vocab, seed);
    const bool ends_banned = static_cast<int64_t>(prefix.size()) < c.min_tokens;
    const std::vector<int32_t> banned = ends_banned ? c.end_tokens : std::vector<int32_t>{};
    for (int32_t t = 0; t < vocab; ++t) {
      const bool end = std::find(c.end_tokens.begin(), c.end_tokens.end(), t) != c.end_tokens.end();
      if (end && ends_banned) continue;
      const double s = sum + log_softmax_at(logits, t, banned);
      prefix.push_back(t);
      if (end || static_cast<int64_t>(prefix.size()) == c.max_tokens) {
        all.push_back({prefix, BeamSearch::score(s, prefix.size(), c.length_penalty)});
      } else {
        visit(s);
      }
      prefix.pop_back();
    }
  };
  visit(0.0);
  std::stable_sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return all;
}

// Drives the search with the synthetic model, as the engine drives it with a real one.
std::vector<BeamHypothesis> run(const BeamSearchConfig& c, int32_t vocab, uint64_t seed, int* rounds = nullptr) {
  BeamSearch search(c);
  int n_rounds = 0;
  while (!search.done()) {
    std::vector<std::vector<float>> rows;
    for (size_t b = 0; b < search.n_live(); ++b) {
      std::vector<int32_t> prefix;
      for (const BeamToken& t : search.live_tokens(b)) prefix.push_back(t.token);
      rows.push_back(synthetic_logits(prefix, vocab, seed));
    }
    std::vector<std::span<const float>> views(rows.begin(), rows.end());
    search.step(views);
    ++n_rounds;
  }
  if (rounds != nullptr) *rounds = n_rounds;
  return search.results();
}

std::vector<int32_t> tokens_of(const BeamHypothesis& h) {
  std::vector<int32_t> out;
  for (const BeamToken& t : h.tokens) out.push_back(t.token);
  return out;
}

struct Case {
  int32_t vocab;
  int64_t max_tokens;
  float length_penalty;
  std::vector<int32_t> end_tokens;
  int64_t min_tokens;
};

class BeamSearchExhaustiveTest : public ::testing::TestWithParam<Case> {};

TEST_P(BeamSearchExhaustiveTest, WideEnoughBeamFindsTheExhaustiveBest) {
  const Case& k = GetParam();
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    BeamSearchConfig c;
    // Wide enough to keep every prefix: the search is then exact, and the early exit (the
    // upper bound) is what this checks.
    c.width = static_cast<int32_t>(std::pow(k.vocab, k.max_tokens));
    c.n_results = 5;
    c.length_penalty = k.length_penalty;
    c.early_stopping = false;
    c.max_tokens = k.max_tokens;
    c.min_tokens = k.min_tokens;
    c.end_tokens = k.end_tokens;
    const std::vector<Scored> reference = exhaustive(c, k.vocab, seed);
    const std::vector<BeamHypothesis> got = run(c, k.vocab, seed);
    ASSERT_EQ(got.size(), 5u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(tokens_of(got[i]), reference[i].tokens) << "seed " << seed << " rank " << i;
      // (The search sums exps with the sampler's fast exp, good to ~1e-7 relative.)
      EXPECT_NEAR(got[i].score, reference[i].score, 1e-6) << "seed " << seed << " rank " << i;
      // The reported per-token log-probabilities add up to the sum the score came from.
      double sum = 0.0;
      for (const BeamToken& t : got[i].tokens) sum += t.logprob;
      EXPECT_NEAR(sum, got[i].sum_logprob, 1e-5);
      const bool ends_with_end =
          std::find(k.end_tokens.begin(), k.end_tokens.end(), got[i].tokens.back().token) != k.end_tokens.end();
      EXPECT_EQ(got[i].finish, ends_with_end ? FinishReason::Stop : FinishReason::Length);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configurations, BeamSearchExhaustiveTest,
    ::testing::Values(Case{4, 4, 1.0f, {0}, 0},     // an end token, length-normalized
                      Case{4, 4, 0.0f, {0}, 0},     // raw sums favour short hypotheses
                      Case{3, 5, 2.0f, {2}, 0},     // strong preference for long ones
                      Case{4, 4, -0.5f, {1}, 0},    // a negative penalty
                      Case{4, 4, 1.0f, {0, 3}, 2},  // two end tokens, banned before 2 tokens
                      Case{5, 3, 1.0f, {}, 0}));    // no end token: fixed length

// A plain beam search with the same rules that never exits early: it runs until every beam has
// ended, keeping every finished hypothesis. The early exit of BeamSearch (early_stopping =
// false) must not change the best results.
std::vector<Scored> beam_to_the_end(const BeamSearchConfig& c, int32_t vocab, uint64_t seed) {
  struct Live {
    std::vector<int32_t> tokens;
    double sum;
  };
  std::vector<Live> live{{{}, 0.0}};
  std::vector<Scored> finished;
  while (!live.empty()) {
    struct Proposal {
      double sum;
      size_t parent;
      int32_t token;
    };
    std::vector<Proposal> proposals;
    for (size_t b = 0; b < live.size(); ++b) {
      const std::vector<float> z = synthetic_logits(live[b].tokens, vocab, seed);
      const bool ends_banned = static_cast<int64_t>(live[b].tokens.size()) < c.min_tokens;
      const std::vector<int32_t> banned = ends_banned ? c.end_tokens : std::vector<int32_t>{};
      std::vector<Proposal> mine;
      for (int32_t t = 0; t < vocab; ++t) {
        if (std::find(banned.begin(), banned.end(), t) != banned.end()) continue;
        mine.push_back({live[b].sum + log_softmax_at(z, t, banned), b, t});
      }
      std::stable_sort(mine.begin(), mine.end(), [](const Proposal& x, const Proposal& y) { return x.sum > y.sum; });
      mine.resize(std::min(mine.size(), 2 * static_cast<size_t>(c.width)));
      proposals.insert(proposals.end(), mine.begin(), mine.end());
    }
    std::stable_sort(proposals.begin(), proposals.end(), [](const Proposal& x, const Proposal& y) { return x.sum > y.sum; });
    std::vector<Live> next;
    size_t made = 0;
    for (const Proposal& p : proposals) {
      if (made == static_cast<size_t>(c.width)) break;
      std::vector<int32_t> tokens = live[p.parent].tokens;
      tokens.push_back(p.token);
      const bool end = std::find(c.end_tokens.begin(), c.end_tokens.end(), p.token) != c.end_tokens.end();
      if (!end) ++made;
      if (end || static_cast<int64_t>(tokens.size()) == c.max_tokens) {
        finished.push_back({tokens, BeamSearch::score(p.sum, tokens.size(), c.length_penalty)});
      } else {
        next.push_back({std::move(tokens), p.sum});
      }
    }
    live = std::move(next);
  }
  std::stable_sort(finished.begin(), finished.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return finished;
}

TEST_P(BeamSearchExhaustiveTest, EarlyExitNeverChangesANarrowBeamsResult) {
  const Case& k = GetParam();
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    for (int32_t width : {2, 3, 5}) {
      BeamSearchConfig c;
      c.width = width;
      c.n_results = width;
      c.length_penalty = k.length_penalty;
      c.max_tokens = k.max_tokens + 4;
      c.min_tokens = k.min_tokens;
      c.end_tokens = k.end_tokens;
      const std::vector<Scored> reference = beam_to_the_end(c, k.vocab, seed);
      const std::vector<BeamHypothesis> got = run(c, k.vocab, seed);
      ASSERT_EQ(got.size(), std::min<size_t>(reference.size(), static_cast<size_t>(width)));
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(tokens_of(got[i]), reference[i].tokens) << "seed " << seed << " width " << width << " rank " << i;
      }
    }
  }
}

TEST(BeamSearchTest, NarrowBeamKeepsOnlyTheBestWidthPrefixesEachRound) {
  // Width 1 is greedy on the model's log-probabilities.
  BeamSearchConfig c;
  c.width = 1;
  c.max_tokens = 6;
  const std::vector<BeamHypothesis> got = run(c, 7, 42);
  ASSERT_EQ(got.size(), 1u);
  std::vector<int32_t> greedy;
  while (greedy.size() < 6) {
    const std::vector<float> z = synthetic_logits(greedy, 7, 42);
    greedy.push_back(static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin()));
  }
  EXPECT_EQ(tokens_of(got[0]), greedy);
}

TEST(BeamSearchTest, EarlyStoppingEndsOnceWidthHypothesesFinished) {
  BeamSearchConfig c;
  c.width = 3;
  c.n_results = 3;
  c.max_tokens = 30;
  c.end_tokens = {0};
  c.early_stopping = true;
  int rounds_early = 0;
  const std::vector<BeamHypothesis> early = run(c, 3, 9, &rounds_early);
  EXPECT_EQ(early.size(), 3u);
  EXPECT_LT(rounds_early, 30);  // with 1 token in 3 ending, three hypotheses end long before
  c.early_stopping = false;
  int rounds_exact = 0;
  const std::vector<BeamHypothesis> exact = run(c, 3, 9, &rounds_exact);
  EXPECT_GE(rounds_exact, rounds_early);
  EXPECT_GE(exact[0].score, early[0].score);  // searching on can only find better
}

TEST(BeamSearchTest, ExtensionsNameTheirParents) {
  BeamSearchConfig c;
  c.width = 3;
  c.max_tokens = 5;
  BeamSearch search(c);
  const std::vector<float> row = synthetic_logits({}, 6, 3);
  const std::vector<std::span<const float>> one{row};
  const auto& first = search.step(one);
  ASSERT_EQ(first.size(), 3u);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].parent, 0u);
    EXPECT_EQ(search.live_tokens(i).back().token, first[i].token);
  }
  // The three most likely tokens, most likely first.
  std::vector<int32_t> order(6);
  for (int32_t i = 0; i < 6; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)]; });
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first[i].token, order[i]);
}

TEST(BeamSearchTest, RejectsBadConfigurationsAndMisuse) {
  BeamSearchConfig c;
  c.width = 2;
  c.n_results = 3;
  EXPECT_THROW(BeamSearch{c}, Error);
  c.n_results = 1;
  c.width = 0;
  EXPECT_THROW(BeamSearch{c}, Error);
  c.width = 2;
  BeamSearch search(c);
  const std::vector<float> row(4, 0.0f);
  const std::vector<std::span<const float>> two{row, row};
  EXPECT_THROW(search.step(two), Error);  // one live beam, two rows
}

}  // namespace
}  // namespace lumen::sampling
