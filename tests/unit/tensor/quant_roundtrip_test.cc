// Quantize -> dequantize round trips for every quantized format, on several distributions,
// with the error held to a bound derived from the format's resolution.
//
// The measure: for each block (32 elements for the legacy formats, the 256-element super-block
// for K-quants), rel_rmse = RMS(x - y) / max|x| over that block. With levels `step` apart and
// the error spread evenly over a level interval (as it is for any continuous input),
// rel_rmse ~= step / (max|x| * sqrt(12)). For a block spanning [-max|x|, max|x|]:
//   Q8_0/Q8_1/Q8_K  step 1/127 of max|x|  -> 0.0023    Q6_K  ~2/64 (least squares) -> 0.009
//   Q5_0            1/16                  -> 0.018     Q5_1  2/31                  -> 0.019
//   Q5_K            ~2/32 (least squares) -> 0.018     Q4_0  1/8                   -> 0.036
//   Q4_1            2/15                  -> 0.038     Q4_K  ~2/16 (least squares) -> 0.036
//   Q3_K            ~2/8                  -> 0.072     Q2_K  ~2/4 (4 levels)       -> 0.144
// Uniform data fills every level interval and is the worst case; other distributions put
// part of their mass where levels are denser (smaller sub-blocks) and measure lower.
// Three bounds per format (kBounds), each a few percent above the worst measured value:
//   mean  = sqrt(mean over blocks of rel_rmse^2): close to the figures above;
//   worst = max over blocks of rel_rmse: looser, since a 32-element block's RMS is noisy;
//   abs   = max over elements of |x - y| / max|x|: about half a step, or a whole step where a
//           format clips its top code (Q4_0, Q5_0) or its levels are few (Q2_K, Q3_K).
// A wrong bit position or scale makes errors of order max|x| and fails all three by far; a
// scale off by a few percent fails `mean`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// Bounds: mean rel_rmse / worst block's rel_rmse / worst element's |x - y| / max|x|.
// The figures after each line are the largest measured over all distributions and magnitudes
// below (seeded, so they are reproducible), from which the bounds keep a ~5-10% margin.
const Bound kBounds[] = {
    // Signed-max scale: the top code is clipped, so an element can be off by a whole step.
    {DType::Q4_0, 0.042, 0.060, 0.127},   // 0.0389 0.0539 0.1254 (step 1/8)
    {DType::Q4_1, 0.039, 0.070, 0.0685},  // 0.0362 0.0635 0.0673 (half step 1/15)
    {DType::Q5_0, 0.020, 0.029, 0.0635},  // 0.0186 0.0260 0.0629 (step 1/16)
    {DType::Q5_1, 0.019, 0.034, 0.0337},  // 0.0175 0.0308 0.0332 (half step 1/31)
    // Half a step (1/254) plus the f16 rounding of d, up to 2^-11 of max|x|.
    {DType::Q8_0, 0.0024, 0.0032, 0.0045},  // 0.00225 0.00294 0.00436
    {DType::Q8_1, 0.0024, 0.0032, 0.0045},  // as Q8_0
    // K-quants: sub-block least squares, then 4/6/8-bit sub-scale codes.
    {DType::Q2_K, 0.140, 0.155, 0.50},     // 0.1282 0.1414 0.4615
    {DType::Q3_K, 0.075, 0.083, 0.30},     // 0.0690 0.0754 0.2818
    {DType::Q4_K, 0.035, 0.039, 0.10},     // 0.0322 0.0351 0.0950
    {DType::Q5_K, 0.0172, 0.0187, 0.054},  // 0.0158 0.0171 0.0498
    {DType::Q6_K, 0.0082, 0.0090, 0.032},  // 0.0075 0.0082 0.0295
    // Non-linear levels (steps 12-24 of 240): least-squares scales; IQ4_XS's 6-bit sub-scales.
    // Uniform data is their worst case; on bell-shaped data they beat Q4_0 (gaussian 0.032 and
    // 0.025 mean), which is what the levels are for.
    {DType::IQ4_NL, 0.0425, 0.053, 0.156},  // 0.0394 0.0492 0.1440
    {DType::IQ4_XS, 0.0425, 0.045, 0.155},  // 0.0391 0.0415 0.1421
    // MXFP4: E2M1 levels (steps of 1/12 to 1/3 of the top) under a power-of-two scale that
    // puts the top level at 0.75-1.5x max|x|, ggml's rule, which clips up to a quarter of it.
    {DType::MXFP4, 0.092, 0.135, 0.2501},  // 0.0853 0.1237 0.2500 (the clip: just under 2^(k+1) to 1.5 x 2^k)
    // f32 scale: exactly half a step, 1/254.
    {DType::Q8_K, 0.0024, 0.0027, 0.0040},  // 0.00228 0.00247 0.00394
};

enum class Distribution {
  kUniform,
  kGaussian,
  kHeavyTail,
  kPositive,
  kNegative,
  kSparse,
  kMixedScales,
};

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
  if (std::getenv("LUMEN_PRINT_QUANT_ERRORS") != nullptr) {  // for re-deriving kBounds
    std::printf("%-5s %-18s mean %.5f worst %.5f abs %.5f\n",
                std::string(dtype_name(bound.type)).c_str(), what.c_str(), s.mean_rel_rmse,
                s.worst_rel_rmse, s.worst_rel_abs);
  }
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
