#include "benchmark/request_lengths.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

TEST(RequestLengths, FixedLengthsWithoutARange) {
  RandomWorkload w{.count = 6, .input_len = 17, .output_len = 5, .range_ratio = 0, .vocab_size = 100, .seed = 3};
  const auto requests = random_token_requests(w);
  ASSERT_EQ(requests.size(), 6u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.prompt.size(), 17u);
    EXPECT_EQ(r.output_len, 5);
    for (int32_t t : r.prompt) {
      EXPECT_GE(t, 0);
      EXPECT_LT(t, 100);
    }
  }
  EXPECT_NE(requests[0].prompt, requests[1].prompt);  // random, not repeated
}

TEST(RequestLengths, RangedLengthsStayInTheRangeAndVary) {
  RandomWorkload w{
      .count = 200, .input_len = 100, .output_len = 40, .range_ratio = 0.5, .vocab_size = 49152, .seed = 9};
  const auto requests = random_token_requests(w);
  int64_t min_in = 1000, max_in = 0;
  for (const auto& r : requests) {
    const auto in = static_cast<int64_t>(r.prompt.size());
    min_in = std::min(min_in, in);
    max_in = std::max(max_in, in);
    EXPECT_GE(r.output_len, 20);
    EXPECT_LE(r.output_len, 60);
  }
  EXPECT_GE(min_in, 50);
  EXPECT_LE(max_in, 150);
  EXPECT_LT(min_in, 60);  // 200 draws cover the range
  EXPECT_GT(max_in, 140);
}

TEST(RequestLengths, TheSeedDecidesTheWorkload) {
  RandomWorkload w{.count = 4, .input_len = 30, .output_len = 8, .range_ratio = 0.3, .vocab_size = 1000, .seed = 11};
  const auto a = random_token_requests(w);
  const auto b = random_token_requests(w);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].output_len, b[i].output_len);
  }
  w.seed = 12;
  EXPECT_NE(random_token_requests(w)[0].prompt, a[0].prompt);
}

TEST(RequestLengths, LengthsAreAtLeastOne) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 50; ++i) EXPECT_GE(draw_length(1, 0.9, rng), 1);
}

TEST(RequestLengths, RejectsAnEmptyVocabulary) {
  RandomWorkload w{.count = 1, .vocab_size = 0};
  EXPECT_THROW(random_token_requests(w), Error);
}

}  // namespace
}  // namespace lumen::benchmark
