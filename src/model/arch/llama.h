#pragma once
// Llama 1-3, SmolLM2, TinyLlama, Mistral (general.architecture "llama"). Its block tensors are
// shared with the architectures built on the same block (qwen2.cc adds q/k/v biases).
#include <vector>

#include "model/arch/architecture.h"

namespace lumen::model {

Architecture llama_architecture();

// The llama block's tensors, in llama.cpp's file order.
std::vector<TensorSpec> llama_tensors();

}  // namespace lumen::model
