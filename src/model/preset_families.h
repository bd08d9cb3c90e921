#pragma once
// The presets by family, one file each; presets() (presets.cc) lists them in this order.
#include <span>

#include "model/presets.h"

namespace lumen::model {

std::span<const Preset> transformer_presets();  // presets_transformers.cc
std::span<const Preset> expert_presets();       // presets_experts.cc
std::span<const Preset> recurrent_presets();    // presets_recurrent.cc

}  // namespace lumen::model
