// Pooling a sequence's hidden states into one embedding: which rows each pooling reads, what it
// makes of them, the unit length OpenAI's vectors have, and which pooling a file gets.
#include "model/pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "util/error.h"

namespace lumen::model {
namespace {

TEST(Pooling, RowsEachPoolingReads) {
  EXPECT_EQ(pooled_rows(Pooling::Cls, 5), std::vector<int32_t>{0});
  EXPECT_EQ(pooled_rows(Pooling::Last, 5), std::vector<int32_t>{4});
  EXPECT_EQ(pooled_rows(Pooling::Mean, 3), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_THROW(pooled_rows(Pooling::Mean, 0), Error);
}

TEST(Pooling, MeanAveragesRowsThenNormalises) {
  // Rows (1, 2) and (3, 6): mean (2, 4), length sqrt(20).
  const std::vector<float> rows = {1, 2, 3, 6};
  const std::vector<float> v = pool_and_normalize(Pooling::Mean, rows, 2);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0], 2 / std::sqrt(20.0), 1e-7);
  EXPECT_NEAR(v[1], 4 / std::sqrt(20.0), 1e-7);
}

TEST(Pooling, OneRowPoolingsNormaliseThatRow) {
  const std::vector<float> row = {3, -4};
  for (Pooling p : {Pooling::Cls, Pooling::Last}) {
    const std::vector<float> v = pool_and_normalize(p, row, 2);
    EXPECT_FLOAT_EQ(v[0], 0.6f);
    EXPECT_FLOAT_EQ(v[1], -0.8f);
  }
  // Two rows for a pooling that reads one is the caller's mistake, not a silent mean.
  EXPECT_THROW(pool_and_normalize(Pooling::Last, std::vector<float>{1, 2, 3, 4}, 2), Error);
  EXPECT_THROW(pool_and_normalize(Pooling::Mean, std::vector<float>{1, 2, 3}, 2), Error);
}

TEST(Pooling, NormalisedVectorHasUnitLengthAndZeroStaysZero) {
  std::vector<float> v(384);
  std::iota(v.begin(), v.end(), -100.0f);
  l2_normalize(v);
  double squares = 0;
  for (float x : v) squares += double{x} * x;
  EXPECT_NEAR(squares, 1.0, 1e-6);
  std::vector<float> zero(4, 0.0f);
  l2_normalize(zero);  // no division by zero: an all-zero state has no direction
  for (float x : zero) EXPECT_EQ(x, 0.0f);
}

TEST(Pooling, FromTheFileWithLastTokenForDecoders) {
  HParams hp;
  hp.architecture = "bert";
  hp.pooling_type = 1;
  EXPECT_EQ(embedding_pooling(hp), Pooling::Mean);
  hp.pooling_type = 2;
  EXPECT_EQ(embedding_pooling(hp), Pooling::Cls);
  hp.pooling_type = 3;
  EXPECT_EQ(embedding_pooling(hp), Pooling::Last);
  // A decoder's file has no key, or "none": the last token, the one that saw the whole input.
  hp.pooling_type = 0;
  EXPECT_EQ(embedding_pooling(hp), Pooling::Last);
  hp.pooling_type.reset();
  EXPECT_EQ(embedding_pooling(hp), Pooling::Last);
  hp.pooling_type = 4;  // a reranker's classifier head
  EXPECT_THROW(embedding_pooling(hp), Error);
}

}  // namespace
}  // namespace lumen::model
