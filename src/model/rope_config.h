#pragma once
// The backend's rope configuration for a model: the file's rope.* metadata (model/hparams.h)
// and its llama3-style rope_freqs tensor, read as llama.cpp reads them.
#include "backend/backend.h"
#include "model/arch/architecture.h"
#include "model/hparams.h"

namespace lumen::model {

// The global layers' rope. `rope_freqs` is the file's per-pair divisors (head_dim / 2 floats,
// host or backend memory) or null; they apply whatever rope.scaling.type says, as in llama.cpp.
// A "llama3" type (which llama.cpp's converters never write: they store the scaling only as
// rope_freqs) means exactly those divisors, so it needs the tensor and adds no scaling of its own.
backend::RopeConfig rope_config(const HParams& hp, const Architecture& arch, const float* rope_freqs);

// Local (sliding-window) layers of an architecture with a per-layer rope base rotate with their
// own base and without the file's context scaling, which is for the global layers (llama.cpp's
// freq_base_swa and freq_scale_swa).
backend::RopeConfig local_rope_config(const backend::RopeConfig& global, const HParams& hp, const Architecture& arch);

}  // namespace lumen::model
