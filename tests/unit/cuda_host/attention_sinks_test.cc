// The CUDA kernels' attention-sink arithmetic (src/backend/cuda/attention_sinks.h, and the
// tensor-core prefill's prefill_divisor) on a CPU: the one-pass close of a row is the CPU
// backend's online_output_scale bit for bit (and exactly 1 / sum without a sink); a row merged from splits and closed
// with its sink once is the softmax with the sink in double; the exact modes' max and sum make the keys' probabilities
// sum to 1 - p(sink). Sinks far below, among, above and far above the scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/attention_row_masks.h"
#include "backend/cuda/attention_sinks.h"
#include "backend/cuda/tensor_core_prefill_math.h"

namespace lumen::backend::cuda {
namespace {

constexpr float kNoSink = -INFINITY;
// The scores below lie in [-3, 3].
constexpr float kSinks[] = {-30.0f, -1.0f, 0.5f, 2.9f, 3.5f, 25.0f};

TEST(CudaSinkMath, SinkLogitReadsTheHeadsValueOrNone) {
  const float sinks[] = {1.5f, -2.0f, 7.0f};
  EXPECT_EQ(sink_logit(sinks, 2), 7.0f);
  EXPECT_EQ(sink_logit(sinks, 1), -2.0f);
  EXPECT_EQ(sink_logit(nullptr, 5), kNoSink);
}

// Without a sink nothing changes: the kernels' results stay those of the kernels before sinks.
TEST(CudaSinkMath, WithoutASinkTheRowEndsAsBefore) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> sums(0.5f, 3000.0f), maxes(-5.0f, 5.0f);
  for (int i = 0; i < 1000; ++i) {
    const float sum = sums(rng), max = maxes(rng);
    ASSERT_EQ(sink_output_scale(max, sum, kNoSink), 1.0f / sum) << sum;
    ASSERT_EQ(sink_row_max(max, kNoSink), max);
    ASSERT_EQ(sink_sum_term(kNoSink, max), 0.0);
  }
  EXPECT_EQ(sink_output_scale(-INFINITY, 0.0f, kNoSink), 0.0f);  // a row that saw no key
  EXPECT_EQ(sink_row_max(-INFINITY, kNoSink), -INFINITY);
}

// The one-pass close is the CPU backend's (its online path), bit for bit, in all three ways a
// row can end: the sink below the max, above it, and no key seen.
TEST(CudaSinkMath, OnePassCloseIsTheCpusBitForBit) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> sums(1.0f, 500.0f), maxes(-3.0f, 3.0f);
  for (const float sink : kSinks) {
    for (int i = 0; i < 500; ++i) {
      const float sum = sums(rng), max = maxes(rng);
      ASSERT_EQ(sink_output_scale(max, sum, sink), cpu::online_output_scale(max, sum, sink))
          << "max " << max << " sum " << sum << " sink " << sink;
    }
    EXPECT_EQ(sink_output_scale(-INFINITY, 0.0f, sink), 0.0f) << sink;  // no key: no output
  }
}

// The tensor-core prefill's one division (prefill_divisor): without a sink exactly the sum (and 0
// out for a row that saw no key), with one the inverse of the one-pass close's factor.
TEST(CudaSinkMath, TensorCorePrefillsDivisorIsTheSumWithTheSinksTerm) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> sums(1.0f, 500.0f), maxes(-3.0f, 3.0f);
  for (int i = 0; i < 1000; ++i) {
    const float sum = sums(rng), max = maxes(rng);
    ASSERT_EQ(prefill_divisor(max, sum, kNoSink), sum);
    for (const float sink : kSinks) {
      ASSERT_NEAR(1.0 / prefill_divisor(max, sum, sink), sink_output_scale(max, sum, sink),
                  2e-6 * sink_output_scale(max, sum, sink))
          << "max " << max << " sum " << sum << " sink " << sink;
    }
  }
  EXPECT_EQ(prefill_output(0.0f, prefill_divisor(-INFINITY, 0.0f, kNoSink)), 0.0f);
  EXPECT_EQ(prefill_output(0.0f, prefill_divisor(-INFINITY, 0.0f, 2.0f)), 0.0f);
}

// A row's softmax with its sink, in double: the keys' weights (they sum to 1 - p(sink)).
std::vector<double> reference_weights(const std::vector<float>& scores, float sink) {
  double top = sink;
  for (const float s : scores) top = std::max(top, static_cast<double>(s));
  double sum = std::exp(static_cast<double>(sink) - top);
  for (const float s : scores) sum += std::exp(s - top);
  std::vector<double> weights;
  for (const float s : scores) weights.push_back(std::exp(s - top) / sum);
  return weights;
}

// The split-KV kernels' Flash arithmetic on one row and one value dimension: each split's max,
// sum and accumulator over its own keys (no sink), merged at the common max, then closed once
// with the sink. Within f32 rounding of the double softmax, relative to the output's own size
// (a sink far above leaves a tiny output, scaled down by exp(max - sink), not a zero).
TEST(CudaSinkMath, SplitsMergedThenClosedWithTheSinkOnceAreTheSoftmaxWithIt) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> scores_in(-3.0f, 3.0f), values_in(-1.0f, 1.0f);
  for (const int n_keys : {1, 7, 300, 1000}) {
    for (const int split : {64, 256}) {
      std::vector<float> scores(static_cast<size_t>(n_keys)), values(scores.size());
      for (float& s : scores) s = scores_in(rng);
      for (float& v : values) v = values_in(rng);
      for (const float sink : kSinks) {
        struct Partial {
          float max, sum, acc;
        };
        std::vector<Partial> partials;
        for (int lo = 0; lo < n_keys; lo += split) {
          const int hi = std::min(n_keys, lo + split);
          Partial p{-INFINITY, 0.0f, 0.0f};
          for (int k = lo; k < hi; ++k) p.max = std::max(p.max, scores[static_cast<size_t>(k)]);
          for (int k = lo; k < hi; ++k) {
            const float e = std::exp(scores[static_cast<size_t>(k)] - p.max);
            p.sum += e;
            p.acc += e * values[static_cast<size_t>(k)];
          }
          partials.push_back(p);
        }
        float max = -INFINITY, sum = 0.0f, acc = 0.0f;
        for (const Partial& p : partials) max = std::max(max, p.max);
        for (const Partial& p : partials) {
          const float weight = std::exp(p.max - max);
          sum += p.sum * weight;
          acc += p.acc * weight;
        }
        const double got = acc * sink_output_scale(max, sum, sink);
        const std::vector<double> weights = reference_weights(scores, sink);
        double want = 0.0, size = 0.0;
        for (size_t k = 0; k < weights.size(); ++k) {
          want += weights[k] * values[k];
          size += weights[k] * std::abs(values[k]);
        }
        EXPECT_NEAR(got, want, 2e-5 * size + 1e-30) << n_keys << " keys, splits of " << split << ", sink " << sink;
      }
    }
  }
}

// The exact modes' arithmetic (Stats' merge; the CPU's exact path): the row max counts the sink,
// the sink's exponential joins the double sum, and the keys' probabilities exp(s - M) / sum then
// sum to 1 - p(sink).
TEST(CudaSinkMath, ExactModesKeysWeighOneMinusTheSinksShare) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> scores_in(-3.0f, 3.0f);
  for (const int n_keys : {1, 40, 700}) {
    std::vector<float> scores(static_cast<size_t>(n_keys));
    for (float& s : scores) s = scores_in(rng);
    const float top = *std::max_element(scores.begin(), scores.end());
    for (const float sink : kSinks) {
      const float max = sink_row_max(top, sink);
      EXPECT_EQ(max, std::max(top, sink));
      double sum = 0.0;
      for (const float s : scores) sum += std::exp(static_cast<double>(s) - max);
      sum += sink_sum_term(sink, max);
      double keys = 0.0;
      for (const float s : scores) keys += std::exp(static_cast<double>(s) - max) / sum;
      const std::vector<double> weights = reference_weights(scores, sink);
      double want = 0.0;
      for (const double w : weights) want += w;
      EXPECT_NEAR(keys, want, 1e-6 * want + 1e-12) << n_keys << " keys, sink " << sink;
      if (sink > top + 20.0f) {
        EXPECT_LT(keys, 1e-7) << "a sink far above takes nearly all the weight";
      }
      if (sink < top - 20.0f) {
        EXPECT_NEAR(keys, 1.0, 1e-9) << "a sink far below takes none";
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
