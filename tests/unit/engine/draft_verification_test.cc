// Losslessness of speculative verification, on a synthetic language model small enough to sample
// tens of thousands of times: with every processor of the chain on (temperature, top-k, top-p,
// min-p, penalties, logit bias), the first tokens generated with drafts follow the distribution
// of those generated without (a two-sample chi-square test), a seeded request yields the very
// same tokens, and a verifier that over-accepts drafts is caught by the same test.
#include "engine/draft_verification.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "spec/token_tree.h"
#include "two_sample_chi_square.h"

namespace lumen::engine {
namespace {

constexpr size_t kVocab = 6;
constexpr size_t kOut = 3;  // the joint distribution of the first three tokens: 216 cells

// Logits after `context`: a fixed random bigram table plus a term that depends on the position,
// so rows differ along a draft.
class TinyModel {
 public:
  TinyModel() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.5f);
    for (float& v : table_) v = normal(rng);
  }
  std::vector<float> logits(const std::vector<int32_t>& context) const {
    std::vector<float> row(kVocab);
    const auto last = static_cast<size_t>(context.back());
    for (size_t t = 0; t < kVocab; ++t) {
      row[t] = table_[last * kVocab + t] + (context.size() % 3 == t % 3 ? 0.4f : 0.0f);
    }
    return row;
  }

 private:
  std::vector<float> table_ = std::vector<float>(kVocab * kVocab);
};

// A deterministic proposer: the most likely raw continuation, except every third position the
// least likely one (usually cut by top-k, so probability 0: it must never be accepted).
std::vector<int32_t> propose(const TinyModel& model, std::vector<int32_t> context, size_t k) {
  std::vector<int32_t> draft;
  for (size_t j = 0; j < k; ++j) {
    const std::vector<float> row = model.logits(context);
    const auto best = std::max_element(row.begin(), row.end()) - row.begin();
    const auto worst = std::min_element(row.begin(), row.end()) - row.begin();
    draft.push_back(static_cast<int32_t>(context.size() % 3 == 2 ? worst : best));
    context.push_back(draft.back());
  }
  return draft;
}

std::shared_ptr<const sampling::SamplingSetup> setup() {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 5;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.4f;
  p.frequency_penalty = 0.2f;
  p.logit_bias = {{3, 0.5f}};
  p.seed = 0;
  return std::make_shared<const sampling::SamplingSetup>(p);
}

const std::vector<int32_t> kPrompt = {2, 5, 1};

std::vector<int32_t> plain(const TinyModel& model, uint64_t seed) {
  sampling::Sampler sampler(setup(), kPrompt, {}, seed);
  std::vector<int32_t> context = kPrompt, out;
  while (out.size() < kOut) {
    const int32_t token = sampler.sample(model.logits(context)).token;
    sampler.accept(token);
    context.push_back(token);
    out.push_back(token);
  }
  return out;
}

// `over_accept` > 0 breaks the verifier on purpose: a rejected draft token is taken anyway with
// that probability (what a verifier that does not sample faithfully would do).
std::vector<int32_t> speculative(const TinyModel& model, uint64_t seed, size_t k, double over_accept = 0.0,
                                 int64_t* accepted = nullptr) {
  sampling::Sampler sampler(setup(), kPrompt, {}, seed);
  sampling::SamplerWorkspace workspace;
  std::mt19937_64 cheat(seed + 1000003);
  std::vector<int32_t> context = kPrompt, out;
  while (out.size() < kOut) {
    const std::vector<int32_t> draft = propose(model, context, k);
    std::vector<float> rows;
    std::vector<int32_t> extended = context;
    for (size_t j = 0; j <= draft.size(); ++j) {
      const std::vector<float> row = model.logits(extended);
      rows.insert(rows.end(), row.begin(), row.end());
      if (j < draft.size()) extended.push_back(draft[j]);
    }
    if (over_accept == 0.0) {
      const DraftOutcome outcome = verify_draft(sampler, workspace, draft, rows, kVocab,
                                                [&](const sampling::SampleResult& r) -> std::optional<FinishReason> {
                                                  sampler.accept(r.token);
                                                  context.push_back(r.token);
                                                  out.push_back(r.token);
                                                  return std::nullopt;
                                                });
      if (accepted != nullptr) *accepted += outcome.accepted;
      continue;
    }
    for (size_t j = 0; j <= draft.size(); ++j) {
      int32_t token = sampler.sample(std::span(rows).subspan(j * kVocab, kVocab), workspace).token;
      if (j < draft.size() && token != draft[j] && std::uniform_real_distribution<double>(0, 1)(cheat) < over_accept) {
        token = draft[j];
      }
      sampler.accept(token);
      context.push_back(token);
      out.push_back(token);
      if (j == draft.size() || token != draft[j]) break;
    }
  }
  out.resize(kOut);
  return out;
}

// Token trees: three candidates merged (the proposer's chain, one starting with the raw
// second-likeliest token, one with the likeliest token then the least likely), verified by
// walking the tree.
std::vector<int32_t> speculative_tree(const TinyModel& model, uint64_t seed, int64_t* accepted = nullptr) {
  sampling::Sampler sampler(setup(), kPrompt, {}, seed);
  sampling::SamplerWorkspace workspace;
  std::vector<int32_t> context = kPrompt, out;
  while (out.size() < kOut) {
    std::vector<int32_t> tokens, parents;
    const std::vector<int32_t> first = propose(model, context, 3);
    spec::add_branch(tokens, parents, first, 16);
    std::vector<float> row = model.logits(context);
    std::vector<size_t> order(kVocab);
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return row[a] > row[b]; });
    std::vector<int32_t> second = {static_cast<int32_t>(order[1])};
    std::vector<int32_t> ctx2 = context;
    ctx2.push_back(second[0]);
    const std::vector<int32_t> more = propose(model, ctx2, 2);
    second.insert(second.end(), more.begin(), more.end());
    spec::add_branch(tokens, parents, second, 16);
    spec::add_branch(tokens, parents, std::vector<int32_t>{static_cast<int32_t>(order[0]), static_cast<int32_t>(order[kVocab - 1])}, 16);
    // Rows: after the context, then after each node's path.
    std::vector<float> rows = row;
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::vector<int32_t> path;
      for (int32_t a = static_cast<int32_t>(i); a >= 0; a = parents[static_cast<size_t>(a)]) path.push_back(tokens[static_cast<size_t>(a)]);
      std::vector<int32_t> extended = context;
      extended.insert(extended.end(), path.rbegin(), path.rend());
      const std::vector<float> r = model.logits(extended);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    const TreeOutcome outcome = verify_tree(sampler, workspace, tokens, parents, rows, kVocab,
                                            [&](const sampling::SampleResult& r) -> std::optional<FinishReason> {
                                              sampler.accept(r.token);
                                              context.push_back(r.token);
                                              out.push_back(r.token);
                                              return std::nullopt;
                                            });
    if (accepted != nullptr) *accepted += static_cast<int64_t>(outcome.path.size());
  }
  out.resize(kOut);
  return out;
}

size_t cell(const std::vector<int32_t>& tokens) {
  size_t c = 0;
  for (int32_t t : tokens) c = c * kVocab + static_cast<size_t>(t);
  return c;
}

using testing::chi_square_threshold;
using testing::homogeneity_statistic;

constexpr uint64_t kRuns = 20000;

std::vector<int64_t> histogram(const std::function<std::vector<int32_t>(uint64_t)>& run, uint64_t first_seed) {
  std::vector<int64_t> counts(kVocab * kVocab * kVocab, 0);
  for (uint64_t s = first_seed; s < first_seed + kRuns; ++s) ++counts[cell(run(s))];
  return counts;
}

TEST(DraftVerification, SpeculativeTokensFollowThePlainDistribution) {
  // Disjoint seeds, so the two samples are independent (with the same seeds they would be equal,
  // see below). A correct verifier fails this with probability about 1e-6.
  const TinyModel model;
  int64_t accepted = 0;
  const std::vector<int64_t> without = histogram([&](uint64_t s) { return plain(model, s); }, 0);
  const std::vector<int64_t> with = histogram([&](uint64_t s) { return speculative(model, s, 3, 0.0, &accepted); }, kRuns);
  int df = 0;
  const double x2 = homogeneity_statistic(with, without, df);
  ASSERT_GT(df, 30);
  EXPECT_LT(x2, chi_square_threshold(df)) << "df " << df;
  // The drafts were accepted often enough for the test to be about verification.
  EXPECT_GT(accepted, static_cast<int64_t>(kRuns) / 2);

  // The same test catches a verifier that takes a rejected draft token 10% of the time.
  const std::vector<int64_t> broken = histogram([&](uint64_t s) { return speculative(model, s, 3, 0.1); }, kRuns);
  const double broken_x2 = homogeneity_statistic(broken, without, df);
  EXPECT_GT(broken_x2, 2 * chi_square_threshold(df)) << "df " << df;
}

TEST(DraftVerification, TokenTreeTokensFollowThePlainDistribution) {
  const TinyModel model;
  int64_t accepted = 0;
  const std::vector<int64_t> without = histogram([&](uint64_t s) { return plain(model, s); }, 0);
  const std::vector<int64_t> with = histogram([&](uint64_t s) { return speculative_tree(model, s, &accepted); }, kRuns);
  int df = 0;
  const double x2 = homogeneity_statistic(with, without, df);
  ASSERT_GT(df, 30);
  EXPECT_LT(x2, chi_square_threshold(df)) << "df " << df;
  EXPECT_GT(accepted, static_cast<int64_t>(kRuns) / 2);
}

TEST(DraftVerification, ASeededRequestYieldsTheSameTokensWithAndWithoutDrafts) {
  const TinyModel model;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (size_t k : {1u, 2u, 5u}) ASSERT_EQ(speculative(model, seed, k), plain(model, seed)) << seed << " k " << k;
    ASSERT_EQ(speculative_tree(model, seed), plain(model, seed)) << seed << " tree";
  }
}

TEST(DraftVerification, AFinishingTokenEndsTheRun) {
  const TinyModel model;
  sampling::SamplingParams p;
  p.temperature = 0.0f;
  sampling::Sampler sampler(p);
  sampling::SamplerWorkspace workspace;
  std::vector<int32_t> context = kPrompt;
  const std::vector<int32_t> draft = propose(model, context, 4);  // greedy but for one position
  std::vector<float> rows;
  std::vector<int32_t> extended = context;
  for (size_t j = 0; j <= draft.size(); ++j) {
    const std::vector<float> row = model.logits(extended);
    rows.insert(rows.end(), row.begin(), row.end());
    if (j < draft.size()) extended.push_back(draft[j]);
  }
  int emitted = 0;
  const DraftOutcome outcome = verify_draft(sampler, workspace, draft, rows, kVocab,
                                            [&](const sampling::SampleResult& r) -> std::optional<FinishReason> {
                                              sampler.accept(r.token);
                                              return ++emitted == 1 ? std::optional(FinishReason::Stop) : std::nullopt;
                                            });
  EXPECT_EQ(emitted, 1);
  EXPECT_EQ(outcome.finish, FinishReason::Stop);
  EXPECT_LE(outcome.accepted, 1);
}

}  // namespace
}  // namespace lumen::engine
