// rope against the rotation ggml defines: per pair i the angle is the position times
// theta_scale^i, with theta_scale = powf(base, -2 / rope_dims) applied as an f32 recurrence
// (that recurrence is part of the definition: it is what llama.cpp's logits were made with),
// then divided by freq_factors, scaled and YaRN-blended as backend/common/rope_params.h says.
// cos and sin are taken in double; the tolerance allows an ulp or two of the f32 angle, which
// grows with the position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/common/rope_params.h"
#include "checks.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

RopeConfig config_for(RopeMode mode, int64_t head_dim, std::vector<float>& freq_factors) {
  RopeConfig config;
  config.rope_dims = head_dim;
  config.freq_base = 10000.0;
  switch (mode) {
    case RopeMode::kNormal: break;
    case RopeMode::kNeox: config.neox = true; break;
    case RopeMode::kPartial: config.rope_dims = head_dim / 4; break;
    case RopeMode::kLinear:
      config.scaling = RopeScalingType::Linear;
      config.scaling_factor = 2.0;
      break;
    case RopeMode::kYarn:
      config.neox = true;
      config.freq_base = 1000000.0;
      config.scaling = RopeScalingType::Yarn;
      config.scaling_factor = 4.0;
      config.original_context = 4096;
      break;
    case RopeMode::kFreqFactors:
      config.freq_base = 500000.0;
      freq_factors = random_values(static_cast<size_t>(head_dim / 2), 61, 1.0f, 8.0f);
      config.freq_factors = freq_factors.data();
      break;
  }
  return config;
}

// The YaRN ramp: 1 below the low correction dim, 0 above the high one.
double ramp(const common::RopeParams& p, int64_t pair) {
  const double y =
      (static_cast<double>(pair) - p.corr_dims[0]) / std::max(0.001, double{p.corr_dims[1]} - p.corr_dims[0]);
  return 1.0 - std::clamp(y, 0.0, 1.0);
}

}  // namespace

void check_rope(Backend& backend, const Case& c) {
  const auto [head_dim, heads, tokens] = c.shape;
  std::vector<float> freq_factors;
  const RopeConfig config = config_for(static_cast<RopeMode>(c.mode), head_dim, freq_factors);
  const common::RopeParams p = common::make_rope_params(config, head_dim);
  std::vector<int32_t> positions;
  for (int64_t t = 0; t < tokens; ++t) positions.push_back(static_cast<int32_t>(t * t * 97 + t));

  const std::vector<float> x = random_values(static_cast<size_t>(head_dim * heads * tokens), 62);
  BackendTensor xd = upload_f32(backend, {head_dim, heads, tokens, 1}, x);
  backend.rope(xd.view, positions, config);

  std::vector<double> want(x.begin(), x.end()), tol(x.size(), 0.0);
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.rope_dims));
  const double mscale = p.ext_factor != 0.0f ? 1.0 + 0.1 * std::log(1.0 / p.freq_scale) : 1.0;
  const int64_t half = p.rope_dims / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    float theta = static_cast<float>(positions[static_cast<size_t>(t)]);
    for (int64_t pair = 0; pair < half; ++pair) {
      const double extrap = theta / (p.freq_factors ? double{p.freq_factors[pair]} : 1.0);
      const double interp = p.freq_scale * extrap;
      const double mix = p.ext_factor != 0.0f ? ramp(p, pair) * p.ext_factor : 0.0;
      const double angle = interp * (1.0 - mix) + extrap * mix;
      const double cos_a = std::cos(angle) * mscale, sin_a = std::sin(angle) * mscale;
      // An f32 angle is good to ~2 ulp of its size: 2^-22 relative.
      const double angle_error = std::abs(angle) * std::ldexp(1.0, -22) + 1e-6;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = (t * heads + h) * head_dim;
        const int64_t i0 = base + (p.neox ? pair : 2 * pair);
        const int64_t i1 = i0 + (p.neox ? half : 1);
        const double x0 = x[static_cast<size_t>(i0)], x1 = x[static_cast<size_t>(i1)];
        want[static_cast<size_t>(i0)] = x0 * cos_a - x1 * sin_a;
        want[static_cast<size_t>(i1)] = x0 * sin_a + x1 * cos_a;
        const double bound = (std::abs(x0) + std::abs(x1)) * mscale * (angle_error + 1e-6);
        tol[static_cast<size_t>(i0)] = bound;
        tol[static_cast<size_t>(i1)] = bound;
      }
      theta *= theta_scale;
    }
  }
  // Dimensions past rope_dims are left exactly as they were (tolerance 0).
  expect_close(download(backend, xd.view), want, tol, "x");
}

}  // namespace lumen::backend::conformance
