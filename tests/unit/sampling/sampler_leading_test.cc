// Sampling from a row's leading candidates (Sampler::sample_leading), as a device sends them
// back instead of the row: the same token from the same draw as sample() of the whole row, or
// nothing drawn when they cannot settle it, on rows from peaked to flat and every mix of top-k,
// top-p, min-p and temperature (none of them: a plain draw).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "sampling/dense_ops.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace lumen::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams params(float temperature, int32_t top_k, float top_p, float min_p, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = seed;
  return p;
}

// Normal logits times `spread`: a small spread is a flat distribution (a large nucleus), a large
// one a peaked one. Some rows get ties among their leading values.
std::vector<float> logits_row(size_t n, float spread, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> z(n);
  for (float& v : z) v = normal(rng);
  if (seed % 3 == 0) {
    const float top = *std::max_element(z.begin(), z.end());
    z[n / 2] = z[n / 3] = z[7] = top - 0.5f;  // equal values among the leading ones
  }
  return z;
}

// What a backend sends back for `row` (backend::RowLeading): select_top's leading candidates
// and the row's total weight at the sampler's scale, summed as the sampler sums it.
struct Leading {
  std::vector<int32_t> ids;
  std::vector<float> logits;
  double total = 0.0;
};

Leading reduce(std::span<const float> row, float scale) {
  std::vector<Candidate> top;
  select_top(row, kLeadingCandidates, top);
  Leading leading;
  for (const Candidate& c : top) {
    leading.ids.push_back(c.id);
    leading.logits.push_back(c.logit);
  }
  if (scale != 0.0f) leading.total = sum_exp(row, max_value(row), scale);
  return leading;
}

TEST(SamplerLeading, WhichSamplersNeedOnlyTheLeadingCandidates) {
  EXPECT_EQ(Sampler(params(0.0f, 0, 1.0f, 0.0f, 1)).row_need(), RowNeed::Argmax);
  // A plain draw walks the leading candidates first (any token may still come: 1 - their weight).
  EXPECT_EQ(Sampler(params(0.8f, 0, 1.0f, 0.0f, 1)).row_need(), RowNeed::Leading);
  EXPECT_EQ(Sampler(params(0.8f, 40, 1.0f, 0.0f, 1)).row_need(), RowNeed::Leading);
  EXPECT_EQ(Sampler(params(0.8f, 64, 1.0f, 0.0f, 1)).row_need(), RowNeed::Leading);
  EXPECT_EQ(Sampler(params(0.8f, 65, 1.0f, 0.0f, 1)).row_need(), RowNeed::Whole);  // more than are sent
  EXPECT_EQ(Sampler(params(0.8f, 0, 0.95f, 0.0f, 1)).row_need(), RowNeed::Leading);
  EXPECT_EQ(Sampler(params(0.8f, 0, 1.0f, 0.05f, 1)).row_need(), RowNeed::Leading);
  EXPECT_EQ(Sampler(params(0.8f, 500, 0.9f, 0.0f, 1)).row_need(), RowNeed::Whole);  // top-p's set is the 500
  // Top-k asks for no total; top-p alone does, at the sampler's temperature.
  EXPECT_EQ(Sampler(params(0.8f, 40, 0.9f, 0.0f, 1)).leading_total_scale(), 0.0f);
  EXPECT_FLOAT_EQ(Sampler(params(0.5f, 0, 0.9f, 0.0f, 1)).leading_total_scale(), 2.0f);
  EXPECT_EQ(Sampler(params(0.5f, 0, 1.0f, 0.1f, 1)).leading_total_scale(), 0.0f);
  EXPECT_FLOAT_EQ(Sampler(params(0.5f, -1, 0.9f, 0.0f, 1)).leading_total_scale(), 2.0f);  // -1: top-k off
  EXPECT_FLOAT_EQ(Sampler(params(0.5f, 0, 1.0f, 0.0f, 1)).leading_total_scale(), 2.0f);   // a plain draw
  EXPECT_FLOAT_EQ(Sampler(params(0.5f, 0, 0.9f, 0.1f, 1)).leading_total_scale(), 2.0f);   // top-p's total

  SamplingParams p = params(0.8f, 40, 1.0f, 0.0f, 1);
  p.typical_p = 0.9f;  // needs the entropy of the whole distribution
  EXPECT_EQ(Sampler(p).row_need(), RowNeed::Whole);
  p = params(0.8f, 40, 1.0f, 0.0f, 1);
  p.logit_bias = {{3, 1.0f}};
  EXPECT_EQ(Sampler(p).row_need(), RowNeed::Whole);
  p = params(0.8f, 40, 1.0f, 0.0f, 1);
  p.presence_penalty = 0.5f;
  EXPECT_EQ(Sampler(p).row_need(), RowNeed::Whole);
  p = params(0.8f, 40, 1.0f, 0.0f, 1);
  p.logprobs = 2;
  EXPECT_EQ(Sampler(p).row_need(), RowNeed::Whole);
  p = params(0.8f, 40, 1.0f, 0.0f, 1);
  p.min_tokens = 1;
  const std::vector<int32_t> eos = {0};
  Sampler banning(p, {}, eos);
  EXPECT_EQ(banning.row_need(), RowNeed::Whole);
  banning.accept(5);
  EXPECT_EQ(banning.row_need(), RowNeed::Leading);
}

// Two samplers with one seed: one sees whole rows, the other the leading candidates (and the
// whole row only when sample_leading declines). Their tokens must agree draw after draw, which
// also shows that a declined call drew nothing from the generator.
TEST(SamplerLeading, TheLeadingCandidatesGiveWhatTheRowGivesOrDeclineWithoutDrawing) {
  const float temperatures[] = {0.3f, 0.8f, 1.0f, 1.7f};
  const int32_t top_ks[] = {0, -1, 1, 7, 40, 64, 300};
  const float top_ps[] = {1.0f, 0.5f, 0.9f, 0.99f};
  const float min_ps[] = {0.0f, 0.02f, 0.3f};
  const float spreads[] = {0.3f, 1.5f, 4.0f};
  int settled = 0, declined = 0, cases = 0;
  uint64_t seed = 0;
  for (float t : temperatures) {
    for (int32_t k : top_ks) {
      for (float top_p : top_ps) {
        for (float min_p : min_ps) {
          const SamplingParams p = params(t, k, top_p, min_p, ++seed);
          Sampler whole(p), leading(p);
          if (leading.row_need() != RowNeed::Leading) continue;
          ++cases;
          SamplerWorkspace ws_whole, ws_leading;
          for (int draw = 0; draw < 6; ++draw) {
            const std::vector<float> row = logits_row(3000, spreads[draw % 3], seed * 31 + static_cast<uint64_t>(draw));
            const Leading reduced = reduce(row, leading.leading_total_scale());
            const int32_t expected = whole.sample(row, ws_whole).token;
            const std::optional<SampleResult> got =
                leading.sample_leading({reduced.ids, reduced.logits, reduced.total, row.size()}, ws_leading);
            int32_t token;
            if (got) {
              ++settled;
              token = got->token;
            } else {
              ++declined;
              token = leading.sample(row, ws_leading).token;
            }
            ASSERT_EQ(token, expected) << "T " << t << " top_k " << k << " top_p " << top_p << " min_p " << min_p
                                       << " draw " << draw << (got ? "" : " (declined)");
            whole.accept(expected);
            leading.accept(token);
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
  // Both outcomes are exercised: peaked rows settle, flat rows with top-p 0.99 or small min-p
  // reach past 64 tokens.
  EXPECT_GT(settled, 500);
  EXPECT_GT(declined, 20);
}

// A vocabulary no longer than the candidate list: the list is the whole row, so nothing is
// declined, and top-p sums the total itself when top-k (here no cut) asked for none.
TEST(SamplerLeading, AShortRowIsAllCandidates) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const SamplingParams p = params(0.9f, 64, seed % 2 == 0 ? 0.8f : 1.0f, seed % 3 == 0 ? 0.1f : 0.0f, seed);
    Sampler whole(p), leading(p);
    ASSERT_EQ(leading.row_need(), RowNeed::Leading);
    const std::vector<float> row = logits_row(50, 0.5f, seed);
    const Leading reduced = reduce(row, leading.leading_total_scale());
    ASSERT_EQ(reduced.ids.size(), row.size());
    SamplerWorkspace ws;
    const std::optional<SampleResult> got = leading.sample_leading({reduced.ids, reduced.logits, 0.0, row.size()}, ws);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->token, whole.sample(row).token);
  }
}

TEST(SamplerLeading, RefusesWhatSampleRefusesAndSamplersThatNeedMore) {
  Sampler sampler(params(0.8f, 10, 1.0f, 0.0f, 1));
  SamplerWorkspace ws;
  std::vector<int32_t> ids(kLeadingCandidates);
  std::vector<float> logits(kLeadingCandidates, 1.0f);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  EXPECT_TRUE(sampler.sample_leading({ids, logits, 0.0, 1000}, ws).has_value());
  logits[0] = kInf;
  EXPECT_THROW(sampler.sample_leading({ids, logits, 0.0, 1000}, ws), Error);
  logits.assign(kLeadingCandidates, -kInf);
  EXPECT_THROW(sampler.sample_leading({ids, logits, 0.0, 1000}, ws), Error);  // every token masked
  EXPECT_THROW(sampler.sample_leading({{}, {}, 0.0, 1000}, ws), Error);
  // Fewer candidates than the list holds, in a longer row: not what a backend sends.
  EXPECT_THROW(sampler.sample_leading({std::span(ids).first(10), std::span(logits).first(10), 0.0, 1000}, ws), Error);
  // Top-p without top-k needs the row's total.
  Sampler nucleus(params(0.8f, 0, 0.9f, 0.0f, 1));
  logits.assign(kLeadingCandidates, 1.0f);
  EXPECT_THROW(nucleus.sample_leading({ids, logits, 0.0, 1000}, ws), Error);
  // So does a plain draw.
  Sampler plain(params(0.8f, 0, 1.0f, 0.0f, 1));
  EXPECT_THROW(plain.sample_leading({ids, logits, 0.0, 1000}, ws), Error);
  EXPECT_THROW((void)plain.leading_settles({ids, logits, 0.0, 1000}, ws), Error);
  SamplingParams p = params(0.8f, 0, 1.0f, 0.0f, 1);
  p.typical_p = 0.5f;  // needs the whole row
  EXPECT_THROW(Sampler(p).sample_leading({ids, logits, 1000.0, 1000}, ws), Error);
}

// A plain draw (no filter) walks the leading candidates first: whether they settle it depends
// on the generator's next uniform, which leading_settles reads ahead without drawing, past the
// draws a draft's earlier rows make first.
TEST(SamplerLeading, APlainDrawSettlesByTheGeneratorsUniformReadAheadWithoutDrawing) {
  const SamplingParams p = params(1.0f, 0, 1.0f, 0.0f, 77);
  int settled = 0, declined = 0;
  for (uint64_t r = 0; r < 60; ++r) {
    // Spread so that the candidates weigh about half the row.
    std::vector<std::vector<float>> rows;
    std::vector<Leading> reduced;
    for (uint64_t j = 0; j < 4; ++j) {
      rows.push_back(logits_row(2000, 2.2f, r * 7 + j));
      reduced.push_back(reduce(rows.back(), 1.0f));
    }
    Sampler whole(p), leading(p), asking(p);
    for (uint64_t skip = 0; skip < r % 5; ++skip) {  // generators somewhere along their streams
      whole.sample(rows[0]);
      leading.sample(rows[0]);
      asking.sample(rows[0]);
    }
    SamplerWorkspace ws;
    std::vector<bool> ahead;  // asked before any of the four draws
    for (size_t j = 0; j < rows.size(); ++j) {
      ahead.push_back(
          asking.leading_settles({reduced[j].ids, reduced[j].logits, reduced[j].total, rows[j].size()}, ws, j));
    }
    for (size_t j = 0; j < rows.size(); ++j) {
      const LeadingCandidates view{reduced[j].ids, reduced[j].logits, reduced[j].total, rows[j].size()};
      ASSERT_EQ(leading.leading_settles(view, ws), ahead[j]) << "row " << r << " draw " << j;
      const std::optional<SampleResult> got = leading.sample_leading(view, ws);
      ASSERT_EQ(got.has_value(), ahead[j]);
      const int32_t expected = whole.sample(rows[j]).token;
      const int32_t token = got ? got->token : leading.sample(rows[j]).token;
      ASSERT_EQ(token, expected) << "row " << r << " draw " << j;
      (got ? settled : declined)++;
    }
  }
  EXPECT_GT(settled, 40) << declined << " declined";
  EXPECT_GT(declined, 40) << settled << " settled";
}

}  // namespace
}  // namespace lumen::sampling
