#include "model/presets.h"

#include <vector>

#include "model/preset_families.h"

namespace lumen::model {

std::span<const Preset> presets() {
  static const std::vector<Preset> all = [] {
    std::vector<Preset> v;
    for (const std::span<const Preset> family : {transformer_presets(), expert_presets(), recurrent_presets()}) {
      v.insert(v.end(), family.begin(), family.end());
    }
    return v;
  }();
  return all;
}

const Preset* find_preset(std::string_view name) {
  for (const Preset& preset : presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::vector<bool> preset_ssm_layers(const Preset& p, uint64_t layers) {
  std::vector<bool> ssm;
  if (p.attention_period == 0 || p.ssm_inner_size == 0) return ssm;
  for (uint64_t i = 0; i < layers; ++i) ssm.push_back((i + 1) % p.attention_period != 0);
  return ssm;
}

}  // namespace lumen::model
