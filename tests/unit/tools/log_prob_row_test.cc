// The per-row arithmetic of perplexity and KL divergence against direct computations in double.
#include "tools/log_prob_row.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace lumen::tools {
namespace {

std::vector<float> random_logits(size_t n, unsigned seed, float spread = 6.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<double> log_softmax(const std::vector<float>& logits) {
  double max = logits[0];
  for (float l : logits) max = std::max<double>(max, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(l - max);
  std::vector<double> out;
  for (float l : logits) out.push_back(l - max - std::log(sum));
  return out;
}

TEST(LogProbRow, NllIsMinusTheLogSoftmax) {
  const auto logits = random_logits(1001, 1);
  const auto expected = log_softmax(logits);
  const RowSummary s = summarize_row(logits);
  for (int32_t t : {0, 17, 500, 1000}) EXPECT_NEAR(s.nll(logits, t), -expected[static_cast<size_t>(t)], 1e-5);
  EXPECT_EQ(logits[static_cast<size_t>(s.argmax)], s.max_logit);
}

TEST(LogProbRow, EncodedRowsAreOddVocabulariesPaddedToEven) {
  EXPECT_EQ(encoded_row_entries(49152), 49156);
  EXPECT_EQ(encoded_row_entries(7), 12);
}

TEST(LogProbRow, EncodingKeepsLogProbsWithinItsStep) {
  const auto logits = random_logits(999, 2);
  const auto expected = log_softmax(logits);
  std::vector<uint16_t> row(static_cast<size_t>(encoded_row_entries(999)));
  encode_log_probs(logits, summarize_row(logits), row);
  const EncodedRow decoded(row);
  ASSERT_EQ(decoded.size(), 1000u);  // the padding entry
  const double step = 16.0 / 65535;
  for (size_t i = 0; i < 999; ++i) {
    const double top = *std::max_element(expected.begin(), expected.end());
    if (expected[i] > top - 16) {
      EXPECT_NEAR(decoded.log_prob(static_cast<int32_t>(i)), expected[i], step) << i;
    } else {  // below the floor: the floor
      EXPECT_NEAR(decoded.log_prob(static_cast<int32_t>(i)), top - 16, 1e-4) << i;
    }
  }
}

TEST(LogProbRow, FlatRowEncodesAsTheFloor) {
  const std::vector<float> logits(10, 3.0f);
  std::vector<uint16_t> row(static_cast<size_t>(encoded_row_entries(10)));
  encode_log_probs(logits, summarize_row(logits), row);
  const EncodedRow decoded(row);
  EXPECT_NEAR(decoded.log_prob(4), std::log(0.1), 1e-6);
}

TEST(LogProbRow, KlDivergenceOfTwoDistributions) {
  const auto p_logits = random_logits(300, 3, 2.0f);
  const auto q_logits = random_logits(300, 4, 2.0f);
  std::vector<uint16_t> row(static_cast<size_t>(encoded_row_entries(300)));
  encode_log_probs(p_logits, summarize_row(p_logits), row);
  const auto p = log_softmax(p_logits);
  const auto q = log_softmax(q_logits);
  double kld = 0;
  size_t p_top = 0, q_top = 0;
  for (size_t i = 0; i < 300; ++i) {
    kld += std::exp(p[i]) * (p[i] - q[i]);
    if (p[i] > p[p_top]) p_top = i;
    if (q[i] > q[q_top]) q_top = i;
  }
  const KldSample s = compare_with_base(q_logits, summarize_row(q_logits), EncodedRow(row), 7);
  EXPECT_NEAR(s.kld, kld, 1e-3 * kld);
  EXPECT_NEAR(s.nll, -q[7], 1e-5);
  EXPECT_NEAR(s.nll_base, -p[7], 1e-3);
  EXPECT_NEAR(s.p_diff, std::exp(q[7]) - std::exp(p[7]), 1e-5);
  EXPECT_EQ(s.same_top, p_top == q_top);

  const KldSample same = compare_with_base(p_logits, summarize_row(p_logits), EncodedRow(row), 7);
  EXPECT_NEAR(same.kld, 0.0, 16.0 / 65535);  // no more than the encoding's step
  EXPECT_TRUE(same.same_top);
}

}  // namespace
}  // namespace lumen::tools
