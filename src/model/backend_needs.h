#pragma once
// What running a model asks of a backend (backend/backend_needs.h), read from its file before any
// weight is uploaded: the architecture's optional ops, every type its tensors are stored in, and
// the width of its attention heads. The Transformer checks it against its backend first thing,
// so a model the backend cannot run is refused at load, with everything it lacks named at once.
#include "backend/backend_needs.h"
#include "gguf/file.h"
#include "model/arch/architecture.h"
#include "model/hparams.h"

namespace lumen::model {

backend::BackendNeeds model_backend_needs(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp);

}  // namespace lumen::model
