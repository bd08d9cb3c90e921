#include "backend/cpu/rope.h"

#include <algorithm>
#include <cmath>

namespace lumen::backend::cpu {

namespace {

// 1 for pairs below the low correction dim (pure extrapolation), 0 above the high one, linear
// in between; ggml takes the pair index as an integer before the subtraction.
float yarn_ramp(float low, float high, int64_t pair) {
  const float y = (static_cast<float>(pair) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

void rope_cache(const RopeParams& params, int32_t position, float* cache) {
  const float theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(params.rope_dims));
  float mscale = params.attn_factor;
  if (params.ext_factor != 0.0f) mscale *= 1.0f + 0.1f * std::log(1.0f / params.freq_scale);

  float theta = static_cast<float>(position);
  for (int64_t pair = 0; pair < params.rope_dims / 2; ++pair) {
    const float divisor = params.freq_factors != nullptr ? params.freq_factors[pair] : 1.0f;
    const float theta_extrap = theta / divisor;
    const float theta_interp = params.freq_scale * theta_extrap;
    float angle = theta_interp;
    if (params.ext_factor != 0.0f) {
      const float mix = yarn_ramp(params.corr_dims[0], params.corr_dims[1], pair) * params.ext_factor;
      angle = theta_interp * (1.0f - mix) + theta_extrap * mix;
    }
    cache[2 * pair] = std::cos(angle) * mscale;
    cache[2 * pair + 1] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

void rope_head(const RopeParams& params, const float* cache, float* head) {
  const int64_t half = params.rope_dims / 2;
  // Partner offset and stride between pairs: NeoX pairs i with i + half, normal mode pairs
  // neighbours.
  const int64_t partner = params.neox ? half : 1;
  const int64_t stride = params.neox ? 1 : 2;
  for (int64_t pair = 0; pair < half; ++pair) {
    const float cos_theta = cache[2 * pair];
    const float sin_theta = cache[2 * pair + 1];
    float* x = head + pair * stride;
    const float x0 = x[0];
    const float x1 = x[partner];
    x[0] = x0 * cos_theta - x1 * sin_theta;
    x[partner] = x0 * sin_theta + x1 * cos_theta;
  }
}

}  // namespace lumen::backend::cpu
