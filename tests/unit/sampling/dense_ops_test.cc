// The row passes: fast_exp's accuracy, every ISA's kernels against the scalar definition (bit
// for bit), and the partial selections against full sorts.
#include "sampling/dense_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampling/dense_kernels.h"
#include "sampling/fast_exp.h"

namespace lumen::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FastExp, WithinAFewUlpsOfTheExactValue) {
  double worst = 0.0;
  for (float x = -87.0f; x <= 88.0f; x += 0.000731f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(static_cast<double>(fast_exp(x)) - exact) / exact);
  }
  EXPECT_LT(worst, 4e-7);  // a float ulp is 6e-8 to 1.2e-7 relative
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
}

TEST(FastExp, VanishingInputsGiveZero) {
  EXPECT_EQ(fast_exp(-kInf), 0.0f);
  EXPECT_EQ(fast_exp(-88.0f), 0.0f);
  EXPECT_EQ(fast_exp(-1e30f), 0.0f);
  EXPECT_EQ(fast_exp(std::numeric_limits<float>::quiet_NaN()), 0.0f);
  EXPECT_GT(fast_exp(-86.9f), 0.0f);
}

std::vector<float> random_row(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<const kernels::DenseKernels*> all_kernels() {
  std::vector<const kernels::DenseKernels*> k = {&kernels::portable_kernels()};
  if (kernels::avx2_kernels() != nullptr) k.push_back(kernels::avx2_kernels());
  return k;
}

TEST(DenseKernels, EveryIsaComputesExactlyFastExp) {
  std::vector<float> x = random_row(203, 1);  // not a multiple of any vector width
  x[5] = -kInf;
  x[77] = -200.0f;
  for (const kernels::DenseKernels* k : all_kernels()) {
    SCOPED_TRACE(k->name);
    std::vector<float> out(x.size());
    const float sum = k->exp_sum(x.data(), x.size(), 1.5f, 0.7f, out.data());
    double reference_sum = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(out[i], fast_exp((x[i] - 1.5f) * 0.7f)) << i;
      reference_sum += out[i];
    }
    EXPECT_NEAR(sum, reference_sum, 1e-5 * reference_sum);
    EXPECT_EQ(k->exp_sum(x.data(), x.size(), 1.5f, 0.7f, nullptr), sum);
  }
}

TEST(DenseKernels, MaxSkipsNanAndHandlesInfinities) {
  std::vector<float> x = random_row(131, 2);
  x[100] = std::numeric_limits<float>::quiet_NaN();
  const float expected = *std::max_element(x.begin(), x.begin() + 100);
  for (const kernels::DenseKernels* k : all_kernels()) {
    SCOPED_TRACE(k->name);
    float m = expected;
    for (size_t i = 101; i < x.size(); ++i) m = std::max(m, x[i]);
    EXPECT_EQ(k->max(x.data(), x.size()), m);
    EXPECT_EQ(k->max(x.data(), 0), -kInf);
    std::vector<float> masked(37, -kInf);
    EXPECT_EQ(k->max(masked.data(), masked.size()), -kInf);
    masked[36] = 2.0f;
    EXPECT_EQ(k->max(masked.data(), masked.size()), 2.0f);
  }
}

TEST(DenseKernels, MomentsAreTheWeightedSums) {
  std::vector<float> x = random_row(77, 3);
  x[3] = -kInf;  // weight 0, and no NaN from 0 * -inf
  for (const kernels::DenseKernels* k : all_kernels()) {
    SCOPED_TRACE(k->name);
    float weighted = 0.0f;
    const float sum = k->exp_moments(x.data(), x.size(), 2.0f, &weighted);
    double s = 0.0, ws = 0.0;
    for (float v : x) {
      const double w = std::exp(static_cast<double>(v) - 2.0);
      s += w;
      if (w > 0) ws += w * (static_cast<double>(v) - 2.0);
    }
    EXPECT_NEAR(sum, s, 1e-5 * s);
    EXPECT_NEAR(weighted, ws, 1e-5 * std::abs(ws) + 1e-6);
  }
}

TEST(DenseOps, SumExpAndBlockSums) {
  const std::vector<float> x = random_row(1000, 4);
  std::vector<float> out(x.size());
  std::vector<double> blocks((x.size() + kBlock - 1) / kBlock);
  const double total = exp_with_block_sums(x, 3.0f, 0.5f, out, blocks);
  double reference = 0.0;
  for (float v : x) reference += std::exp((static_cast<double>(v) - 3.0) * 0.5);
  EXPECT_NEAR(total, reference, 1e-6 * reference);
  EXPECT_NEAR(sum_exp(x, 3.0f, 0.5f), total, 1e-9 * total);
  for (size_t b = 0; b < blocks.size(); ++b) {
    double s = 0.0;
    for (size_t i = b * kBlock; i < std::min(x.size(), (b + 1) * kBlock); ++i) s += out[i];
    EXPECT_NEAR(blocks[b], s, 1e-5 * s);
  }
}

TEST(DenseOps, ArgmaxHelpers) {
  const std::vector<float> x = {1.0f, 5.0f, -kInf, 5.0f, 2.0f};
  EXPECT_EQ(max_value(x), 5.0f);
  EXPECT_EQ(first_index_of(x, 5.0f), 1u);
  EXPECT_EQ(first_index_of(x, 7.0f), x.size());
}

// select_top against a full sort, with many ties (values on a coarse grid), masked entries and
// sizes around the block size.
TEST(DenseOps, SelectTopEqualsTheHeadOfAFullSort) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t size = 1 + rng() % 700;
    std::vector<float> x(size);
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 15)) * 0.5f;
    for (size_t i = 0; i < size / 5; ++i) x[rng() % size] = -kInf;
    std::vector<Candidate> all;
    for (size_t i = 0; i < size; ++i) {
      if (x[i] > -kInf) all.push_back({static_cast<int32_t>(i), x[i]});
    }
    std::sort(all.begin(), all.end(), more_likely);
    const size_t n = 1 + rng() % 100;
    std::vector<Candidate> top;
    select_top(x, n, top);
    ASSERT_EQ(top.size(), std::min(n, all.size()));
    for (size_t i = 0; i < top.size(); ++i) {
      ASSERT_EQ(top[i].id, all[i].id) << "trial " << trial << " rank " << i;
      ASSERT_EQ(top[i].logit, all[i].logit);
    }
  }
}

// Rows of many blocks, where a short selection reads only the blocks whose maximum reaches the
// n-th largest block maximum: ties across that cut, whole blocks masked, rows mostly masked
// (fewer blocks with a finite maximum than n), a partial last block.
TEST(DenseOps, SelectTopFromManyBlocksEqualsTheHeadOfAFullSort) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 120; ++trial) {
    const size_t size = kBlock * (20 + rng() % 300) + rng() % kBlock;
    std::vector<float> x(size);
    const int levels = trial % 3 == 0 ? 4 : 2000;  // few levels: ties everywhere
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % levels)) * 0.25f;
    const size_t blocks = (size + kBlock - 1) / kBlock;
    const size_t masked_blocks = trial % 4 == 1 ? blocks - rng() % 40 : rng() % (blocks / 2);
    for (size_t i = 0; i < masked_blocks; ++i) {
      const size_t b = rng() % blocks;
      std::fill(x.begin() + static_cast<std::ptrdiff_t>(b * kBlock),
                x.begin() + static_cast<std::ptrdiff_t>(std::min(size, (b + 1) * kBlock)), -kInf);
    }
    std::vector<Candidate> all;
    for (size_t i = 0; i < size; ++i) {
      if (x[i] > -kInf) all.push_back({static_cast<int32_t>(i), x[i]});
    }
    std::sort(all.begin(), all.end(), more_likely);
    for (const size_t n : {size_t{1}, size_t{7}, size_t{40}, size_t{64}, size_t{65}}) {
      std::vector<Candidate> top;
      select_top(x, n, top);
      ASSERT_EQ(top.size(), std::min(n, all.size())) << "trial " << trial << " n " << n;
      for (size_t i = 0; i < top.size(); ++i) {
        ASSERT_EQ(top[i].id, all[i].id) << "trial " << trial << " n " << n << " rank " << i;
        ASSERT_EQ(top[i].logit, all[i].logit);
      }
    }
  }
}

TEST(DenseOps, CollectAtLeastKeepsExactlyThoseAboveTheThreshold) {
  std::vector<float> x = random_row(1000, 6);
  x[10] = -kInf;
  for (float threshold : {-kInf, -2.0f, 0.0f, 4.0f, 100.0f}) {
    CandidateList out;
    collect_at_least(x, threshold, out);
    std::vector<int32_t> expected;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] > -kInf && x[i] >= threshold) expected.push_back(static_cast<int32_t>(i));
    }
    EXPECT_EQ(out.ids, expected) << threshold;
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out.logits[i], x[static_cast<size_t>(out.ids[i])]);
  }
}

}  // namespace
}  // namespace lumen::sampling
