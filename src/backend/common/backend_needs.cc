// The capability queries' shared half: the names a refusal uses, and the one message that lists
// everything a model or an engine's options need of a backend that it lacks. Each backend
// answers only the per-feature questions (do_supports and its siblings).
#include "backend/backend_needs.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/backend.h"

namespace lumen::backend {

std::string_view backend_feature_name(BackendFeature feature) {
  switch (feature) {
    case BackendFeature::MoeFfn: return "a mixture-of-experts FFN (moe_ffn)";
    case BackendFeature::LatentAttention: return "multi-head latent attention (values read from the keys' cache rows)";
    case BackendFeature::StateSpace: return "state-space layers (ssm_conv, ssm_scan)";
    case BackendFeature::Encoder: return "an encoder's bidirectional attention (bidirectional_attention)";
    case BackendFeature::LayerNorm: return "LayerNorm blocks (layer_norm, gelu_erf, gelu_tanh)";
    case BackendFeature::TreeAttention: return "token-tree verification (tree attention masks, copy_kv_row)";
    case BackendFeature::ShiftKeys: return "context shift (shift_keys)";
    case BackendFeature::RotatedKv: return "a rotated KV cache (rotate_heads)";
    case BackendFeature::KvEviction: return "importance-based KV eviction (attention_scores, gather_kv_rows)";
    case BackendFeature::SpanAttention: return "attention both ways within each image's positions";
    case BackendFeature::Alibi: return "ALiBi position biases in attention (alibi_max_bias)";
    case BackendFeature::Rwkv7: return "RWKV 7's layers (rwkv_wkv7 and the rwkv7_* element-wise ops)";
    case BackendFeature::AttentionSinks: return "attention sinks (a learned logit per head in the softmax)";
    case BackendFeature::BiasedExperts:
      return "gpt-oss's experts (expert biases, the clamped SwiGLU, softmax over the chosen experts)";
  }
  return "an unnamed feature";
}

namespace {

template <typename T>
void add_once(std::vector<T>& list, T value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

}  // namespace

void BackendNeeds::add(BackendFeature feature) { add_once(features, feature); }
void BackendNeeds::add_weight_type(tensor::DType type) { add_once(weight_types, type); }
void BackendNeeds::add_kv_type(tensor::DType type) { add_once(kv_types, type); }

bool Backend::do_supports(BackendFeature) const { return false; }

bool Backend::do_supports_weight_type(tensor::DType type) const {
  return type == tensor::DType::F32 || type == tensor::DType::F16;
}

bool Backend::do_supports_kv_type(tensor::DType type) const {
  return type == tensor::DType::F16 || type == tensor::DType::F32;
}

std::vector<std::string> Backend::unsupported(const BackendNeeds& needs) const {
  std::vector<std::string> missing;
  for (BackendFeature feature : needs.features) {
    if (!supports(feature)) missing.emplace_back(backend_feature_name(feature));
  }
  for (tensor::DType type : needs.weight_types) {
    if (!supports_weight_type(type)) missing.push_back(fmt::format("{} weights", tensor::dtype_name(type)));
  }
  for (tensor::DType type : needs.kv_types) {
    if (!supports_kv_type(type)) missing.push_back(fmt::format("a {} KV cache", tensor::dtype_name(type)));
  }
  const bool latent =
      std::find(needs.features.begin(), needs.features.end(), BackendFeature::LatentAttention) != needs.features.end();
  const int64_t widest = latent ? max_latent_attention_head_dim() : max_attention_head_dim();
  if (widest > 0 && needs.attention_head_dim > widest) {
    missing.push_back(fmt::format("attention heads of {} values (at most {} here)", needs.attention_head_dim, widest));
  }
  return missing;
}

void Backend::require(const BackendNeeds& needs, std::string_view subject) const {
  const std::vector<std::string> missing = unsupported(needs);
  if (missing.empty()) return;
  std::string list;
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i > 0) list += i + 1 == missing.size() ? " and " : ", ";
    list += missing[i];
  }
  fail("{} needs {}, which the {} backend does not run yet; use --device cpu", subject, list, name());
}

}  // namespace lumen::backend
