#pragma once
// The llama family: Llama 1-3, SmolLM2, TinyLlama, Mistral (architecture "llama") and Qwen2
// (architecture "qwen2": the same blocks with biases on q, k and v and NeoX-style rotation).
#include "model/arch/architecture.h"

namespace lumen::model {

ArchitectureConfig llama_config(const HParams& hp);
ArchitectureConfig qwen2_config(const HParams& hp);

}  // namespace lumen::model
