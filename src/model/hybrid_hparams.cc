// A hybrid's hyperparameters as llama.cpp's converter writes them for granite-hybrid: which
// layers are Mamba 2 layers (a 0 in the per-layer {arch}.attention.head_count_kv array), and
// Granite's multipliers and rope switch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "model/hparams.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// One element of a 32-bit integer array (gguf-py writes Python ints as I32).
int64_t array_element(const gguf::Array& a, uint64_t i) {
  if (a.element_type == gguf::ValueType::I32) {
    int32_t v = 0;
    std::memcpy(&v, a.raw.data() + i * sizeof v, sizeof v);
    return v;
  }
  uint32_t v = 0;
  std::memcpy(&v, a.raw.data() + i * sizeof v, sizeof v);
  return v;
}

}  // namespace

uint64_t ssm_layer_count(const HParams& hp) {
  if (!has_ssm(hp)) return 0;
  if (hp.ssm_layers.empty()) return hp.block_count;
  return static_cast<uint64_t>(std::count(hp.ssm_layers.begin(), hp.ssm_layers.end(), true));
}

bool read_hybrid_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp) {
  hp.embedding_scale = md.find_float(prefix + "embedding_scale").value_or(0.0);
  hp.residual_scale = md.find_float(prefix + "residual_scale").value_or(0.0);
  hp.attention_scale = md.find_float(prefix + "attention.scale").value_or(0.0);
  hp.logit_scale = md.find_float(prefix + "logit_scale").value_or(0.0);
  hp.rope_enabled = md.find_bool(prefix + "rope.scaling.finetuned").value_or(true);
  for (const auto& [name, v] : {std::pair{"embedding_scale", hp.embedding_scale},
                                {"residual_scale", hp.residual_scale},
                                {"attention.scale", hp.attention_scale},
                                {"logit_scale", hp.logit_scale}}) {
    if (!std::isfinite(v) || v < 0.0) fail("{}{} = {} must be a positive number", prefix, name, v);
  }

  const std::string key = prefix + "attention.head_count_kv";
  const gguf::Value* value = md.find(key);
  if (value == nullptr || value->type() != gguf::ValueType::ARRAY) return false;
  const gguf::Array& counts = value->as_array();
  if (counts.element_type != gguf::ValueType::I32 && counts.element_type != gguf::ValueType::U32) {
    fail("{} must be an array of 32-bit integers", key);
  }
  if (counts.length != hp.block_count || counts.raw.size() != counts.length * 4) {
    fail("{} has {} entries for {} layers", key, counts.length, hp.block_count);
  }
  uint64_t kv_heads = 0;
  std::vector<bool> ssm_layers;
  for (uint64_t i = 0; i < counts.length; ++i) {
    const int64_t n = array_element(counts, i);
    if (n < 0) fail("{}[{}] = {} is negative", key, i, n);
    ssm_layers.push_back(n == 0);
    if (n == 0) continue;
    // One KV head count for every attention layer: the paged cache has one row width.
    if (kv_heads != 0 && kv_heads != static_cast<uint64_t>(n)) {
      fail("{}: attention layers with {} and {} KV heads (one count for all is supported)", key, kv_heads, n);
    }
    kv_heads = static_cast<uint64_t>(n);
  }
  // Every layer a Mamba 2 layer (llama.cpp runs such a file too): the count is nominal, no layer
  // keeps K/V (kv::attention_kv_layout).
  if (kv_heads == 0) kv_heads = hp.head_count;
  const bool any_ssm = std::find(ssm_layers.begin(), ssm_layers.end(), true) != ssm_layers.end();
  if (any_ssm && !has_ssm(hp)) fail("{} marks Mamba 2 layers but {}ssm.inner_size is missing", key, prefix);
  if (any_ssm) hp.ssm_layers = std::move(ssm_layers);
  hp.head_count_kv = kv_heads;
  return true;
}

}  // namespace lumen::model
