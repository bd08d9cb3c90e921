// Logit bias and the penalties change logits exactly as defined (hand-computed values, chosen
// to be exact in float), and the penalty window counts the right tokens.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <vector>

#include "sampling/logit_processors.h"
#include "sampling/penalty_window.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace lumen::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(LogitBias, AddsToTheNamedTokens) {
  std::vector<float> z = {1.0f, -2.0f, 0.5f, 3.0f};
  const std::vector<std::pair<int32_t, float>> bias = {{0, 2.5f}, {3, -100.0f}, {2, -kInf}};
  apply_logit_bias(z, bias);
  EXPECT_EQ(z, (std::vector<float>{3.5f, -2.0f, -kInf, -97.0f}));
}

TEST(LogitBias, ATokenOutsideTheRowIsAnError) {
  std::vector<float> z(4, 0.0f);
  const std::vector<std::pair<int32_t, float>> bias = {{4, 1.0f}};
  EXPECT_THROW(apply_logit_bias(z, bias), Error);
}

// logits 2, -1, 0.5, 3, -2, 0.25; prompt 0 1; output 0 3 3; repetition 2, frequency 0.5,
// presence 0.25, whole window:
//   token 0: in window (prompt and output), positive: 2 / 2 = 1; once in the output:
//            1 - (1 * 0.5 + 0.25) = 0.25
//   token 1: prompt only, negative: -1 * 2 = -2; not in the output: stays -2
//   token 3: output twice: 3 / 2 = 1.5; 1.5 - (2 * 0.5 + 0.25) = 0.25
//   tokens 2, 4, 5: not in the window: unchanged
TEST(Penalties, HandComputedWholeWindow) {
  PenaltyWindow window(-1);
  for (int32_t t : {0, 1}) window.push(t, false);
  for (int32_t t : {0, 3, 3}) window.push(t, true);
  std::vector<float> z = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.25f};
  apply_penalties(z, window, {2.0f, 0.5f, 0.25f});
  EXPECT_EQ(z, (std::vector<float>{0.25f, -2.0f, 0.5f, 0.25f, -2.0f, 0.25f}));
}

// The same with a window of the last 3 tokens (0, 3, 3 -- all output): token 1 leaves the
// window; token 0 counts once (as output) in it.
//   token 0: 2 / 2 = 1; 1 - 0.75 = 0.25.  token 1: -1 (untouched).  token 3: 0.25 as before.
TEST(Penalties, HandComputedLastThree) {
  PenaltyWindow window(3);
  for (int32_t t : {0, 1}) window.push(t, false);
  for (int32_t t : {0, 3, 3}) window.push(t, true);
  std::vector<float> z = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.25f};
  apply_penalties(z, window, {2.0f, 0.5f, 0.25f});
  EXPECT_EQ(z, (std::vector<float>{0.25f, -1.0f, 0.5f, 0.25f, -2.0f, 0.25f}));
}

// Each penalty alone, including the repetition penalty below 1 (which favours repeats) and a
// negative frequency penalty.
TEST(Penalties, EachAlone) {
  PenaltyWindow window(-1);
  window.push(1, false);
  window.push(2, true);
  window.push(2, true);
  std::vector<float> z = {4.0f, 4.0f, -4.0f, 0.0f};
  apply_penalties(z, window, {0.5f, 0.0f, 0.0f});
  EXPECT_EQ(z, (std::vector<float>{4.0f, 8.0f, -2.0f, 0.0f}));
  z = {4.0f, 4.0f, -4.0f, 0.0f};
  apply_penalties(z, window, {1.0f, -0.5f, 0.0f});
  EXPECT_EQ(z, (std::vector<float>{4.0f, 4.0f, -3.0f, 0.0f}));  // prompt token 1 not counted
  z = {4.0f, 4.0f, -4.0f, 0.0f};
  apply_penalties(z, window, {1.0f, 0.0f, 1.5f});
  EXPECT_EQ(z, (std::vector<float>{4.0f, 4.0f, -5.5f, 0.0f}));
}

TEST(Penalties, ZeroLogitIsUnchangedByRepetition) {
  PenaltyWindow window(-1);
  window.push(0, false);
  std::vector<float> z = {0.0f};
  apply_penalties(z, window, {3.0f, 0.0f, 0.0f});
  EXPECT_EQ(z[0], 0.0f);
}

TEST(PenaltyWindow, ZeroCountsNothing) {
  PenaltyWindow window(0);
  window.push(5, true);
  EXPECT_EQ(window.count(5), 0);
  EXPECT_EQ(window.distinct(), 0u);
}

TEST(PenaltyWindow, NegativeIdsAreRejected) {
  PenaltyWindow window(-1);
  EXPECT_THROW(window.push(-1, true), Error);
}

// The table against brute-force counts over a sliding window, through many insertions and
// removals (tokens from a small range, so probe runs collide and backward-shift deletion is
// exercised, and from a wide range, so the table grows).
TEST(PenaltyWindow, MatchesBruteForceCounts) {
  for (int32_t last_n : {-1, 1, 7, 64, 300}) {
    for (int32_t range : {10, 5000}) {
      SCOPED_TRACE(testing::Message() << "last_n " << last_n << " range " << range);
      std::mt19937_64 rng(static_cast<uint64_t>(last_n * 31 + range));
      PenaltyWindow window(last_n);
      std::vector<std::pair<int32_t, bool>> history;
      for (int step = 0; step < 3000; ++step) {
        const auto token = static_cast<int32_t>(rng() % static_cast<uint64_t>(range));
        const bool is_output = step > 500;
        window.push(token, is_output);
        history.push_back({token, is_output});
        if (step % 97 != 0) continue;
        std::map<int32_t, std::pair<int, int>> expected;
        const size_t first = last_n < 0 || history.size() <= static_cast<size_t>(last_n)
                                 ? 0
                                 : history.size() - static_cast<size_t>(last_n);
        for (size_t i = first; i < history.size(); ++i) {
          auto& [all, out] = expected[history[i].first];
          ++all;
          if (history[i].second) ++out;
        }
        ASSERT_EQ(window.distinct(), expected.size()) << "step " << step;
        for (const auto& [t, counts] : expected) {
          ASSERT_EQ(window.count(t), counts.first) << t;
          ASSERT_EQ(window.output_count(t), counts.second) << t;
        }
        size_t visited = 0;
        window.for_each([&](const PenaltyWindow::Entry& e) {
          ++visited;
          EXPECT_EQ(e.count, expected.at(e.token).first);
        });
        ASSERT_EQ(visited, expected.size());
      }
    }
  }
}

// The Sampler applies bias and penalties before anything else: its reported log-probabilities
// (log-softmax of the processed logits) differ exactly as the hand-computed logits do.
TEST(Penalties, TheSamplerReportsTheProcessedDistribution) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.logit_bias = {{4, 1.0f}, {5, 0.5f}};
  p.logprobs = 6;
  Sampler sampler(p, std::vector<int32_t>{0, 1});
  for (int32_t t : {0, 3, 3}) sampler.accept(t);
  const std::vector<float> z = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.25f};
  // Bias first (token 4: -1, token 5: 0.75), then penalties as in HandComputedWholeWindow:
  const std::vector<float> processed = {0.25f, -2.0f, 0.5f, 0.25f, -1.0f, 0.75f};
  const SampleResult r = sampler.sample(z);
  EXPECT_EQ(r.token, 5);  // greedy after bias and penalties (raw argmax: token 3)
  ASSERT_EQ(r.top.size(), 6u);
  std::map<int32_t, float> logprob;
  for (const TokenLogprob& t : r.top) logprob[t.token] = t.logprob;
  for (int32_t t = 0; t < 6; ++t) {
    EXPECT_NEAR(logprob[t] - logprob[5], processed[static_cast<size_t>(t)] - processed[5], 1e-6)
        << t;
  }
}

}  // namespace
}  // namespace lumen::sampling
