#pragma once
// Architecture hyperparameters read from GGUF metadata ({arch}.* keys), with the defaults
// llama.cpp's converters rely on made explicit here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file.h"

namespace lumen::model {

struct RopeScaling {
  std::string type = "none";           // none | linear | yarn | llama3 | ...
  double factor = 1.0;
  uint64_t original_context_length = 0;  // YaRN's; absent: the training context, as llama.cpp
  double attn_factor = 1.0;              // rope.scaling.attn_factor (a magnitude, any type)
};

struct HParams {
  std::string architecture;            // general.architecture
  std::string name;                    // general.name (may be empty)
  uint64_t context_length = 0;
  uint64_t embedding_length = 0;
  uint64_t block_count = 0;
  uint64_t feed_forward_length = 0;
  uint64_t head_count = 0;
  uint64_t head_count_kv = 0;
  uint64_t head_dim = 0;               // attention.key_length, else embedding / heads
  uint64_t value_dim = 0;              // attention.value_length, else head_dim
  uint64_t vocab_size = 0;             // {arch}.vocab_size, else the token count
  double rope_freq_base = 10000.0;
  uint64_t rope_dimension_count = 0;   // else head_dim
  RopeScaling rope_scaling;
  double norm_eps = 1e-5;              // RMS norm epsilon (or layer-norm epsilon)
  uint64_t sliding_window = 0;         // 0: no local attention
  // Which layers are local, when the file says ({arch}.attention.sliding_window_pattern): a
  // period n (every n-th layer global, the others local) or one flag per layer (true: local).
  // Absent: the architecture's own pattern applies. A period of 0 makes every layer local, as
  // in llama.cpp.
  std::optional<uint64_t> sliding_window_period;
  std::vector<bool> sliding_window_layers;
  double rope_freq_base_local = 0.0;   // {arch}.rope.freq_base_swa; 0: the architecture's default
  double final_logit_softcap = 0.0;    // {arch}.final_logit_softcapping; 0: absent
  double attention_softcap = 0.0;      // {arch}.attn_logit_softcapping; 0: absent
  // Mixture of experts ({arch}.expert_*; 0 when absent). A dense model has no experts; a MoE
  // model routes each token to expert_used_count of its expert_count experts.
  uint64_t expert_count = 0;
  uint64_t expert_used_count = 0;
  // One expert's FFN width and the shared expert's (0: absent; what the architecture then uses
  // is decided by its tensor shapes, model/arch/tensor_spec.cc's Dim::ExpertFeedForward).
  uint64_t expert_feed_forward_length = 0;
  uint64_t expert_shared_feed_forward_length = 0;
  // DeepSeek-style routing (each 0 / absent when the file does not say): how many shared
  // experts of expert_feed_forward_length one shared FFN stands for, the factor on the routed
  // weights, whether they are renormalized, the gating function (llama.cpp's numbering: 1
  // softmax, 2 sigmoid), expert groups of which a token may use expert_group_used_count, and the
  // number of leading layers with a dense FFN instead of experts.
  uint64_t expert_shared_count = 0;
  double expert_weights_scale = 0.0;
  std::optional<bool> expert_weights_norm;
  uint64_t expert_gating_func = 0;
  uint64_t expert_group_count = 0;
  uint64_t expert_group_used_count = 0;
  uint64_t leading_dense_block_count = 0;
  // Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck
  // (0: one matrix), keys and values compressed to a kv_lora_rank latent plus a shared rope key
  // of rope_dimension_count. As llama.cpp's converter writes it, head_dim (key_length) is then
  // kv_lora_rank + rope dims and value_dim kv_lora_rank (what the cache holds per position, one
  // "KV head"), and key_length_mla / value_length_mla are the per-head sizes of the model.
  uint64_t q_lora_rank = 0;
  uint64_t kv_lora_rank = 0;
  uint64_t key_length_mla = 0;
  uint64_t value_length_mla = 0;
  double rope_yarn_log_mul = 0.0;  // rope.scaling.yarn_log_multiplier as the file stores it
  // {arch}.pooling_type (model/pooling.h): how an embedding model pools its hidden states;
  // absent in decoders' files.
  std::optional<uint64_t> pooling_type;
  // Encoders (BERT): the token-type embeddings' rows (tokenizer.ggml.token_type_count; absent:
  // BERT's 2).
  uint64_t token_type_count = 2;
  // State-space layers (Mamba 2, {arch}.ssm.*; all 0 when absent): the causal convolution's
  // kernel width, the inner width (heads x head dimension), the state per head dimension, the
  // head count (llama.cpp's "time_step_rank") and the groups B and C are shared by.
  uint64_t ssm_conv_kernel = 0;
  uint64_t ssm_inner_size = 0;
  uint64_t ssm_state_size = 0;
  uint64_t ssm_head_count = 0;
  uint64_t ssm_group_count = 0;
  // No attention at all (a pure state-space model, whose file says attention.head_count = 0):
  // the hyperparameters then describe a nominal single head of 2 values, so that the paged KV
  // cache keeps counting positions and blocks for the scheduler unchanged at 8 bytes a
  // position and layer; the forward pass never reads it (model/ssm_hparams.cc).
  bool attention_free = false;
  // A hybrid (granite-hybrid): per layer, whether it is a Mamba 2 layer, from the converter's
  // per-layer {arch}.attention.head_count_kv array (0: a Mamba 2 layer). Empty for every other
  // model; head_count_kv is then the attention layers' count (model/hybrid_hparams.cc).
  std::vector<bool> ssm_layers;
  // RWKV 7 ({arch}.wkv.head_size and the LoRA ranks {arch}.attention.*_lora_rank; 0 when
  // absent): the wkv heads' size (heads = embedding / head size) and the ranks of the decay,
  // in-context learning rate (a), value-residual and gate LoRAs (model/rwkv_hparams.cc).
  uint64_t wkv_head_size = 0;
  uint64_t rwkv_decay_lora = 0;
  uint64_t rwkv_iclr_lora = 0;
  uint64_t rwkv_value_lora = 0;
  uint64_t rwkv_gate_lora = 0;
  // Granite's multipliers ({arch}.embedding_scale, residual_scale, attention.scale,
  // logit_scale; 0: absent): embeddings times the first, each block's branch output times the
  // second before its residual add, scores times the third instead of 1 / sqrt(head_dim),
  // logits divided by the last. And {arch}.rope.scaling.finetuned, which Granite uses as a
  // switch for rope (absent: on; the converter writes false for a hybrid without positions).
  double embedding_scale = 0.0;
  double residual_scale = 0.0;
  double attention_scale = 0.0;
  double logit_scale = 0.0;
  bool rope_enabled = true;
};

// State-space hyperparameters (model/ssm_hparams.cc).
inline bool has_ssm(const HParams& hp) { return hp.ssm_inner_size != 0; }
// Channels of the causal convolution: the inner width plus B and C of every group.
inline uint64_t ssm_conv_channels(const HParams& hp) {
  return hp.ssm_inner_size + 2 * hp.ssm_group_count * hp.ssm_state_size;
}
// The input projection's width: z, the convolution's channels and dt (one per head).
inline uint64_t ssm_in_proj_width(const HParams& hp) {
  return hp.ssm_inner_size + ssm_conv_channels(hp) + hp.ssm_head_count;
}
// f32 values one sequence's recurrent state holds per layer: the convolution's last
// (kernel - 1) inputs and the SSM state (state size x inner width).
inline uint64_t ssm_state_values_per_layer(const HParams& hp) {
  return (hp.ssm_conv_kernel - 1) * ssm_conv_channels(hp) + hp.ssm_state_size * hp.ssm_inner_size;
}
// Whether layer `layer` is a Mamba 2 layer: every layer of an attention-free model, the
// flagged ones of a hybrid.
inline bool is_ssm_layer(const HParams& hp, uint64_t layer) {
  if (!has_ssm(hp)) return false;
  return hp.ssm_layers.empty() || (layer < hp.ssm_layers.size() && hp.ssm_layers[layer]);
}
inline bool is_hybrid(const HParams& hp) { return has_ssm(hp) && !hp.ssm_layers.empty(); }
// How many layers keep a recurrent state (what a state slot holds).
uint64_t ssm_layer_count(const HParams& hp);

// RWKV 7 (model/rwkv_hparams.cc).
inline bool has_rwkv(const HParams& hp) { return hp.wkv_head_size != 0; }
// f32 values one sequence's RWKV state holds per layer: the two token-shift rows (the time
// mix's and the channel mix's last normed input) and a head_size x head_size wkv matrix per head.
inline uint64_t rwkv_state_values_per_layer(const HParams& hp) {
  return 2 * hp.embedding_length + hp.embedding_length * hp.wkv_head_size;
}
// Reads {arch}.wkv.head_size and the LoRA ranks; a file with them and no attention heads is
// attention-free (HParams::attention_free). Throws lumen::Error naming the key.
void read_rwkv_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp);
void validate_rwkv(const HParams& hp, const std::string& prefix);

// A recurrent state per sequence (model/state_cache.h), whatever keeps it: Mamba 2 layers or
// RWKV's. Its size per layer is the architecture's; which layers keep one, a hybrid decides.
inline bool has_recurrent_state(const HParams& hp) { return has_ssm(hp) || has_rwkv(hp); }
inline uint64_t recurrent_state_values_per_layer(const HParams& hp) {
  return has_rwkv(hp) ? rwkv_state_values_per_layer(hp) : ssm_state_values_per_layer(hp);
}
inline bool is_recurrent_layer(const HParams& hp, uint64_t layer) {
  return has_rwkv(hp) ? layer < hp.block_count : is_ssm_layer(hp, layer);
}
inline uint64_t recurrent_layer_count(const HParams& hp) { return has_rwkv(hp) ? hp.block_count : ssm_layer_count(hp); }
// Reads a per-layer {arch}.attention.head_count_kv array (a hybrid's) into hp.ssm_layers and
// hp.head_count_kv, and Granite's multipliers and rope switch; throws lumen::Error naming the
// key for an array of the wrong length or type (model/hybrid_hparams.cc).
// Returns whether the file gave head_count_kv as such an array.
bool read_hybrid_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp);
// Reads {arch}.ssm.* into hp, and turns a file without attention heads but with SSM layers
// into an attention-free one (HParams::attention_free). Throws lumen::Error naming the key.
void read_ssm_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp);
// The nominal head of an attention-free model (HParams::attention_free), after every
// attention key was read.
void set_nominal_attention(HParams& hp);
// Range and divisibility checks of the SSM keys (validate_hparams calls it).
void validate_ssm(const HParams& hp, const std::string& prefix);

// Whether the file describes multi-head latent attention in the absorbed form (llama.cpp's
// is_mla: the per-head sizes are given).
inline bool is_mla(const HParams& hp) {
  return hp.kv_lora_rank != 0 && hp.key_length_mla != 0 && hp.value_length_mla != 0;
}
// Values per position and layer the KV cache holds: keys (all KV heads) and values. With MLA one
// latent row per position serves as the key and, its leading kv_lora_rank values, as the value.
inline uint64_t kv_key_row(const HParams& hp) { return hp.head_dim * hp.head_count_kv; }
inline uint64_t kv_value_row(const HParams& hp) {
  return is_mla(hp) ? hp.value_dim * hp.head_count_kv : hp.head_dim * hp.head_count_kv;
}
inline bool kv_values_in_keys(const HParams& hp) { return is_mla(hp); }

// Most experts a file may declare (llama.cpp's LLAMA_MAX_EXPERTS).
inline constexpr uint64_t kMaxExperts = 1024;

// One routed expert's FFN width where the architecture sizes experts by
// {arch}.expert_feed_forward_length: that key, else feed_forward_length / expert_used_count (as
// llama.cpp falls back for qwen2moe and qwen3moe). The shared expert's:
// expert_shared_feed_forward_length, else feed_forward_length.
uint64_t expert_ffn_width(const HParams& hp);
uint64_t shared_expert_ffn_width(const HParams& hp);

// Throws lumen::Error naming the missing or malformed key.
// Throws lumen::Error naming the key when a hyperparameter is out of range or inconsistent
// (read_hparams calls it; exposed for files built another way).
void validate_hparams(const HParams& hp, const gguf::GgufFile& file);

HParams read_hparams(const gguf::GgufFile& file);

}  // namespace lumen::model
