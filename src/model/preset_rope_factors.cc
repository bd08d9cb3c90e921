// The rope factors `lumen synth` writes for a preset with rope scaling: Phi-3's LongRoPE factor
// sets and attention factor, and llama3-style per-pair divisors (model/presets.h).
#include <cmath>
#include <numbers>

#include "model/presets.h"

namespace lumen::model {

std::vector<float> longrope_factors(const Preset& p, int64_t rope_dims, bool long_set) {
  const int64_t pairs = rope_dims / 2;
  const double top = long_set ? 1.5 * p.rope_scaling_factor : 1.5;
  std::vector<float> factors;
  for (int64_t i = 0; i < pairs; ++i) {
    const double t = pairs > 1 ? static_cast<double>(i) / static_cast<double>(pairs - 1) : 0.0;
    factors.push_back(static_cast<float>(1.0 + (top - 1.0) * t * t));
  }
  return factors;
}

double longrope_attn_factor(const Preset& p) {
  const double scale = static_cast<double>(p.context_length) / static_cast<double>(p.rope_original_context);
  return scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(p.rope_original_context))) : 1.0;
}

std::vector<float> llama3_rope_factors(const Preset& p, int64_t head_dim) {
  const double low_freq_factor = 1.0, high_freq_factor = 4.0;
  const double old_context = static_cast<double>(p.rope_original_context);
  const double low_freq_wavelen = old_context / low_freq_factor;
  const double high_freq_wavelen = old_context / high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < head_dim; i += 2) {
    double freq = 1.0 / std::pow(p.rope_freq_base, static_cast<double>(i) / static_cast<double>(head_dim));
    double wavelen = 2 * std::numbers::pi / freq;
    double factor = p.rope_scaling_factor;
    if (wavelen < high_freq_wavelen) {
      factor = 1.0;
    } else if (wavelen <= low_freq_wavelen) {
      double smooth = (old_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      factor = 1.0 / ((1 - smooth) / p.rope_scaling_factor + smooth);
    }
    factors.push_back(static_cast<float>(factor));
  }
  return factors;
}

}  // namespace lumen::model
