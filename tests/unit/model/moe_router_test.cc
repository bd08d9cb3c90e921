// The MoE router's decision (model/moe_router.h) against the definitions it implements:
// softmax (or sigmoid) probabilities, the k most probable experts in order, their weights
// renormalized or not, and the grouping of a batch's tokens by expert.
#include "model/moe_router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "util/error.h"

namespace lumen::model {
namespace {

std::vector<float> random_logits(int64_t tokens, int64_t experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> v(static_cast<size_t>(tokens * experts));
  for (float& x : v) x = dist(rng);
  return v;
}

// Softmax in double: the definition the router's f32 arithmetic must agree with.
std::vector<double> softmax(const float* row, int64_t n) {
  const double max = *std::max_element(row, row + n);
  std::vector<double> p(static_cast<size_t>(n));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += p[static_cast<size_t>(i)] = std::exp(row[i] - max);
  for (double& x : p) x /= sum;
  return p;
}

TEST(MoeRouter, PicksTheMostProbableExpertsInOrderWithTheirProbabilities) {
  const int64_t tokens = 40, experts = 60, k = 4;
  const std::vector<float> logits = random_logits(tokens, experts, 1);
  Routing r;
  route_tokens(logits, {experts, k, ExpertGating::Softmax, false}, r);
  ASSERT_EQ(r.experts.size(), static_cast<size_t>(tokens * k));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = logits.data() + t * experts;
    const std::vector<double> p = softmax(row, experts);
    std::vector<int32_t> order(static_cast<size_t>(experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int64_t s = 0; s < k; ++s) {
      const auto i = static_cast<size_t>(t * k + s);
      EXPECT_EQ(r.experts[i], order[static_cast<size_t>(s)]) << "token " << t << " slot " << s;
      // Not renormalized: the softmax probability itself.
      EXPECT_NEAR(r.weights[i], p[static_cast<size_t>(r.experts[i])], 1e-6 * p[static_cast<size_t>(r.experts[i])]);
    }
  }
}

// gpt-oss (SoftmaxWeight): the experts of the k largest logits, weighted by a softmax over those
// k logits only.
TEST(MoeRouter, SoftmaxWeightChoosesByLogitAndWeighsOverTheChosenOnly) {
  const int64_t tokens = 24, experts = 32, k = 4;
  const std::vector<float> logits = random_logits(tokens, experts, 7);
  Routing r;
  route_tokens(logits, {experts, k, ExpertGating::SoftmaxWeight, false}, r);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = logits.data() + t * experts;
    std::vector<int32_t> order(static_cast<size_t>(experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    std::vector<float> chosen;
    for (int64_t s = 0; s < k; ++s) chosen.push_back(row[order[static_cast<size_t>(s)]]);
    const std::vector<double> p = softmax(chosen.data(), k);
    double total = 0.0;
    for (int64_t s = 0; s < k; ++s) {
      const auto i = static_cast<size_t>(t * k + s);
      EXPECT_EQ(r.experts[i], order[static_cast<size_t>(s)]) << "token " << t << " slot " << s;
      EXPECT_NEAR(r.weights[i], p[static_cast<size_t>(s)], 1e-6) << "token " << t << " slot " << s;
      total += r.weights[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-6);
    // Not the softmax over every expert: those weights would sum to less than 1.
    const std::vector<double> all = softmax(row, experts);
    EXPECT_GT(std::abs(r.weights[static_cast<size_t>(t * k)] - all[static_cast<size_t>(order[0])]), 1e-3);
  }
  // Grouped routing has no meaning with it: refused.
  RouterConfig grouped{experts, k, ExpertGating::SoftmaxWeight, false};
  grouped.n_groups = 4;
  grouped.n_groups_used = 2;
  EXPECT_THROW(route_tokens(logits, grouped, r), Error);
}

TEST(MoeRouter, RenormalizedWeightsSumToOneInTheSameProportions) {
  const int64_t tokens = 16, experts = 8, k = 2;
  const std::vector<float> logits = random_logits(tokens, experts, 2);
  Routing plain, norm;
  route_tokens(logits, {experts, k, ExpertGating::Softmax, false}, plain);
  route_tokens(logits, {experts, k, ExpertGating::Softmax, true}, norm);
  EXPECT_EQ(plain.experts, norm.experts);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* w = norm.weights.data() + t * k;
    const float* p = plain.weights.data() + t * k;
    EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
    EXPECT_NEAR(w[0] / w[1], p[0] / p[1], 1e-5 * p[0] / p[1]);
    EXPECT_GE(w[0], w[1]);  // slot order: most probable first
  }
}

TEST(MoeRouter, SigmoidGatingScoresEachExpertOnItsOwn) {
  const std::vector<float> logits = {0.0f, 2.0f, -1.0f, 1.0f};
  Routing r;
  route_tokens(logits, {4, 2, ExpertGating::Sigmoid, false}, r);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3}));
  EXPECT_NEAR(r.weights[0], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(r.weights[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
}

TEST(MoeRouter, TiesGoToTheLowerExpertAndNanSortsLast) {
  const std::vector<float> logits = {1.0f, std::nanf(""), 3.0f, 3.0f, 1.0f};
  Routing r;
  route_tokens(logits, {5, 3, ExpertGating::Sigmoid, false}, r);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{2, 3, 0}));
}

TEST(MoeRouter, GroupsTokensByExpertInTokenOrder) {
  const int64_t tokens = 30, experts = 12, k = 3;
  const std::vector<float> logits = random_logits(tokens, experts, 3);
  const RouterConfig config{experts, k, ExpertGating::Softmax, true};
  Routing r;
  route_tokens(logits, config, r);
  ExpertGroups g;
  group_by_expert(r, config, g);
  ASSERT_EQ(g.begin.size(), g.expert.size() + 1);
  ASSERT_EQ(g.begin.back(), tokens * k);
  std::vector<int> seen(static_cast<size_t>(tokens * k), 0);
  for (size_t i = 0; i < g.expert.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(g.expert[i - 1], g.expert[i]);
    }
    EXPECT_LT(g.begin[i], g.begin[i + 1]);  // no empty groups
    for (int64_t e = g.begin[i]; e < g.begin[i + 1]; ++e) {
      const auto at = static_cast<size_t>(e);
      if (e > g.begin[i]) {
        EXPECT_LT(g.rows[at - 1], g.rows[at]);
      }
      const auto entry = static_cast<size_t>(g.rows[at] * k + g.slots[at]);
      EXPECT_EQ(r.experts[entry], g.expert[i]);
      EXPECT_EQ(r.weights[entry], g.weights[at]);
      ++seen[entry];
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// DeepSeek-V3's routing, checked against its definition written out independently: sigmoid
// scores; experts chosen by score + bias among the best groups (a group scored by the sum of its
// two best biased scores); weights the unbiased scores, renormalized, then scaled.
TEST(MoeRouter, BiasedGroupLimitedSelectionWeighsByTheUnbiasedScores) {
  const int64_t tokens = 24, experts = 16, k = 3, groups = 4, groups_used = 2;
  const std::vector<float> logits = random_logits(tokens, experts, 5);
  std::vector<float> bias(static_cast<size_t>(experts));
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> spread(-0.3f, 0.3f);
  for (float& b : bias) b = spread(rng);
  RouterConfig config{experts, k, ExpertGating::Sigmoid, true};
  config.scale = 2.5f;
  config.n_groups = groups;
  config.n_groups_used = groups_used;
  Routing r;
  route_tokens(logits, config, r, bias);
  bool bias_changed_a_choice = false;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = logits.data() + t * experts;
    std::vector<double> score(static_cast<size_t>(experts)), biased(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) {
      score[static_cast<size_t>(e)] = 1.0 / (1.0 + std::exp(-static_cast<double>(row[e])));
      biased[static_cast<size_t>(e)] = score[static_cast<size_t>(e)] + bias[static_cast<size_t>(e)];
    }
    const int64_t per_group = experts / groups;
    std::vector<std::pair<double, int64_t>> group_score;
    for (int64_t g = 0; g < groups; ++g) {
      std::vector<double> members(biased.begin() + g * per_group, biased.begin() + (g + 1) * per_group);
      std::sort(members.rbegin(), members.rend());
      group_score.push_back({members[0] + members[1], g});
    }
    std::stable_sort(group_score.begin(), group_score.end(), [](auto& a, auto& b) { return a.first > b.first; });
    std::vector<int64_t> allowed;
    for (int64_t i = 0; i < groups_used; ++i) {
      for (int64_t e = 0; e < per_group; ++e) allowed.push_back(group_score[static_cast<size_t>(i)].second * per_group + e);
    }
    std::stable_sort(allowed.begin(), allowed.end(), [&](int64_t a, int64_t b) {
      return biased[static_cast<size_t>(a)] > biased[static_cast<size_t>(b)];
    });
    double sum = 0.0;
    for (int64_t s = 0; s < k; ++s) sum += score[static_cast<size_t>(allowed[static_cast<size_t>(s)])];
    std::vector<int64_t> unbiased_top(static_cast<size_t>(experts));
    std::iota(unbiased_top.begin(), unbiased_top.end(), 0);
    std::stable_sort(unbiased_top.begin(), unbiased_top.end(),
                     [&](int64_t a, int64_t b) { return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]; });
    for (int64_t s = 0; s < k; ++s) {
      const auto i = static_cast<size_t>(t * k + s);
      const int64_t want = allowed[static_cast<size_t>(s)];
      EXPECT_EQ(r.experts[i], want) << "token " << t << " slot " << s;
      EXPECT_NEAR(r.weights[i], 2.5 * score[static_cast<size_t>(want)] / sum, 1e-5) << "token " << t;
      bias_changed_a_choice |= want != unbiased_top[static_cast<size_t>(s)];
    }
  }
  EXPECT_TRUE(bias_changed_a_choice);  // the bias and the groups did decide something
}

TEST(MoeRouter, RefusesABadConfiguration) {
  Routing r;
  const std::vector<float> logits(8, 0.0f);
  EXPECT_THROW(route_tokens(logits, {4, 0, ExpertGating::Softmax, false}, r), Error);
  EXPECT_THROW(route_tokens(logits, {4, 5, ExpertGating::Softmax, false}, r), Error);
  EXPECT_THROW(route_tokens(logits, {3, 1, ExpertGating::Softmax, false}, r), Error);  // 8 % 3
  const std::vector<float> bias(3, 0.0f);
  EXPECT_THROW(route_tokens(logits, {4, 1, ExpertGating::Softmax, false}, r, bias), Error);  // 3 biases, 4 experts
  RouterConfig grouped{4, 2, ExpertGating::Softmax, false};
  grouped.n_groups = 4;  // groups of one expert cannot be scored by their best two
  grouped.n_groups_used = 2;
  EXPECT_THROW(route_tokens(logits, grouped, r), Error);
  grouped.n_groups = 2;
  grouped.n_groups_used = 3;
  EXPECT_THROW(route_tokens(logits, grouped, r), Error);
}

}  // namespace
}  // namespace lumen::model
