#pragma once
// The attention tile kernels of every instruction-set level this machine runs, for tests that
// hold each level to the same answer.
#include <vector>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"

namespace lumen::backend::testing {

inline std::vector<const cpu::AttentionTileKernels*> tile_levels() {
  using namespace cpu;  // NOLINT(google-build-using-namespace): the kernels' own names
  std::vector<const AttentionTileKernels*> levels = {&portable_attention_tiles()};
  if (avx2_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx2) levels.push_back(avx2_attention_tiles());
  if (avx512_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx512) levels.push_back(avx512_attention_tiles());
  return levels;
}

}  // namespace lumen::backend::testing
