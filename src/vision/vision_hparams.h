#pragma once
// An mmproj file's clip.* keys as VisionHParams, with the family its projector_type names.
#include "gguf/metadata.h"
#include "vision/projector_family.h"
#include "vision/vision_model.h"

namespace lumen::vision {

struct ReadHParams {
  VisionHParams hp;
  const ProjectorFamily* family = nullptr;
  int64_t block_count = 0;  // layers the file holds (hp.n_layer may use fewer)
};

// Throws lumen::Error "<source>: ..." naming the key that is missing, mistyped or out of range.
ReadHParams read_vision_hparams(const gguf::Metadata& meta, const std::string& source);

}  // namespace lumen::vision
