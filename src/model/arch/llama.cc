#include "model/arch/llama.h"

#include <fmt/format.h>

namespace lumen::model {

namespace {

TransformerWeights bind_llama_family(WeightBinder& bind, const HParams& hp, bool qkv_bias) {
  const int64_t embd = static_cast<int64_t>(hp.embedding_length);
  const int64_t vocab = static_cast<int64_t>(hp.vocab_size);
  const int64_t q_dim = static_cast<int64_t>(hp.head_dim * hp.head_count);
  const int64_t kv_dim = static_cast<int64_t>(hp.head_dim * hp.head_count_kv);
  const int64_t ff = static_cast<int64_t>(hp.feed_forward_length);

  TransformerWeights w;
  w.token_embd = bind.require("token_embd.weight", {embd, vocab});
  w.output_norm = bind.require_f32("output_norm.weight", {embd});
  w.output = bind.optional("output.weight", {embd, vocab}).value_or(w.token_embd);
  w.rope_freqs = bind.optional_f32("rope_freqs.weight", {static_cast<int64_t>(hp.rope_dimension_count / 2)});
  for (uint64_t i = 0; i < hp.block_count; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights layer;
    layer.attn_norm = bind.require_f32(p + "attn_norm.weight", {embd});
    layer.wq = bind.require(p + "attn_q.weight", {embd, q_dim});
    layer.wk = bind.require(p + "attn_k.weight", {embd, kv_dim});
    layer.wv = bind.require(p + "attn_v.weight", {embd, kv_dim});
    layer.wo = bind.require(p + "attn_output.weight", {q_dim, embd});
    if (qkv_bias) {
      layer.bq = bind.require(p + "attn_q.bias", {q_dim});
      layer.bk = bind.require(p + "attn_k.bias", {kv_dim});
      layer.bv = bind.require(p + "attn_v.bias", {kv_dim});
    }
    layer.ffn_norm = bind.require_f32(p + "ffn_norm.weight", {embd});
    layer.ffn_gate = bind.require(p + "ffn_gate.weight", {embd, ff});
    layer.ffn_up = bind.require(p + "ffn_up.weight", {embd, ff});
    layer.ffn_down = bind.require(p + "ffn_down.weight", {ff, embd});
    w.layers.push_back(layer);
  }
  return w;
}

}  // namespace

ArchitectureConfig llama_config(const HParams&) {
  ArchitectureConfig config;
  config.name = "llama";
  // llama.cpp's converter permutes Q and K so that adjacent pairs rotate.
  config.rope_neox = false;
  config.bind_weights = [](WeightBinder& bind, const HParams& hp) {
    return bind_llama_family(bind, hp, false);
  };
  return config;
}

ArchitectureConfig qwen2_config(const HParams&) {
  ArchitectureConfig config;
  config.name = "qwen2";
  config.rope_neox = true;
  config.qkv_bias = true;
  config.bind_weights = [](WeightBinder& bind, const HParams& hp) {
    return bind_llama_family(bind, hp, true);
  };
  return config;
}

}  // namespace lumen::model
