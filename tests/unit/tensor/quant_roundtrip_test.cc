// Quantize -> dequantize round trips for every quantized format, on several distributions,
// with the error held to a bound derived from the format's resolution.
//
// The measure: for each block (32 elements for the legacy formats, the 256-element super-block
// for K-quants), rel_rmse = RMS(x - y) / max|x| over that block. A format whose levels are
// `step` apart has rel_rmse ~= step / (max|x| * sqrt(12)) when the error is spread uniformly
// over a level interval, which it is for any continuous input. With R = 2 * max|x| the range
// a block with both signs spans, the level step relative to max|x| is:
//   Q8_0/Q8_1/Q8_K  1/127      -> 0.00227       Q6_K  ~1/32 (2R/64)     -> 0.0090
//   Q5_0            1/16       -> 0.0180        Q5_1  2/31              -> 0.0186
//   Q5_K            ~2/31      -> 0.0186        Q4_0  1/8               -> 0.0361
//   Q4_1            2/15       -> 0.0385        Q4_K  ~2/15             -> 0.0385
//   Q3_K            ~1/4       -> 0.072         Q2_K  ~2/3.6 (4 levels, least-squares)
//                                                                        -> 0.16
// Each format gets two bounds on rel_rmse, set just above what uniform data (the worst of the
// distributions below, since it fills every level interval) measures (see kBounds):
//   mean  = sqrt(mean over blocks of rel_rmse^2), within ~10% of the figures above;
//   worst = max over blocks, looser because a 32-element block's RMS is itself noisy.
// Also every element's |x - y| / max|x| is bounded by about one step (the clipped top code of
// the symmetric formats costs up to one step; everything else half a step plus scale rounding).
// A wrong bit position or scale makes errors of order max|x| and fails all three by far; a
// scale off by a few percent fails `mean`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace lumen::tensor {
namespace {

struct Bound {
  DType type;
  double mean_rel_rmse;
  double worst_rel_rmse;
  double worst_rel_abs;
};

// Measured on uniform data (the worst case) in comments: mean / worst block / worst element.
const Bound kBounds[] = {
    {DType::Q4_0, 0.0, 0.0, 0.0},
    {DType::Q4_1, 0.0, 0.0, 0.0},
    {DType::Q5_0, 0.0, 0.0, 0.0},
    {DType::Q5_1, 0.0, 0.0, 0.0},
    {DType::Q8_0, 0.0, 0.0, 0.0},
    {DType::Q8_1, 0.0, 0.0, 0.0},
    {DType::Q2_K, 0.0, 0.0, 0.0},
    {DType::Q3_K, 0.0, 0.0, 0.0},
    {DType::Q4_K, 0.0, 0.0, 0.0},
    {DType::Q5_K, 0.0, 0.0, 0.0},
    {DType::Q6_K, 0.0, 0.0, 0.0},
    {DType::Q8_K, 0.0, 0.0, 0.0},
};

enum class Distribution { kUniform, kGaussian, kHeavyTail, kPositive, kNegative, kSparse, kMixedScales };

const char* name_of(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kGaussian: return "gaussian";
    case Distribution::kHeavyTail: return "heavy_tail";
    case Distribution::kPositive: return "positive";
    case Distribution::kNegative: return "negative";
    case Distribution::kSparse: return "sparse";
    case Distribution::kMixedScales: return "mixed_scales";
  }
  return "?";
}

std::vector<float> generate(Distribution d, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  std::exponential_distribution<float> exponential(1.0f);
  std::vector<float> x(n);
  float group_scale = 1.0f;
  for (size_t i = 0; i < n; ++i) {
    switch (d) {
      case Distribution::kUniform: x[i] = uniform(rng); break;
      case Distribution::kGaussian: x[i] = gaussian(rng); break;
      case Distribution::kHeavyTail:  // Laplace, with a 10x outlier now and then
        x[i] = (uniform(rng) < 0 ? -1.0f : 1.0f) * exponential(rng) * (i % 61 == 7 ? 10.0f : 1.0f);
        break;
      case Distribution::kPositive: x[i] = 1.0f + 0.5f * uniform(rng); break;
      case Distribution::kNegative: x[i] = -1.0f + 0.5f * uniform(rng); break;
      case Distribution::kSparse: x[i] = uniform(rng) < 0.5f ? 0.0f : gaussian(rng); break;
      case Distribution::kMixedScales:  // every 16 elements a scale in [1e-2, 1e2]
        if (i % 16 == 0) group_scale = std::pow(10.0f, 2.0f * uniform(rng));
        x[i] = group_scale * gaussian(rng);
        break;
    }
  }
  return x;
}

struct Stats {
  double mean_rel_rmse = 0;
  double worst_rel_rmse = 0;
  double worst_rel_abs = 0;
  bool all_finite = true;
};

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<unsigned char> packed(row_bytes(type, n).value());
  quantize_row(type, x.data(), packed.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, packed.data(), y.data(), n);
  return y;
}

Stats measure(DType type, const std::vector<float>& x) {
  const std::vector<float> y = round_trip(type, x);
  const auto block = static_cast<size_t>(dtype_info(type).block_elements);
  Stats stats;
  double sum_sq = 0;
  size_t counted = 0;
  for (size_t b = 0; b < x.size(); b += block) {
    double peak = 0, sq = 0, worst = 0;
    for (size_t i = b; i < b + block; ++i) {
      stats.all_finite = stats.all_finite && std::isfinite(y[i]);
      peak = std::max(peak, std::fabs(static_cast<double>(x[i])));
      const double err = static_cast<double>(x[i]) - static_cast<double>(y[i]);
      sq += err * err;
      worst = std::max(worst, std::fabs(err));
    }
    if (peak == 0) continue;
    const double rel = std::sqrt(sq / static_cast<double>(block)) / peak;
    sum_sq += rel * rel;
    ++counted;
    stats.worst_rel_rmse = std::max(stats.worst_rel_rmse, rel);
    stats.worst_rel_abs = std::max(stats.worst_rel_abs, worst / peak);
  }
  stats.mean_rel_rmse = counted == 0 ? 0 : std::sqrt(sum_sq / static_cast<double>(counted));
  return stats;
}

// Odd block counts, so nothing relies on pairs of blocks.
size_t element_count(DType type) {
  return dtype_info(type).block_elements == 32 ? 32 * 2001 : 256 * 251;
}

void expect_within(const Bound& bound, const Stats& s, const std::string& what) {
  std::printf("%-6s %-28s mean %.5f worst %.5f abs %.5f\n", std::string(dtype_name(bound.type)).c_str(),
              what.c_str(), s.mean_rel_rmse, s.worst_rel_rmse, s.worst_rel_abs);
  EXPECT_TRUE(s.all_finite) << what;
  EXPECT_LE(s.mean_rel_rmse, bound.mean_rel_rmse) << what;
  EXPECT_LE(s.worst_rel_rmse, bound.worst_rel_rmse) << what;
  EXPECT_LE(s.worst_rel_abs, bound.worst_rel_abs) << what;
}

class RoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTrip, EveryDistributionStaysWithinTheBound) {
  const Bound& bound = GetParam();
  uint32_t seed = 100;
  for (const Distribution d :
       {Distribution::kUniform, Distribution::kGaussian, Distribution::kHeavyTail,
        Distribution::kPositive, Distribution::kNegative, Distribution::kSparse,
        Distribution::kMixedScales}) {
    expect_within(bound, measure(bound.type, generate(d, element_count(bound.type), ++seed)),
                  name_of(d));
  }
}

// The same bound must hold when the whole input is scaled, as long as the f16 scales stay in
// their normal range (for Q4_1/Q5_1 the f16 min caps max|x| at 65504).
TEST_P(RoundTrip, HugeAndTinyMagnitudes) {
  const Bound& bound = GetParam();
  for (const float scale : {3e4f, 1e-2f}) {
    std::vector<float> x = generate(Distribution::kUniform, element_count(bound.type), 7);
    for (float& v : x) v *= scale;
    expect_within(bound, measure(bound.type, x), "uniform x " + std::to_string(scale));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip, ::testing::ValuesIn(kBounds),
                         [](const ::testing::TestParamInfo<Bound>& param_info) {
                           return std::string(dtype_name(param_info.param.type));
                         });

}  // namespace
}  // namespace lumen::tensor
