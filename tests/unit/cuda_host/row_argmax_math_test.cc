// Greedy rows' reduction on the device (row_argmax.cu) replayed on the host in the kernel's own
// order (strided threads, then the xor-shuffle tree in each warp, then the warps in turn) with
// its combine rule (row_argmax_math.h): the token is the sampler's greedy choice on any row,
// with ties, infinities and NaN.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cuda/row_argmax_math.h"
#include "sampling/sampler.h"

namespace lumen::backend::cuda {
namespace {

constexpr int kThreads = 512;  // row_argmax.cu's block
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Reduced {
  int32_t token;
  float value;
  int32_t finite;
};

Reduced kernel_order(const std::vector<float>& row) {
  std::vector<argmax::Candidate> thread(kThreads, argmax::empty_candidate());
  int32_t finite = 1;
  for (size_t i = 0; i < row.size(); ++i) {
    argmax::Candidate& best = thread[i % kThreads];
    finite &= argmax::finite_bits(row[i]);
    if (argmax::beats(row[i], static_cast<int32_t>(i), best)) best = {row[i], static_cast<int32_t>(i)};
  }
  argmax::Candidate total = argmax::empty_candidate();
  for (int w = 0; w < kThreads / 32; ++w) {
    std::array<argmax::Candidate, 32> lanes{};
    for (size_t l = 0; l < 32; ++l) lanes[l] = thread[static_cast<size_t>(32 * w) + l];
    for (size_t offset = 16; offset > 0; offset >>= 1) {
      std::array<argmax::Candidate, 32> next{};
      for (size_t l = 0; l < 32; ++l) next[l] = argmax::combine(lanes[l], lanes[l ^ offset]);
      lanes = next;
    }
    total = argmax::combine(total, lanes[0]);
  }
  if (total.index == argmax::kNoIndex) return {0, row[0], finite};
  return {total.index, total.value, finite};
}

std::vector<float> random_row(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  return row;
}

TEST(RowArgmaxMath, TheKernelsOrderGivesTheSamplersGreedyToken) {
  std::mt19937_64 rng(11);
  for (const size_t width : {1u, 31u, 512u, 1000u, 49152u, 151936u}) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<float> row = random_row(width, rng);
      if (trial % 2 == 1 && width > 4) {
        // The maximum held several times, in different threads' and warps' parts.
        std::uniform_int_distribution<size_t> at(0, width - 1);
        const float top = 50.0f;
        for (int k = 0; k < 4; ++k) row[at(rng)] = top;
      }
      const Reduced r = kernel_order(row);
      EXPECT_EQ(r.token, sampling::argmax(row)) << width << " " << trial;
      EXPECT_EQ(r.value, row[static_cast<size_t>(r.token)]);
      EXPECT_EQ(r.finite, 1);
    }
  }
}

TEST(RowArgmaxMath, InfinitiesAndNanAreSeenAndNanNeverWins) {
  std::mt19937_64 rng(5);
  std::vector<float> row = random_row(5000, rng);
  std::vector<float> masked(5000, -kInf);  // every token masked: index 0, value -inf
  Reduced r = kernel_order(masked);
  EXPECT_EQ(r.token, sampling::argmax(masked));
  EXPECT_EQ(r.value, -kInf);
  EXPECT_EQ(r.finite, 0);

  masked[4321] = 1.0f;
  masked[700] = 1.0f;
  r = kernel_order(masked);
  EXPECT_EQ(r.token, 700);
  EXPECT_EQ(r.token, sampling::argmax(masked));

  std::vector<float> plus = row;
  plus[3000] = kInf;
  r = kernel_order(plus);
  EXPECT_EQ(r.token, 3000);
  EXPECT_EQ(r.value, kInf);
  EXPECT_EQ(r.finite, 0);

  std::vector<float> nan = row;
  const int32_t best = sampling::argmax(row);
  nan[best == 0 ? 1 : 0] = std::numeric_limits<float>::quiet_NaN();
  r = kernel_order(nan);
  EXPECT_EQ(r.token, best);  // NaN is never the largest
  EXPECT_EQ(r.finite, 0);    // but the row is not finite: the request fails

  const std::vector<float> all_nan(64, std::numeric_limits<float>::quiet_NaN());
  r = kernel_order(all_nan);
  EXPECT_EQ(r.token, 0);
  EXPECT_EQ(r.finite, 0);
}

}  // namespace
}  // namespace lumen::backend::cuda
