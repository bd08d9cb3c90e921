#include "model/hparams.h"

#include <algorithm>
#include <cmath>

#include "backend/expert_routing.h"
#include "model/arch/architecture.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// Far beyond any real model, small enough that products of these stay far from overflow and
// that no allocation sized from them is absurd.
constexpr uint64_t kMaxBlocks = 1024;
constexpr uint64_t kMaxWidth = uint64_t{1} << 20;      // embedding, feed-forward, q/kv widths
constexpr uint64_t kMaxHeads = 4096;
constexpr uint64_t kMaxContext = uint64_t{1} << 24;
constexpr uint64_t kMaxVocab = uint64_t{1} << 24;

void require_range(const std::string& key, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) fail("{} = {} is out of range (expected {}..{})", key, value, min, max);
}

// llama.cpp's converters write the pattern either as a period or as one flag per layer.
void read_sliding_window_pattern(const gguf::Metadata& md, const std::string& key, HParams& hp) {
  const gguf::Value* value = md.find(key);
  if (value == nullptr) return;
  if (value->type() == gguf::ValueType::ARRAY) {
    const gguf::Array& flags = md.get_array(key, gguf::ValueType::BOOL);
    if (flags.length > kMaxBlocks) fail("{} has {} entries (at most {})", key, flags.length, kMaxBlocks);
    for (uint8_t flag : flags.raw) hp.sliding_window_layers.push_back(flag != 0);
    return;
  }
  hp.sliding_window_period = md.get_unsigned(key);
}

// The expert counts as llama.cpp checks them (it asserts; a hostile file here gets one line).
void validate_experts(const HParams& hp, const std::string& prefix) {
  require_range(prefix + "expert_count", hp.expert_count, 0, kMaxExperts);
  if (hp.expert_count == 0) {
    if (hp.expert_used_count != 0) {
      fail("{}expert_used_count = {} but the model has no experts ({}expert_count is missing or 0)", prefix,
           hp.expert_used_count, prefix);
    }
    return;
  }
  require_range(prefix + "expert_used_count", hp.expert_used_count, 1, hp.expert_count);
  require_range(prefix + "expert_feed_forward_length", hp.expert_feed_forward_length, 0, kMaxWidth);
  require_range(prefix + "expert_shared_feed_forward_length", hp.expert_shared_feed_forward_length, 0, kMaxWidth);
  if (expert_ffn_width(hp) == 0) {
    fail("{}expert_feed_forward_length is missing and feed_forward_length / expert_used_count ({} / {}) is 0", prefix,
         hp.feed_forward_length, hp.expert_used_count);
  }
}

// DeepSeek's routing and latent attention keys, checked before the forward pass sizes anything
// with them.
void validate_deepseek(const HParams& hp, const std::string& prefix) {
  require_range(prefix + "leading_dense_block_count", hp.leading_dense_block_count, 0, hp.block_count);
  require_range(prefix + "expert_shared_count", hp.expert_shared_count, 0, kMaxExperts);
  require_range(prefix + "expert_gating_func", hp.expert_gating_func, 0, 2);
  if (!std::isfinite(hp.expert_weights_scale) || hp.expert_weights_scale < 0.0) {
    fail("{}expert_weights_scale = {} must be a positive number", prefix, hp.expert_weights_scale);
  }
  if (hp.expert_group_count > 1) {
    // At most kMaxExpertGroups: a token's kept groups are one 64-bit mask (backend/expert_routing.h).
    require_range(prefix + "expert_group_count", hp.expert_group_count, 2,
                  std::min<uint64_t>(std::max<uint64_t>(hp.expert_count, 2), backend::kMaxExpertGroups));
    if (hp.expert_count % hp.expert_group_count != 0) {
      fail("{}expert_group_count = {} does not divide {} experts", prefix, hp.expert_group_count, hp.expert_count);
    }
    require_range(prefix + "expert_group_used_count", hp.expert_group_used_count, 1, hp.expert_group_count);
    // Groups are scored by their two best experts, as DeepSeek-V3 defines them.
    if (hp.expert_count / hp.expert_group_count < 2) {
      fail("{}expert_group_count = {} leaves fewer than 2 experts per group", prefix, hp.expert_group_count);
    }
    if (hp.expert_group_used_count * (hp.expert_count / hp.expert_group_count) < hp.expert_used_count) {
      fail("{}expert_group_used_count = {} groups hold fewer than the {} experts a token uses", prefix,
           hp.expert_group_used_count, hp.expert_used_count);
    }
  }
  require_range(prefix + "attention.q_lora_rank", hp.q_lora_rank, 0, kMaxWidth);
  require_range(prefix + "attention.kv_lora_rank", hp.kv_lora_rank, 0, kMaxWidth);
  require_range(prefix + "attention.key_length_mla", hp.key_length_mla, 0, kMaxWidth);
  require_range(prefix + "attention.value_length_mla", hp.value_length_mla, 0, kMaxWidth);
  if (!std::isfinite(hp.rope_yarn_log_mul) || hp.rope_yarn_log_mul < 0.0) {
    fail("{}rope.scaling.yarn_log_multiplier = {} must be a positive number", prefix, hp.rope_yarn_log_mul);
  }
  if (!is_mla(hp)) return;
  // The cache row is the latent plus the rope key, shared by every head (one KV head); the
  // per-head key is a non-rotated part of at least one value plus the same rope part.
  if (hp.head_count_kv != 1 || hp.head_dim != hp.kv_lora_rank + hp.rope_dimension_count ||
      hp.value_dim != hp.kv_lora_rank) {
    fail("{}attention: multi-head latent attention needs head_count_kv = 1, key_length = kv_lora_rank + "
         "rope.dimension_count and value_length = kv_lora_rank (the file has {}, {}, {} for rank {} and {} rope "
         "dimensions)",
         prefix, hp.head_count_kv, hp.head_dim, hp.value_dim, hp.kv_lora_rank, hp.rope_dimension_count);
  }
  if (hp.key_length_mla <= hp.rope_dimension_count) {
    fail("{}attention.key_length_mla = {} must exceed rope.dimension_count = {}", prefix, hp.key_length_mla,
         hp.rope_dimension_count);
  }
  const std::optional<uint64_t> q_width = checked_mul(hp.key_length_mla, hp.head_count);
  const std::optional<uint64_t> v_width = checked_mul(hp.value_length_mla, hp.head_count);
  if (!q_width || *q_width > kMaxWidth || !v_width || *v_width > kMaxWidth) {
    fail("{}attention.head_count x key_length_mla / value_length_mla is too large", prefix);
  }
}

// The rope.scaling.type values Lumen runs, and why the others it may meet are refused. llama.cpp
// accepts none, linear, yarn and longrope (and stops on any other name); "llama3" is accepted
// here too, as the rope_freqs tensor that carries it (model/rope_config.h).
void validate_rope_scaling_type(const std::string& type, const std::string& prefix) {
  if (type == "none" || type == "linear" || type == "yarn" || type == "llama3") return;
  const std::string key = prefix + "rope.scaling.type";
  if (type == "dynamic") {
    // Dynamic NTK raises the base as the sequence grows, which changes the rotation of every key
    // already cached: a paged or prefix-shared cache holds keys rotated once, at their position.
    fail(
        "{} 'dynamic' (dynamic NTK) is not supported: it re-rotates every cached key as the sequence grows, "
        "which a paged, prefix-shared KV cache cannot do (llama.cpp has none either); static NTK-aware "
        "scaling is a larger rope.freq_base, which files already express",
        key);
  }
  if (type == "longrope" || type == "su") {
    fail("{} '{}' (LongRoPE, Phi-3's per-pair long/short factor tensors) is not supported", key, type);
  }
  fail("{} '{}' is not supported (supported: none, linear, yarn, llama3 as a rope_freqs tensor)", key, type);
}

}  // namespace

uint64_t expert_ffn_width(const HParams& hp) {
  if (hp.expert_feed_forward_length != 0) return hp.expert_feed_forward_length;
  return hp.expert_used_count == 0 ? 0 : hp.feed_forward_length / hp.expert_used_count;
}

uint64_t shared_expert_ffn_width(const HParams& hp) {
  return hp.expert_shared_feed_forward_length != 0 ? hp.expert_shared_feed_forward_length : hp.feed_forward_length;
}

// Every number the forward pass, the KV cache and the engine divide by or size memory with is
// checked here, before anything is allocated: a hostile file fails with one line naming its key.
void validate_hparams(const HParams& hp, const gguf::GgufFile& file) {
  const std::string prefix = hp.architecture + ".";
  require_range(prefix + "block_count", hp.block_count, 1, kMaxBlocks);
  require_range(prefix + "embedding_length", hp.embedding_length, 1, kMaxWidth);
  require_range(prefix + "context_length", hp.context_length, 1, kMaxContext);
  // A pure state-space model has no FFN (its file says 0).
  require_range(prefix + "feed_forward_length", hp.feed_forward_length, hp.attention_free ? 0 : 1, kMaxWidth);
  require_range(prefix + "attention.head_count", hp.head_count, 1, kMaxHeads);
  require_range(prefix + "attention.key_length (head dimension)", hp.head_dim, 1, kMaxWidth);
  require_range(prefix + "attention.value_length", hp.value_dim, 1, kMaxWidth);
  const std::optional<uint64_t> q_width = checked_mul(hp.head_dim, hp.head_count);
  if (!q_width || *q_width > kMaxWidth) {
    fail("{}attention.head_count x head dimension ({} x {}) is too large", prefix, hp.head_count, hp.head_dim);
  }
  if (hp.rope_dimension_count == 0 || hp.rope_dimension_count > hp.head_dim || hp.rope_dimension_count % 2 != 0) {
    fail("{}rope.dimension_count = {} must be even and in 2..{} (the head dimension)", prefix,
         hp.rope_dimension_count, hp.head_dim);
  }
  require_range("vocabulary size", hp.vocab_size, 1, kMaxVocab);
  if (const auto* tokens = file.metadata().find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING);
      tokens != nullptr && tokens->length != hp.vocab_size) {
    fail("{}vocab_size = {} but tokenizer.ggml.tokens has {} tokens", prefix, hp.vocab_size, tokens->length);
  }
  if (!std::isfinite(hp.rope_freq_base) || hp.rope_freq_base <= 0.0) {
    fail("{}rope.freq_base = {} must be a positive number", prefix, hp.rope_freq_base);
  }
  if (!std::isfinite(hp.norm_eps) || hp.norm_eps <= 0.0 || hp.norm_eps >= 1.0) {
    fail("{}attention.layer_norm_rms_epsilon = {} must be in (0, 1)", prefix, hp.norm_eps);
  }
  validate_rope_scaling_type(hp.rope_scaling.type, prefix);
  if (hp.rope_scaling.type != "none" && (!std::isfinite(hp.rope_scaling.factor) || hp.rope_scaling.factor <= 0.0)) {
    fail("{}rope.scaling.factor = {} must be a positive number", prefix, hp.rope_scaling.factor);
  }
  if (!std::isfinite(hp.rope_scaling.attn_factor) || hp.rope_scaling.attn_factor <= 0.0) {
    fail("{}rope.scaling.attn_factor = {} must be a positive number", prefix, hp.rope_scaling.attn_factor);
  }
  if (hp.rope_scaling.type == "yarn" &&
      (hp.rope_scaling.original_context_length == 0 || hp.rope_scaling.original_context_length > kMaxContext)) {
    fail("{}rope.scaling.original_context_length = {} is out of range (expected 1..{})", prefix,
         hp.rope_scaling.original_context_length, kMaxContext);
  }
  if (!hp.sliding_window_layers.empty() && hp.sliding_window_layers.size() != hp.block_count) {
    fail("{}attention.sliding_window_pattern has {} entries for {} blocks", prefix, hp.sliding_window_layers.size(),
         hp.block_count);
  }
  if (hp.sliding_window_period && *hp.sliding_window_period > kMaxBlocks) {
    fail("{}attention.sliding_window_pattern = {} is out of range (expected 0..{})", prefix,
         *hp.sliding_window_period, kMaxBlocks);
  }
  if (!std::isfinite(hp.rope_freq_base_local) || hp.rope_freq_base_local < 0.0) {
    fail("{}rope.freq_base_swa = {} must be a positive number", prefix, hp.rope_freq_base_local);
  }
  // A soft cap divides the logits (or the attention scores): a positive number when given.
  if (!std::isfinite(hp.final_logit_softcap) || hp.final_logit_softcap < 0.0) {
    fail("{}final_logit_softcapping = {} must be a positive number", prefix, hp.final_logit_softcap);
  }
  if (!std::isfinite(hp.attention_softcap) || hp.attention_softcap < 0.0) {
    fail("{}attn_logit_softcapping = {} must be a positive number", prefix, hp.attention_softcap);
  }
  // llama.cpp's pooling types are 0 (none) to 4 (rank); model/pooling.h reads them.
  if (hp.pooling_type) require_range(prefix + "pooling_type", *hp.pooling_type, 0, 4);
  require_range("tokenizer.ggml.token_type_count", hp.token_type_count, 1, kMaxVocab);
  validate_experts(hp, prefix);
  validate_deepseek(hp, prefix);
  validate_ssm(hp, prefix);
  validate_rwkv(hp, prefix);
}

HParams read_hparams(const gguf::GgufFile& file) {
  const gguf::Metadata& md = file.metadata();
  HParams hp;
  hp.architecture = md.get_string("general.architecture");
  hp.name = md.find_string("general.name").value_or("");
  const std::string prefix = hp.architecture + ".";
  auto key = [&](const char* suffix) { return prefix + suffix; };

  hp.context_length = md.get_unsigned(key("context_length"));
  hp.embedding_length = md.get_unsigned(key("embedding_length"));
  hp.block_count = md.get_unsigned(key("block_count"));
  hp.feed_forward_length = md.find_unsigned(key("feed_forward_length")).value_or(0);
  hp.head_count = md.get_unsigned(key("attention.head_count"));
  read_ssm_hparams(md, prefix, hp);  // an attention-free file gets its nominal head here
  read_rwkv_hparams(md, prefix, hp);  // so does an RWKV file
  if (hp.head_count == 0) {
    fail("{} is 0 (and no {} or {} makes the model attention-free)", key("attention.head_count"), key("ssm.inner_size"),
         key("wkv.head_size"));
  }
  if (hp.head_count > kMaxHeads) fail("{} = {} is out of range", key("attention.head_count"), hp.head_count);
  if (!read_hybrid_hparams(md, prefix, hp)) {  // a hybrid gives one count per layer
    hp.head_count_kv = md.find_unsigned(key("attention.head_count_kv")).value_or(hp.head_count);
  }
  if (hp.head_count_kv == 0 || hp.head_count % hp.head_count_kv != 0) {
    fail("{} = {} does not divide {} query heads", key("attention.head_count_kv"),
         hp.head_count_kv, hp.head_count);
  }
  if (!md.find_unsigned(key("attention.key_length")) && hp.embedding_length % hp.head_count != 0) {
    fail("{} = {} is not a multiple of {} = {} (and {} is not given)", key("embedding_length"), hp.embedding_length,
         key("attention.head_count"), hp.head_count, key("attention.key_length"));
  }
  hp.head_dim = md.find_unsigned(key("attention.key_length"))
                    .value_or(hp.embedding_length / hp.head_count);
  hp.value_dim = md.find_unsigned(key("attention.value_length")).value_or(hp.head_dim);

  if (auto n = md.find_unsigned(key("vocab_size"))) {
    hp.vocab_size = *n;
  } else if (const auto* tokens = md.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING)) {
    hp.vocab_size = tokens->length;
  }

  hp.rope_freq_base = md.find_float(key("rope.freq_base")).value_or(10000.0);
  hp.rope_dimension_count = md.find_unsigned(key("rope.dimension_count")).value_or(hp.head_dim);
  // As llama.cpp: the factor under its current key or its old one, and a factor without a type
  // means linear scaling.
  std::optional<double> factor = md.find_float(key("rope.scaling.factor"));
  if (!factor) factor = md.find_float(key("rope.scale_linear"));
  hp.rope_scaling.type = md.find_string(key("rope.scaling.type")).value_or(factor ? "linear" : "none");
  hp.rope_scaling.factor = factor.value_or(1.0);
  hp.rope_scaling.original_context_length =
      md.find_unsigned(key("rope.scaling.original_context_length")).value_or(hp.context_length);
  hp.rope_scaling.attn_factor = md.find_float(key("rope.scaling.attn_factor")).value_or(1.0);
  // llama.cpp reads a factor of 0 as no scaling.
  if (hp.rope_scaling.factor == 0.0) hp.rope_scaling.factor = 1.0;

  if (auto eps = md.find_float(key("attention.layer_norm_rms_epsilon"))) {
    hp.norm_eps = *eps;
  } else if (auto eps_ln = md.find_float(key("attention.layer_norm_epsilon"))) {
    hp.norm_eps = *eps_ln;
  }
  // An architecture may default the window (Gemma 2's files from before the key existed).
  const Architecture* arch = find_architecture(hp.architecture);
  hp.sliding_window = md.find_unsigned(key("attention.sliding_window"))
                          .value_or(arch != nullptr ? arch->features.default_sliding_window : 0);
  read_sliding_window_pattern(md, key("attention.sliding_window_pattern"), hp);
  hp.rope_freq_base_local = md.find_float(key("rope.freq_base_swa")).value_or(0.0);
  hp.final_logit_softcap = md.find_float(key("final_logit_softcapping")).value_or(0.0);
  hp.attention_softcap = md.find_float(key("attn_logit_softcapping")).value_or(0.0);
  hp.expert_count = md.find_unsigned(key("expert_count")).value_or(0);
  hp.expert_used_count = md.find_unsigned(key("expert_used_count")).value_or(0);
  hp.expert_feed_forward_length = md.find_unsigned(key("expert_feed_forward_length")).value_or(0);
  hp.expert_shared_feed_forward_length = md.find_unsigned(key("expert_shared_feed_forward_length")).value_or(0);
  hp.expert_shared_count = md.find_unsigned(key("expert_shared_count")).value_or(0);
  hp.expert_weights_scale = md.find_float(key("expert_weights_scale")).value_or(0.0);
  hp.expert_weights_norm = md.find_bool(key("expert_weights_norm"));
  hp.expert_gating_func = md.find_unsigned(key("expert_gating_func")).value_or(0);
  hp.expert_group_count = md.find_unsigned(key("expert_group_count")).value_or(0);
  hp.expert_group_used_count = md.find_unsigned(key("expert_group_used_count")).value_or(0);
  hp.leading_dense_block_count = md.find_unsigned(key("leading_dense_block_count")).value_or(0);
  hp.q_lora_rank = md.find_unsigned(key("attention.q_lora_rank")).value_or(0);
  hp.kv_lora_rank = md.find_unsigned(key("attention.kv_lora_rank")).value_or(0);
  hp.key_length_mla = md.find_unsigned(key("attention.key_length_mla")).value_or(0);
  hp.value_length_mla = md.find_unsigned(key("attention.value_length_mla")).value_or(0);
  hp.rope_yarn_log_mul = md.find_float(key("rope.scaling.yarn_log_multiplier")).value_or(0.0);
  hp.pooling_type = md.find_unsigned(key("pooling_type"));
  hp.token_type_count = md.find_unsigned("tokenizer.ggml.token_type_count").value_or(2);
  if (hp.attention_free) set_nominal_attention(hp);
  validate_hparams(hp, file);
  return hp;
}

}  // namespace lumen::model
