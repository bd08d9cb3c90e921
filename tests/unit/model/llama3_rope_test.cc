// Llama 3's frequency-dependent RoPE scaling against Meta's rule as Hugging Face transformers
// writes it (modeling_rope_utils._compute_llama3_parameters): new inverse frequencies, kept
// above the high-frequency wavelength bound, divided by the factor below the low one, and
// blended in between. Lumen stores the rule as llama.cpp's converters do, one divisor per pair
// (presets' llama3_rope_factors, the file's rope_freqs), which the rope kernel divides each
// angle by; both halves are checked here against the inverse frequencies, at positions past the
// original context. Also how the file's rope.scaling.type combines with rope_freqs.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/rope.h"
#include "model/arch/architecture.h"
#include "model/presets.h"
#include "model/rope_config.h"
#include "util/error.h"

namespace lumen::model {
namespace {

// Meta's published values for Llama 3.1 / 3.2 (the presets' rule assumes them).
constexpr double kLowFreqFactor = 1.0;
constexpr double kHighFreqFactor = 4.0;

// transformers' llama3 inverse frequencies, in its own terms (no divisors), in f64.
std::vector<double> hf_llama3_inv_freq(double base, int64_t dim, double factor, double old_context) {
  const double low_freq_wavelen = old_context / kLowFreqFactor;
  const double high_freq_wavelen = old_context / kHighFreqFactor;
  std::vector<double> out;
  for (int64_t i = 0; i < dim; i += 2) {
    const double inv_freq = 1.0 / std::pow(base, static_cast<double>(i) / static_cast<double>(dim));
    const double wavelen = 2.0 * std::numbers::pi / inv_freq;
    double llama = wavelen > low_freq_wavelen ? inv_freq / factor : inv_freq;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const double smooth = (old_context / wavelen - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
      llama = (1.0 - smooth) * llama / factor + smooth * llama;
    }
    out.push_back(llama);
  }
  return out;
}

int64_t head_dim_of(const Preset& p) {
  return static_cast<int64_t>(p.head_dim != 0 ? p.head_dim : p.embedding_length / p.head_count);
}

std::vector<double> reference_for(const Preset& p) {
  return hf_llama3_inv_freq(p.rope_freq_base, head_dim_of(p), p.rope_scaling_factor,
                            static_cast<double>(p.rope_original_context));
}

TEST(Llama3Rope, DivisorsGiveTransformersInverseFrequencies) {
  size_t checked = 0;
  for (const Preset& p : presets()) {
    if (p.rope_scaling != "llama3") continue;
    const int64_t dim = head_dim_of(p);
    const std::vector<float> divisors = llama3_rope_factors(p, dim);
    const std::vector<double> want = reference_for(p);
    ASSERT_EQ(divisors.size(), want.size()) << p.name;
    for (size_t i = 0; i < want.size(); ++i) {
      const double got = std::pow(p.rope_freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(dim)) /
                         static_cast<double>(divisors[i]);
      EXPECT_NEAR(got / want[i], 1.0, 1e-6) << p.name << " pair " << i;  // the divisors are f32
    }
    ++checked;
  }
  EXPECT_GE(checked, 3u);  // llama-1b, llama-8b, llama3-mini
}

TEST(Llama3Rope, TheMiniPresetsPairsFallInAllThreeBands) {
  // The golden model exercises the rule only if some pairs are kept, some divided by the full
  // factor and some blended: counted from transformers' frequencies, not from our divisors.
  const Preset& p = *find_preset("llama3-mini");
  const int64_t dim = head_dim_of(p);
  const std::vector<double> want = reference_for(p);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double plain = std::pow(p.rope_freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    const double ratio = plain / want[i];
    if (std::abs(ratio - 1.0) < 1e-12) {
      ++kept;
    } else if (std::abs(ratio - p.rope_scaling_factor) < 1e-9) {
      ++divided;
    } else {
      EXPECT_GT(ratio, 1.0);
      EXPECT_LT(ratio, p.rope_scaling_factor);
      ++blended;
    }
  }
  EXPECT_GE(kept, 2);
  EXPECT_GE(blended, 2);
  EXPECT_GE(divided, 2);
  // Past the original context: the preset's context is the stretched one.
  EXPECT_EQ(static_cast<double>(p.context_length),
            static_cast<double>(p.rope_original_context) * p.rope_scaling_factor);
}

// The CPU rope kernel with the preset's divisors, one head at `pos`, against the rotation by
// transformers' frequencies (llama pairs (2i, 2i + 1)); returns the largest difference.
double worst_rope_error(const Preset& p, const float* divisors, int32_t pos) {
  const int64_t dim = head_dim_of(p);
  backend::RopeConfig config;
  config.rope_dims = dim;
  config.freq_base = p.rope_freq_base;
  config.freq_factors = divisors;
  const backend::cpu::RopeParams params = backend::cpu::make_rope_params(config, dim);
  std::mt19937 rng(static_cast<uint32_t>(pos));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> head(static_cast<size_t>(dim));
  for (float& x : head) x = value(rng);
  std::vector<float> x = head, cache(static_cast<size_t>(dim));
  backend::cpu::rope_cache(params, pos, cache.data());
  backend::cpu::rope_head(params, cache.data(), x.data());
  const std::vector<double> inv_freq = reference_for(p);
  double worst = 0.0;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const double angle = static_cast<double>(pos) * inv_freq[i];
    const double x0 = head[2 * i], x1 = head[2 * i + 1];
    worst = std::max(worst, std::abs(x[2 * i] - (x0 * std::cos(angle) - x1 * std::sin(angle))));
    worst = std::max(worst, std::abs(x[2 * i + 1] - (x0 * std::sin(angle) + x1 * std::cos(angle))));
  }
  return worst;
}

TEST(Llama3Rope, RotationMatchesTransformersPastTheOriginalContext) {
  const Preset& p = *find_preset("llama3-mini");
  const std::vector<float> divisors = llama3_rope_factors(p, head_dim_of(p));
  for (const int32_t pos : {1, 100, 300, 1000, 2047}) {
    // ggml's f32 angle recurrence drifts by about pair * 2^-24 of the angle (rope_test's bound).
    EXPECT_LT(worst_rope_error(p, divisors.data(), pos), 2e-6 + 4e-7 * pos) << "pos " << pos;
  }
  // Without the divisors the same comparison fails by far: the check sees the scaling.
  EXPECT_GT(worst_rope_error(p, nullptr, 300), 0.1);
}

TEST(Llama3Rope, FileTypesCombineWithRopeFreqsAsLlamaCpp) {
  const Architecture& llama = *find_architecture("llama");
  HParams hp;
  hp.rope_dimension_count = 64;
  hp.rope_freq_base = 500000.0;
  hp.rope_scaling.factor = 8.0;
  const std::vector<float> divisors(32, 2.0f);
  for (const char* type : {"none", "llama3"}) {
    // The converters' llama3 file has no type (read as none); a file that names it gets the
    // same rope: the divisors and no scaling of its own (its factor is already in them).
    hp.rope_scaling.type = type;
    const backend::RopeConfig rope = rope_config(hp, llama, divisors.data());
    EXPECT_EQ(rope.scaling, backend::RopeScalingType::None) << type;
    EXPECT_EQ(rope.freq_factors, divisors.data()) << type;
    EXPECT_EQ(backend::cpu::make_rope_params(rope, 64).freq_scale, 1.0f) << type;
  }
  // llama.cpp applies rope_freqs whatever the type, linear and YaRN included.
  hp.rope_scaling.type = "linear";
  const backend::RopeConfig linear = rope_config(hp, llama, divisors.data());
  EXPECT_EQ(linear.scaling, backend::RopeScalingType::Linear);
  EXPECT_EQ(linear.freq_factors, divisors.data());
  EXPECT_EQ(backend::cpu::make_rope_params(linear, 64).freq_scale, 0.125f);
  // "llama3" without the tensor cannot be honoured: the low/high factors are not in the metadata.
  hp.rope_scaling.type = "llama3";
  try {
    rope_config(hp, llama, nullptr);
    ADD_FAILURE() << "llama3 scaling without rope_freqs was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_freqs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::model
