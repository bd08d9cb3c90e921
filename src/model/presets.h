#pragma once
// Shapes of well-known models, for `lumen synth`: speed is measured at real shapes even when
// the real weights cannot be downloaded.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace lumen::model {

struct Preset {
  std::string_view name;
  std::string_view architecture;  // a registered architecture's id (model/arch/): its file's
                                  // general.architecture, or a variant such as "mixtral"
  uint64_t context_length;
  uint64_t embedding_length;
  uint64_t block_count;
  uint64_t feed_forward_length;
  uint64_t head_count;
  uint64_t head_count_kv;
  uint64_t vocab_size;
  double rope_freq_base;
  double norm_eps;
  bool tied_embeddings;           // no output.weight: the embedding matrix is reused
  // "none", "llama3" (written as a rope_freqs tensor) or "longrope" (Phi-3's: long and short
  // factor tensors, rope.scaling.original_context_length and attn_factor; longrope_factors)
  std::string_view rope_scaling;
  double rope_scaling_factor;
  uint64_t rope_original_context;
  uint64_t head_dim = 0;        // attention.key_length when it is not embedding / heads (0: it is)
  uint64_t sliding_window = 0;  // attention.sliding_window for architectures with local layers
  // Mixture of experts (0: dense): {arch}.expert_count, expert_used_count and, when not 0,
  // expert_feed_forward_length and expert_shared_feed_forward_length.
  uint64_t expert_count = 0;
  uint64_t expert_used_count = 0;
  uint64_t expert_feed_forward_length = 0;
  uint64_t expert_shared_feed_forward_length = 0;
  // Multiplies the random scale of the query and key weights. At 1 a narrow random model's
  // attention is nearly uniform (scores of std ~0.0004 x width), so which key sits where, and
  // with it the rope, barely changes the logits; a rope test model wants sharper attention.
  double qk_init_scale = 1.0;
  // Soft caps written as {arch}.attn_logit_softcapping and final_logit_softcapping (0: not
  // written; the architecture's default applies).
  double attention_softcap = 0.0;
  double final_logit_softcap = 0.0;
  // rope.dimension_count when only part of each head rotates (0: all of it; Phi-4-mini: 96 of 128).
  uint64_t rope_dims = 0;
  // DeepSeek-V2 (deepseek2; all 0 otherwise): multi-head latent attention's ranks and per-head
  // sizes (key = nope + rope), the leading dense layers and the shared experts.
  uint64_t q_lora_rank = 0;
  uint64_t kv_lora_rank = 0;
  uint64_t qk_nope_dim = 0;
  uint64_t qk_rope_dim = 0;
  uint64_t v_head_dim = 0;
  uint64_t leading_dense_blocks = 0;
  uint64_t expert_shared_count = 0;
  // State-space layers (Mamba 2; all 0 otherwise): {arch}.ssm.conv_kernel, inner_size,
  // state_size, time_step_rank (heads) and group_count. head_count 0: no attention.
  uint64_t ssm_conv_kernel = 0;
  uint64_t ssm_inner_size = 0;
  uint64_t ssm_state_size = 0;
  uint64_t ssm_head_count = 0;
  uint64_t ssm_group_count = 0;
  // A hybrid (granite-hybrid: attention heads and SSM sizes both set): layer i attends when
  // (i + 1) % attention_period == 0 and is a Mamba 2 layer otherwise, written as llama.cpp's
  // converter does (a per-layer attention.head_count_kv with 0 for Mamba 2 layers).
  uint64_t attention_period = 0;
  // Granite's multipliers (0: not written) and its rope switch (rope.scaling.finetuned).
  double embedding_scale = 0.0;
  double residual_scale = 0.0;
  double attention_scale = 0.0;
  double logit_scale = 0.0;
  bool no_rope = false;
  // RWKV 7 (0 otherwise): {arch}.wkv.head_size and the decay, iclr, value-residual and gate
  // LoRA ranks. head_count 0: no attention.
  uint64_t wkv_head_size = 0;
  uint64_t rwkv_decay_lora = 0;
  uint64_t rwkv_iclr_lora = 0;
  uint64_t rwkv_value_lora = 0;
  uint64_t rwkv_gate_lora = 0;
};

// A hybrid preset's Mamba 2 layers among its first `layers` (empty for any other preset).
std::vector<bool> preset_ssm_layers(const Preset& preset, uint64_t layers);

std::span<const Preset> presets();
const Preset* find_preset(std::string_view name);

// Llama 3's frequency-dependent RoPE scaling as llama.cpp's converter stores it: a rope_freqs
// tensor of per-dimension divisors (head_dim / 2 of them), so llama.cpp reads our files too.
std::vector<float> llama3_rope_factors(const Preset& preset, int64_t head_dim);

// A LongRoPE preset's per-pair divisors (rope_dims / 2 of them), shaped like Phi-3.5's: 1 for
// the fastest pairs, rising smoothly to 1.5 x the scaling factor (long) or to 1.5 (short) for
// the slowest. The preset's rope.scaling.attn_factor: sqrt(1 + ln(scale) / ln(original)), scale
// = context / original, as llama.cpp's converter computes it.
std::vector<float> longrope_factors(const Preset& preset, int64_t rope_dims, bool long_set);
double longrope_attn_factor(const Preset& preset);

}  // namespace lumen::model
