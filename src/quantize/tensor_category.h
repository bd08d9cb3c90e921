#pragma once
// What llama-quantize reads from a tensor's name alone: which broad role it plays (the mixes
// treat attention V, FFN down, the output and the token embeddings specially) and whether it
// may be quantized at all (norms, biases, 1-D tensors, position embeddings and a list of small
// special tensors are always kept as they are). Both follow llama.cpp's src/llama-quant.cpp
// name tests, so a model quantizes the same way in both tools.
#include <cstdint>
#include <span>
#include <string_view>

namespace lumen::quantize {

enum class TensorCategory {
  TokenEmbedding,
  AttentionQ,
  AttentionV,
  AttentionK,
  AttentionQkv,
  AttentionKvB,
  AttentionOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Output,
  Other,
};

TensorCategory tensor_category(std::string_view name);

// The categories that get attention V's extra precision (V, fused QKV, MLA's kv_b).
bool is_attention_v_like(TensorCategory category);

// ggml's dimension count: trailing dimensions of 1 do not count ([4096, 1] is 1-D).
int effective_dims(std::span<const int64_t> dims);

// Whether llama-quantize would quantize this tensor: 2-D or more, named "...weight", and not a
// norm, a router, a position/token-type embedding or one of the small special tensors.
// `quantize_output` is false for llama-quantize's --leave-output-tensor.
bool allows_quantization(std::string_view name, std::span<const int64_t> dims,
                         bool quantize_output = true);

}  // namespace lumen::quantize
