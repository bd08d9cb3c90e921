#pragma once
// Expert parallelism's weights (model/expert_partition.h): a rank binds only its range of every
// layer's routed experts. The experts of a 3-D tensor lie one after another in the file, so the
// range is a view into the mapped file, nothing copied: the other experts' pages are never read.
// Every other tensor (attention, router, shared expert, embeddings) is bound whole.
#include "model/expert_partition.h"
#include "model/weights.h"

namespace lumen::model {

TensorSource expert_tensor_source(const ExpertRange& experts);

}  // namespace lumen::model
