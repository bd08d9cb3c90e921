#pragma once
// The ways decoder blocks differ between architectures, as fields with an "off" value. Each
// field is either a code path of model/transformer.cc or refused at load by
// require_supported_features (model/arch/features.cc) with an error naming it, so a model that
// needs a feature Lumen cannot run yet fails loudly instead of producing wrong text.
#include <cstdint>

#include "backend/expert_routing.h"

namespace lumen::model {

struct HParams;

// SwiGlu and GeGlu gate the FFN (silu or tanh GELU of gate, times up, then down); Gelu is the
// plain one (up with its bias, ggml's tanh GELU, down with its bias: BLOOM).
// SwiGluOai: gpt-oss's clamped SwiGLU (backend Glu::SwigluOai), in its experts only.
enum class Activation { SwiGlu, GeGlu, Gelu, SwiGluOai };
enum class FfnKind { Dense, MixtureOfExperts };
// How a MoE router turns its logits into expert probabilities (the backend's, which routes).
using ExpertGating = backend::ExpertGating;
enum class AttentionKind { Grouped /* MHA, GQA and MQA */, MultiHeadLatent };
// What mixes information across positions in a block. Attention blocks are attention then an
// FFN; a Mamba 2 block is an RMS norm, the state-space mixer (model/mamba2_mixer.h) and the
// residual add, with no FFN, and keeps a per-sequence recurrent state instead of K/V.
// A hybrid mixes the two: the layers the file marks (HParams::ssm_layers) have a Mamba 2 mixer
// where the others attend, and every block then has its FFN (granite-hybrid).
// RWKV 7's blocks are a LayerNorm, its time mix and residual add, a LayerNorm, its channel mix
// (its FFN) and residual add (model/rwkv7_block.h), with a per-sequence state like Mamba 2's.
enum class Mixer { Attention, Mamba2, HybridMamba2, Rwkv7 };

// Which layers attend through a sliding window of {arch}.attention.sliding_window positions.
enum class SlidingWindow {
  None,       // every layer attends to every earlier position; the metadata key is ignored, as
              // llama.cpp ignores it for these architectures
  AllLayers,  // every layer is local
  Pattern,    // layer i is global when (i + 1) % sliding_window_period == 0, local otherwise;
              // {arch}.attention.sliding_window_pattern in the file overrides the period
};

struct BlockFeatures {
  bool rope_neox = false;  // rotate (i, i + d/2) pairs instead of adjacent ones
  // > 0: layer i attends without rope (NoPE) when (i + 1) % no_rope_period == 0 (SmolLM3: every
  // fourth layer, llama.cpp's n_no_rope_layer_step).
  uint32_t no_rope_period = 0;
  Activation activation = Activation::SwiGlu;
  bool qk_norm = false;              // RMS norm of each query and key head before rope
  bool qk_norm_full_width = false;   // with qk_norm: of the whole q and k rows instead (OLMoE)
  bool post_attention_norm = false;  // RMS norm of the attention output before the residual add
  bool post_ffn_norm = false;        // the same after the feed-forward block
  SlidingWindow sliding_window = SlidingWindow::None;
  uint32_t sliding_window_period = 0;  // for SlidingWindow::Pattern
  // The window when the file has no {arch}.attention.sliding_window (Gemma 2: 4096, llama.cpp's
  // default); 0: a sliding-window architecture's file must give it.
  uint64_t default_sliding_window = 0;
  float attention_softcap = 0.0f;      // 0: none; else scores become c * tanh(s / c)
  float logit_softcap = 0.0f;          // 0: none; the same on the final logits
  // Whether {arch}.final_logit_softcapping and {arch}.attn_logit_softcapping, when the file has
  // them, replace logit_softcap and attention_softcap (llama.cpp reads the keys only for the
  // architectures that define them). resolved_softcaps() gives the values a model runs with.
  bool logit_softcap_from_file = false;
  bool attention_softcap_from_file = false;
  bool embedding_scale = false;        // multiply embeddings by sqrt(embedding_length)
  // Local (sliding-window) layers rotate with their own frequency base: local_rope_base, or
  // {arch}.rope.freq_base_swa when the file has it; and without the file's RoPE scaling, which
  // applies to global layers only.
  bool per_layer_rope_base = false;
  double local_rope_base = 10000.0;
  // Without per_layer_rope_base: local layers rotate as the global ones (the file's scaling
  // included) but with {arch}.rope.freq_base_swa's base when the file has one (Gemma 2, as
  // llama.cpp reads it).
  bool local_rope_base_from_file = false;
  // Null: scores are q.k / sqrt(head_dim). Else queries are multiplied by query_scale(hp) after
  // rope and scores are q.k unscaled (Gemma's query_pre_attn_scalar, applied as llama.cpp does).
  double (*query_scale)(const HParams& hp) = nullptr;
  FfnKind ffn = FfnKind::Dense;
  // For FfnKind::MixtureOfExperts: each token goes to the {arch}.expert_used_count experts of
  // highest probability, weighted by their probabilities, renormalized to sum to 1 when
  // expert_weights_norm (Mixtral, Qwen3-MoE) or as they are (Qwen1.5/2-MoE); a shared expert,
  // when the architecture declares one, adds its output scaled by sigmoid(gate_inp_shexp . x).
  ExpertGating expert_gating = ExpertGating::Softmax;
  bool expert_weights_norm = false;
  // DeepSeek: the file says how its router gates ({arch}.expert_gating_func; absent: softmax)
  // and whether it renormalizes ({arch}.expert_weights_norm; absent: no), overriding the two
  // fields above. Any architecture's file may scale the weights ({arch}.expert_weights_scale)
  // and group the experts ({arch}.expert_group_count), as llama.cpp reads those for all.
  bool routing_from_file = false;
  AttentionKind attention = AttentionKind::Grouped;
  // An encoder (BERT): learned absolute positions and token type 0 added to the token
  // embeddings, then a LayerNorm; each block post-norm (LayerNorm after each residual add), with
  // biases on every projection, attention over the whole input in both directions (no causal
  // mask, no rope, no KV cache kept) and a plain GELU FFN (up, erf GELU, down). No output norm
  // or head: it computes embeddings only (model/encoder.cc), on the CPU backend. Its file may
  // instead rotate q and k (rope, nomic-bert: no position embeddings), fuse q, k and v in one
  // matrix, leave the biases out and gate its FFN (SwiGLU when ffn_gate is there).
  bool encoder = false;
  Mixer mixer = Mixer::Attention;
  // Granite: the file's embedding, residual, attention and logit multipliers and its rope
  // switch (HParams::embedding_scale and the rest) apply; other architectures ignore those
  // keys, as llama.cpp does.
  bool granite_multipliers = false;
  // BLOOM: every norm of the decoder (the blocks', the output's, and token_embd_norm right after
  // the embedding lookup) a LayerNorm with its bias; the matrices' biases (the fused QKV's, the
  // output projection's, the FFN's) are added. Needs BackendFeature::LayerNorm (and Alibi).
  bool layer_norm = false;
  // ALiBi instead of rope (AttentionConfig::alibi_max_bias): 0 none. BLOOM's 8 is llama.cpp's
  // fixed value (its files carry no key for it).
  float alibi_max_bias = 0.0f;
  // gpt-oss: each layer's attn_sinks.weight, one learned logit per query head that joins the
  // attention softmax without a value (AttentionConfig::sinks; BackendFeature::AttentionSinks).
  bool attention_sinks = false;
  // false: YaRN's correction range keeps its computed ends (RopeConfig::yarn_truncate; gpt-oss).
  bool yarn_truncate = true;
};

}  // namespace lumen::model
