#pragma once
// clip.vision.projector.scale_factor, the factor by which Gemma 3 pools and Idefics3 shuffles
// the patch grid: it must divide the grid's side.
#include <cstdint>

#include "gguf/metadata.h"
#include "util/error.h"
#include "vision/vision_model.h"

namespace lumen::vision {

inline void set_merge_factor(const gguf::Metadata& meta, VisionHParams& hp, int64_t fallback) {
  const uint64_t merge = meta.find_unsigned("clip.vision.projector.scale_factor").value_or(fallback);
  const int64_t side = hp.patches_per_side();
  if (merge == 0 || merge > static_cast<uint64_t>(side) || side % static_cast<int64_t>(merge) != 0) {
    fail("clip.vision.projector.scale_factor {} does not divide the {}-patch side of the grid", merge, side);
  }
  hp.merge = static_cast<int64_t>(merge);
  hp.n_image_tokens = (side / hp.merge) * (side / hp.merge);
}

}  // namespace lumen::vision
