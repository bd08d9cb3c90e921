#pragma once
// The few facts about a model that llama-quantize's per-tensor rules depend on, read from the
// GGUF metadata and tensor names as llama.cpp's loader would see them.
#include <cstdint>
#include <span>
#include <string>

#include "gguf/file.h"

namespace lumen::quantize {

struct ModelFacts {
  std::string architecture;   // general.architecture
  int64_t n_layer = 0;        // {arch}.block_count
  uint32_t n_gqa = 0;         // query heads per KV head in layer 0 (0 when unknown)
  uint32_t n_expert = 0;      // {arch}.expert_count
  bool is_70b = false;        // llama.cpp's LLM_TYPE_70B, which gets a better attention V
  bool tied_embeddings = true;  // no output.weight: token_embd doubles as the output
  int n_attention_v = 0;      // tensors in the attention-V-like categories
};

// Throws lumen::Error when the metadata has no architecture or a malformed head count.
ModelFacts read_model_facts(const gguf::GgufFile& file);

// The same from a model's metadata and its tensors' names (a file not written yet: lumen synth
// types its tensors as llama-quantize would).
ModelFacts model_facts(const gguf::Metadata& metadata, std::span<const std::string> tensor_names);

}  // namespace lumen::quantize
