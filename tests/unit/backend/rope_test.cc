// RoPE against the closed-form rotation in f64 for every scaling mode. The kernel builds its
// angles like ggml (f32, one multiplication per pair), which drifts from the closed form by
// about pair * 2^-24 relative: the tolerance grows with the position accordingly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "backend/cpu/rope.h"
#include "kernel_test_util.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

// The textbook formulas (RoFormer; YaRN as in the paper and transformers' rope utils).
std::vector<double> reference_rope(const std::vector<float>& head, int64_t pos, const RopeConfig& c) {
  const int64_t d = c.rope_dims;
  std::vector<double> out(head.begin(), head.end());
  double mscale = c.attn_factor;
  double low = 0.0, high = 0.0;
  const double factor = c.scaling == RopeScalingType::None ? 1.0 : c.scaling_factor;
  if (c.scaling == RopeScalingType::Yarn) {
    auto corr = [&](double n_rot) {
      return static_cast<double>(d) * std::log(static_cast<double>(c.original_context) / (n_rot * 2.0 * std::numbers::pi)) /
             (2.0 * std::log(c.freq_base));
    };
    low = c.yarn_truncate ? std::floor(corr(c.yarn_beta_fast)) : corr(c.yarn_beta_fast);
    high = c.yarn_truncate ? std::ceil(corr(c.yarn_beta_slow)) : corr(c.yarn_beta_slow);
    low = std::max(0.0, low);
    high = std::min(static_cast<double>(d - 1), high);
    mscale *= 1.0 + 0.1 * std::log(factor);
  }
  for (int64_t i = 0; i < d / 2; ++i) {
    double freq = std::pow(c.freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    if (c.freq_factors != nullptr) freq /= c.freq_factors[i];
    const double extrap = static_cast<double>(pos) * freq;
    const double interp = extrap / factor;
    double angle = interp;
    if (c.scaling == RopeScalingType::Yarn) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
      const double extrap_weight = 1.0 - ramp;
      angle = interp * (1.0 - extrap_weight) + extrap * extrap_weight;
    }
    const int64_t a = c.neox ? i : 2 * i;
    const int64_t b = c.neox ? i + d / 2 : 2 * i + 1;
    const double x0 = head[static_cast<size_t>(a)], x1 = head[static_cast<size_t>(b)];
    out[static_cast<size_t>(a)] = mscale * (x0 * std::cos(angle) - x1 * std::sin(angle));
    out[static_cast<size_t>(b)] = mscale * (x0 * std::sin(angle) + x1 * std::cos(angle));
  }
  return out;
}

void expect_matches(const RopeConfig& config, int64_t head_dim, const char* what) {
  const RopeParams params = make_rope_params(config, head_dim);
  std::vector<float> cache(static_cast<size_t>(config.rope_dims));
  for (const int32_t pos : {0, 1, 7, 33, 100, 511, 1000, 3000}) {
    const auto head = testing::random_values(static_cast<size_t>(head_dim), 40u + static_cast<uint32_t>(pos));
    std::vector<float> x = head;
    rope_cache(params, pos, cache.data());
    rope_head(params, cache.data(), x.data());
    const auto want = reference_rope(head, pos, config);
    const double tol = 2e-6 + 4e-7 * pos;
    for (int64_t d = 0; d < head_dim; ++d) {
      if (d >= config.rope_dims) {
        EXPECT_EQ(x[static_cast<size_t>(d)], head[static_cast<size_t>(d)]) << what << " passes dim " << d;
      } else {
        EXPECT_NEAR(x[static_cast<size_t>(d)], want[static_cast<size_t>(d)], tol)
            << what << " pos=" << pos << " d=" << d;
      }
    }
  }
}

TEST(Rope, NormalAndNeoxWithoutScaling) {
  for (const int64_t dim : {64, 80, 128, 256}) {
    RopeConfig c;
    c.rope_dims = dim;
    c.freq_base = 10000.0;
    expect_matches(c, dim, "normal");
    c.neox = true;
    expect_matches(c, dim, "neox");
  }
}

TEST(Rope, PartialRotationLeavesTheRestAlone) {
  RopeConfig c;
  c.rope_dims = 32;
  c.neox = true;
  expect_matches(c, 80, "partial neox");
  c.neox = false;
  expect_matches(c, 80, "partial normal");
}

TEST(Rope, LinearScalingAndOtherBase) {
  RopeConfig c;
  c.rope_dims = 128;
  c.freq_base = 500000.0;  // llama3's base; NTK-aware scaling is a base change like this one
  c.scaling = RopeScalingType::Linear;
  c.scaling_factor = 4.0;
  expect_matches(c, 128, "linear");
  c.attn_factor = 1.3;  // the file's magnitude factor applies whatever the scaling type
  expect_matches(c, 128, "linear with an attention factor");
}

TEST(Rope, Llama3FrequencyFactors) {
  RopeConfig c;
  c.rope_dims = 64;
  c.freq_base = 500000.0;
  std::vector<float> factors(32);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i % 7) * 1.5f;
  c.freq_factors = factors.data();
  expect_matches(c, 64, "freq_factors");
}

TEST(Rope, Yarn) {
  RopeConfig c;
  c.rope_dims = 128;
  c.neox = true;
  c.freq_base = 1000000.0;
  c.scaling = RopeScalingType::Yarn;
  c.scaling_factor = 4.0;
  c.original_context = 32768;
  c.yarn_beta_fast = 32.0;
  c.yarn_beta_slow = 1.0;
  expect_matches(c, 128, "yarn");
  // The ramp really mixes: correction dims strictly inside (0, pairs).
  const RopeParams p = make_rope_params(c, 128);
  EXPECT_GT(p.corr_dims[0], 0.0f);
  EXPECT_LT(p.corr_dims[1], 63.0f);
  EXPECT_LT(p.corr_dims[0], p.corr_dims[1]);
  EXPECT_NEAR(p.freq_scale, 0.25f, 0.0f);
  // The file's attention factor scales the magnitude on top of YaRN's own.
  c.attn_factor = 0.7;
  expect_matches(c, 128, "yarn with an attention factor");
}

// gpt-oss's YaRN ("truncate": false): the correction range keeps its computed, fractional ends.
TEST(Rope, YarnWithoutTruncation) {
  RopeConfig c;
  c.rope_dims = 64;
  c.neox = true;
  c.freq_base = 150000.0;
  c.scaling = RopeScalingType::Yarn;
  c.scaling_factor = 32.0;
  c.original_context = 4096;
  c.yarn_truncate = false;
  expect_matches(c, 64, "yarn without truncation");
  const RopeParams kept = make_rope_params(c, 64);
  EXPECT_FLOAT_EQ(kept.corr_dims[0], common::yarn_corr_dim(64, 4096, 32.0f, 150000.0f));
  EXPECT_FLOAT_EQ(kept.corr_dims[1], common::yarn_corr_dim(64, 4096, 1.0f, 150000.0f));
  EXPECT_NE(kept.corr_dims[0], std::floor(kept.corr_dims[0]));  // really fractional here
  c.yarn_truncate = true;
  const RopeParams whole = make_rope_params(c, 64);
  EXPECT_EQ(whole.corr_dims[0], std::floor(kept.corr_dims[0]));
  EXPECT_EQ(whole.corr_dims[1], std::ceil(kept.corr_dims[1]));
}

TEST(Rope, WrongModeWouldBeCaught) {
  // The reference distinguishes the pairings: a NeoX kernel result differs from the normal
  // closed form by far more than the tolerance.
  RopeConfig c;
  c.rope_dims = 64;
  c.neox = true;
  const RopeParams params = make_rope_params(c, 64);
  std::vector<float> cache(64);
  const auto head = testing::random_values(64, 3);
  std::vector<float> x = head;
  rope_cache(params, 17, cache.data());
  rope_head(params, cache.data(), x.data());
  c.neox = false;
  const auto normal = reference_rope(head, 17, c);
  double worst = 0.0;
  for (size_t d = 0; d < 64; ++d) worst = std::max(worst, std::abs(x[d] - normal[d]));
  EXPECT_GT(worst, 0.1);
}

TEST(Rope, RejectsBadConfigs) {
  RopeConfig c;
  c.rope_dims = 63;
  EXPECT_THROW(make_rope_params(c, 64), Error);
  c.rope_dims = 128;
  EXPECT_THROW(make_rope_params(c, 64), Error);
  c.rope_dims = 64;
  c.freq_base = 0.0;
  EXPECT_THROW(make_rope_params(c, 64), Error);
  c.freq_base = 10000.0;
  c.scaling = RopeScalingType::Yarn;
  c.scaling_factor = 2.0;
  EXPECT_THROW(make_rope_params(c, 64), Error);  // no original context
  c.scaling = RopeScalingType::Linear;
  c.scaling_factor = -1.0;
  EXPECT_THROW(make_rope_params(c, 64), Error);
}

}  // namespace
}  // namespace lumen::backend::cpu
