#include "model/rope_config.h"

#include "util/error.h"

namespace lumen::model {

backend::RopeConfig rope_config(const HParams& hp, const Architecture& arch, const float* rope_freqs) {
  backend::RopeConfig rope;
  rope.rope_dims = static_cast<int64_t>(hp.rope_dimension_count);
  rope.neox = arch.features.rope_neox;
  rope.freq_base = hp.rope_freq_base;
  const std::string& type = hp.rope_scaling.type;
  if (type == "linear") {
    rope.scaling = backend::RopeScalingType::Linear;
  } else if (type == "yarn") {
    rope.scaling = backend::RopeScalingType::Yarn;
  } else if (type == "llama3") {
    // rope.scaling.factor here is the factor the divisors were computed with; applying it
    // again as a linear factor would stretch the positions twice.
    if (rope_freqs == nullptr) {
      fail(
          "rope.scaling.type is 'llama3' but the file has no rope_freqs tensor (llama3-style scaling is "
          "stored as per-pair frequency divisors; the low/high frequency factors are not in the metadata)");
    }
  } else if (type != "none") {
    // read_hparams refuses every other type; this guards callers that build HParams themselves.
    fail("rope.scaling.type '{}' is not supported", type);
  }
  if (rope.scaling != backend::RopeScalingType::None) rope.scaling_factor = hp.rope_scaling.factor;
  rope.original_context = static_cast<int64_t>(hp.rope_scaling.original_context_length);
  rope.attn_factor = hp.rope_scaling.attn_factor;
  rope.yarn_truncate = arch.features.yarn_truncate;
  rope.freq_factors = rope_freqs;
  if (hp.rope_yarn_log_mul != 0.0 && type == "yarn") {
    // llama.cpp moves YaRN's magnitude into the attention scale for such files; Lumen does that
    // for latent attention (DeepSeek-V2, model/latent_attention.h), the one architecture it runs
    // whose files carry the key.
    if (arch.features.attention != AttentionKind::MultiHeadLatent) {
      fail("{}.rope.scaling.yarn_log_multiplier is only supported for multi-head latent attention", hp.architecture);
    }
    rope.yarn_magnitude_in_scores = true;
  }
  return rope;
}

backend::RopeConfig local_rope_config(const backend::RopeConfig& global, const HParams& hp, const Architecture& arch) {
  if (!arch.features.per_layer_rope_base) {
    backend::RopeConfig local = global;
    if (arch.features.local_rope_base_from_file && hp.rope_freq_base_local != 0.0) {
      local.freq_base = hp.rope_freq_base_local;
    }
    return local;
  }
  backend::RopeConfig local = global;
  local.freq_base = hp.rope_freq_base_local != 0.0 ? hp.rope_freq_base_local : arch.features.local_rope_base;
  local.scaling = backend::RopeScalingType::None;
  local.scaling_factor = 1.0;
  return local;
}

}  // namespace lumen::model
