#include "backend/common/rope_params.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/error.h"

namespace lumen::backend::common {

float yarn_corr_dim(int64_t rope_dims, int64_t original_context, float n_rot, float freq_base) {
  // Same f32 expression as ggml: the pair whose wavelength fits n_rot times into the original
  // context.
  const auto dims = static_cast<float>(rope_dims);
  const auto context = static_cast<float>(original_context);
  return dims * std::log(context / (n_rot * 2.0f * std::numbers::pi_v<float>)) / (2.0f * std::log(freq_base));
}

RopeParams make_rope_params(const RopeConfig& config, int64_t head_dim) {
  if (config.rope_dims <= 0 || config.rope_dims % 2 != 0 || config.rope_dims > head_dim) {
    fail("rope: rope_dims {} must be even and in (0, head_dim {}]", config.rope_dims, head_dim);
  }
  if (!(config.freq_base > 0.0) || !std::isfinite(config.freq_base)) {
    fail("rope: freq_base {} must be positive", config.freq_base);
  }
  RopeParams params;
  params.rope_dims = config.rope_dims;
  params.neox = config.neox;
  params.freq_base = static_cast<float>(config.freq_base);
  params.freq_factors = config.freq_factors;
  if (!(config.attn_factor > 0.0) || !std::isfinite(config.attn_factor)) {
    fail("rope: attention factor {} must be positive", config.attn_factor);
  }
  // llama.cpp multiplies the magnitude by the file's attention factor whatever the scaling type.
  params.attn_factor = static_cast<float>(config.attn_factor);
  if (config.scaling != RopeScalingType::None) {
    if (!(config.scaling_factor > 0.0) || !std::isfinite(config.scaling_factor)) {
      fail("rope: scaling factor {} must be positive", config.scaling_factor);
    }
    params.freq_scale = 1.0f / static_cast<float>(config.scaling_factor);
  }
  if (config.scaling == RopeScalingType::Yarn) {
    if (config.original_context <= 0) fail("rope: YaRN needs the original context length");
    params.ext_factor = 1.0f;
    // llama.cpp's context setup, in its f32 order: its own mscale for the factor, cancelled
    // against the one ggml applies again, times the file's factor. The net magnitude is
    // attn_factor * (1 + 0.1 ln factor), rounded as llama.cpp rounds it.
    const float factor = 1.0f / params.freq_scale;
    // With DeepSeek's log multiplier llama.cpp's first factor is mscale(f, m) / mscale(f, m):
    // exactly 1.
    float attn = factor <= 1.0f || config.yarn_magnitude_in_scores ? 1.0f : 0.1f * 1.0f * std::log(factor) + 1.0f;
    attn *= 1.0f / (1.0f + 0.1f * std::log(factor));
    params.attn_factor = attn * static_cast<float>(config.attn_factor);
    float start = yarn_corr_dim(config.rope_dims, config.original_context, static_cast<float>(config.yarn_beta_fast),
                                params.freq_base);
    float end = yarn_corr_dim(config.rope_dims, config.original_context, static_cast<float>(config.yarn_beta_slow),
                              params.freq_base);
    if (config.yarn_truncate) {
      start = std::floor(start);
      end = std::ceil(end);
    }
    params.corr_dims[0] = std::max(0.0f, start);
    params.corr_dims[1] = std::min(static_cast<float>(config.rope_dims - 1), end);
  }
  return params;
}

}  // namespace lumen::backend::common
