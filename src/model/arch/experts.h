#pragma once
// The mixture-of-experts FFN's tensors, in llama.cpp's file order: the router, then each
// expert matrix stacked over the experts (3-D). Every MoE architecture declares these; only the
// experts' width differs (expert_feed_forward_length, or feed_forward_length for Mixtral and
// OLMoE, as llama.cpp sizes them).
#include <vector>

#include "model/arch/architecture.h"

namespace lumen::model {

std::vector<TensorSpec> expert_tensors(Dim expert_width);

}  // namespace lumen::model
