#pragma once
// What a model and an engine's options will ask of a backend, gathered before anything runs, so
// that a backend lacking one of them is refused at load with one message naming all of them,
// instead of failing inside a step (Backend::unsupported, Backend::require).
#include <cstdint>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace lumen::backend {

// The optional ops, each a feature a backend has or lacks as a whole.
enum class BackendFeature : uint8_t {
  MoeFfn,           // a mixture-of-experts FFN (Backend::moe_ffn)
  LatentAttention,  // a KV cache whose values are a view of its keys, attended to (MLA)
  StateSpace,       // Mamba 2 layers (ssm_conv, ssm_scan) and their host-side state
  Encoder,          // an encoder's attention: every row of a sequence sees all of it (bidirectional_attention)
  LayerNorm,        // LayerNorm blocks and element-wise activations (layer_norm, gelu_erf, gelu_tanh,
                    // activation): encoders (BERT), BLOOM, Gemma 2's final logit soft cap
  TreeAttention,    // token-tree verification: a tree attention mask and copy_kv_row
  ShiftKeys,        // context shift (shift_keys)
  RotatedKv,        // a Hadamard-rotated KV cache (rotate_heads)
  KvEviction,       // importance-based KV eviction (attention_scores, gather_kv_rows)
  SpanAttention,    // prompt spans whose positions attend both ways (SequenceSlice::key_ends)
  Alibi,            // ALiBi position biases in attention (AttentionConfig::alibi_max_bias)
  Rwkv7,            // RWKV 7's layers: rwkv_wkv7 and the element-wise rwkv7_* ops
  AttentionSinks,   // a learned sink logit per head in attention's softmax (AttentionConfig::sinks)
  BiasedExperts,    // gpt-oss's experts: biases on each expert's matrices, the clamped SwiGLU
                    // (Glu::SwigluOai), the softmax over the chosen experts' logits
};
inline constexpr BackendFeature kAllBackendFeatures[] = {
    BackendFeature::MoeFfn,         BackendFeature::LatentAttention, BackendFeature::StateSpace,
    BackendFeature::Encoder,        BackendFeature::TreeAttention,   BackendFeature::ShiftKeys,
    BackendFeature::RotatedKv,      BackendFeature::KvEviction,      BackendFeature::SpanAttention,
    BackendFeature::Alibi,          BackendFeature::Rwkv7,           BackendFeature::LayerNorm,
    BackendFeature::AttentionSinks, BackendFeature::BiasedExperts};

// What a user reads in a refusal: "a mixture-of-experts FFN (moe_ffn)".
std::string_view backend_feature_name(BackendFeature feature);

struct BackendNeeds {
  std::vector<BackendFeature> features;
  std::vector<tensor::DType> weight_types;  // every type a weight tensor is stored in
  std::vector<tensor::DType> kv_types;      // the KV cache's element type (none: no cache)
  int64_t attention_head_dim = 0;           // values per head of a key row (0: no attention)

  // Each adds once (a model's thousand tensors name a handful of types).
  void add(BackendFeature feature);
  void add_weight_type(tensor::DType type);
  void add_kv_type(tensor::DType type);
};

}  // namespace lumen::backend
