#pragma once
// The projector families' factories (one file each in this folder) for the registry.
#include "vision/projector_family.h"

namespace lumen::vision {

ProjectorFamily llava_mlp_family();
ProjectorFamily gemma3_family();
ProjectorFamily idefics3_family();

}  // namespace lumen::vision
