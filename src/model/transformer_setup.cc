// How a Transformer is built (transformer.h): which of the file's weights this process binds
// (all, a tensor-parallel shard, a pipeline stage's layers, an expert share, or a split over two
// backends), the refusals of combinations that do not run, and the attention and rope setup
// from the hyperparameters. The forward pass is in transformer.cc.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dist/collectives.h"
#include "model/backend_needs.h"
#include "model/expert_partition.h"
#include "model/expert_weights.h"
#include "model/rope_config.h"
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// The quantization block (in values) of the down projection's columns, the unit the FFN is
// split in: the largest over the layers, whose types may differ (Q4_K_M mixes Q4_K and Q6_K).
int64_t ffn_split_unit(const gguf::GgufFile& file, uint64_t layers) {
  int64_t unit = 1;
  for (uint64_t layer = 0; layer < layers; ++layer) {
    if (const gguf::TensorInfo* info = file.find_tensor(fmt::format("blk.{}.ffn_down.weight", layer))) {
      unit = std::max(unit, tensor::dtype_info(info->type).block_elements);
    }
  }
  return unit;
}

}  // namespace

Transformer::Transformer(backend::Backend& backend, const gguf::GgufFile& file, const HParams& hp,
                         const TensorShard& shard, const PipelineStage& stage, const ExpertShard& experts,
                         const ContextShare& context, const BackendSplit& split)
    : backend_(backend),
      hp_(hp),
      arch_(architecture_for(hp)),
      shard_(shard),
      stage_(stage),
      experts_(experts),
      context_(context) {
  if (hp_.vocab_size == 0) fail("model has no vocabulary size");
  require_supported_features(arch_, hp_);
  // Before any weight is uploaded: a model the backend cannot run is refused here, with all it
  // lacks in one message, never by an op inside a step.
  backend_.require(model_backend_needs(file, arch_, hp_), fmt::format("the {} model", hp_.architecture));
  layers_ = {0, hp_.block_count};
  if (stage_.count > 1) {
    if (stage_.comm == nullptr) fail("pipeline parallelism without collectives to pass activations through");
    if (backend_.name() != "cpu") fail("pipeline parallelism runs on the CPU backend only (not {})", backend_.name());
    if (stage_.layers.first >= stage_.layers.end || stage_.layers.end > hp_.block_count) {
      fail("pipeline stage {}: layers {}..{} of a model of {}", stage_.index, stage_.layers.first, stage_.layers.end,
           hp_.block_count);
    }
    layers_ = stage_.layers;
  } else {
    stage_ = {};
  }
  if (arch_.features.encoder && (shard_.size > 1 || stage_.count > 1)) {
    fail("the {} architecture (an encoder) runs in one process only for now", hp_.architecture);
  }
  if (arch_.features.layer_norm && (shard_.size > 1 || stage_.count > 1)) {
    fail("the {} architecture (LayerNorm blocks) runs in one process only for now", hp_.architecture);
  }
  if (arch_.features.mixer != Mixer::Attention && (shard_.size > 1 || stage_.count > 1)) {
    fail("the {} architecture (state-space layers) runs in one process only for now", hp_.architecture);
  }
  if (context_.size > 1) {
    if (experts_.comm != nullptr) {
      fail("context parallelism does not combine with expert parallelism (--expert-parallel-size) yet");
    }
    if (split.active()) {
      fail("context parallelism does not combine with a model split over two backends (--n-gpu-layers) yet");
    }
    require_context_parallel();
  } else {
    context_ = {};
  }
  if (split.active() && experts_.comm != nullptr) {
    fail("a model split over two backends (--n-gpu-layers) does not combine with expert parallelism");
  }
  if (experts_.comm != nullptr) {
    check_expert_parallel(hp_, experts_.size);
    if (arch_.features.ffn != FfnKind::MixtureOfExperts) {
      fail("expert parallelism needs a mixture-of-experts model; the {} architecture has none", hp_.architecture);
    }
    if (shard_.size > 1 || stage_.count > 1) {
      fail("expert parallelism does not combine with tensor or pipeline parallelism yet");
    }
    if (arch_.features.activation == Activation::SwiGluOai) {
      fail("expert parallelism does not carry gpt-oss's expert biases yet");
    }
    if (backend_.name() != "cpu") fail("expert parallelism runs on the CPU backend only (not {})", backend_.name());
    if (experts_.data_parallel_attention && arch_.features.mixer != Mixer::Attention) {
      // Recurrent states live in rank 0's state cache, which the other ranks' steps do not carry.
      fail("--data-parallel-attention needs an attention-only model ({} has state-space layers)", hp_.architecture);
    }
    weights_ = bind_weights(
        file, arch_, hp_, backend_,
        expert_tensor_source(expert_range(static_cast<int64_t>(hp_.expert_count), experts_.rank, experts_.size)));
    init();
    return;
  }
  if (split.active()) {
    if (shard_.size > 1 || stage_.count > 1) fail("a model split over two backends runs in one process only");
    shard_ = {};
    bind_split(file, split);
    return;
  }
  if (shard_.size <= 1) {
    shard_ = {};
    weights_ = bind_weights(file, arch_, hp_, backend_);
    init();
    return;
  }
  if (shard_.comm == nullptr) fail("tensor parallelism without collectives to reduce over");
  if (backend_.name() != "cpu") fail("tensor parallelism runs on the CPU backend only (not {})", backend_.name());
  // A fused matrix's shard would need its parts' rows, not a run of them (tensor_shard.cc).
  const bool fused = std::any_of(arch_.tensors.begin(), arch_.tensors.end(), [](const TensorSpec& t) {
    return t.slot == TensorSlot(&LayerWeights::wqkv) || t.slot == TensorSlot(&LayerWeights::ffn_gate_up);
  });
  if (arch_.features.ffn != FfnKind::Dense || arch_.features.attention != AttentionKind::Grouped ||
      arch_.features.qk_norm_full_width || arch_.features.layer_norm || arch_.features.alibi_max_bias != 0.0f ||
      fused) {
    fail(
        "tensor parallelism is not supported for the {} architecture yet (dense grouped-query attention models "
        "only: no mixture of experts, latent attention, full-width QK norm, LayerNorm blocks, ALiBi or fused "
        "matrices)",
        hp_.architecture);
  }
  const ShardRanges ranges = shard_ranges(hp_, ffn_split_unit(file, hp_.block_count), shard_.rank, shard_.size);
  auto bytes = std::make_shared<ShardBytes>();
  weights_ = bind_weights(file, arch_, hp_, backend_, shard_tensor_source(hp_, ranges, layers_, *bytes));
  weights_.shard_bytes = std::move(bytes);
  init();  // with the whole model's hyperparameters (Gemma's query scale reads its head count)
  hp_ = shard_hparams(hp_, ranges);
  attention_.n_heads = ranges.q_heads;
  attention_.n_kv_heads = ranges.kv_heads;
}

Transformer::Transformer(const Transformer& target, uint64_t n_layers)
    : backend_(target.backend_), hp_(target.hp_), arch_(target.arch_) {
  if (target.shard_.size > 1 || target.stage_.count > 1 || target.experts_.comm != nullptr) {
    fail(
        "a layer-skip draft of a model spread over processes (tensor, pipeline or expert parallelism) is not "
        "supported");
  }
  if (target.offload_) fail("a layer-skip draft of a model split over two backends (--n-gpu-layers) is not supported");
  if (n_layers < 1 || n_layers >= target.hp_.block_count) {
    fail("a layer-skip draft takes 1 to {} of the model's {} layers (got {})", target.hp_.block_count - 1,
         target.hp_.block_count, n_layers);
  }
  hp_.block_count = n_layers;
  context_length_ = target.context_length_;  // the same rope factors as the target
  // Per-layer hyperparameters keep their leading entries: layer i of the draft is layer i.
  if (!hp_.sliding_window_layers.empty()) hp_.sliding_window_layers.resize(n_layers);
  if (!hp_.ssm_layers.empty()) hp_.ssm_layers.resize(n_layers);
  hp_.leading_dense_block_count = std::min(hp_.leading_dense_block_count, n_layers);
  weights_ = target.weights_;
  weights_.layers.resize(n_layers);
  layers_ = {0, n_layers};
  init();
}

kv::KvLayout Transformer::kv_layout(bool free_out_of_window) const {
  kv::KvLayout layout = kv::make_kv_layout(layer_window_, free_out_of_window);
  if (is_hybrid(hp_)) layout = kv::attention_kv_layout(layout, hp_.ssm_layers);  // no pipeline stages
  if (stage_.count <= 1) return layout;
  return kv::stage_kv_layout(layout, static_cast<int>(layers_.first), static_cast<int>(layers_.end));
}

void Transformer::set_context_length(int64_t tokens) {
  context_length_ = tokens;
  if (offload_) offload_->set_context_length(tokens);
  init_rope();
  // The other processes' parts of the model are not told: they would rotate with the short set.
  if (long_rope_ && (stage_.count > 1 || shard_.size > 1 || experts_.size > 1 || context_.size > 1)) {
    fail(
        "a context of {} tokens needs this model's long LongRoPE factors, which Lumen does not pass to the other "
        "processes of a parallel run yet: use a context of at most {} tokens (--max-model-len)",
        tokens, hp_.rope_scaling.original_context_length);
  }
}

void Transformer::init_rope() {
  std::optional<backend::TensorView> factors = weights_.rope_freqs;
  // llama.cpp: the long set once a sequence may pass the original context (n_ctx_orig_yarn).
  long_rope_ = context_length_ > static_cast<int64_t>(hp_.rope_scaling.original_context_length);
  if (weights_.rope_factors_long || weights_.rope_factors_short) {
    factors = long_rope_ ? weights_.rope_factors_long : weights_.rope_factors_short;
  } else {
    long_rope_ = false;
  }
  rope_ = rope_config(hp_, arch_, factors ? static_cast<const float*>(factors->data) : nullptr);
  rope_local_ = local_rope_config(rope_, hp_, arch_);
}

void Transformer::init() {
  init_rope();
  attention_.n_heads = static_cast<int64_t>(hp_.head_count);
  attention_.n_kv_heads = static_cast<int64_t>(hp_.head_count_kv);
  attention_.head_dim = static_cast<int64_t>(hp_.head_dim);
  if (arch_.features.query_scale != nullptr) {
    // Scaled queries, then unscaled scores: the order llama.cpp computes Gemma in, which decides
    // the rounding when the queries are rounded to f16 for the product with an f16 K cache.
    query_scale_ = static_cast<float>(arch_.features.query_scale(hp_));
    attention_.scale = 1.0f;
  } else {
    attention_.scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim));
  }
  const Softcaps caps = resolved_softcaps(arch_, hp_);
  attention_.softcap = caps.attention;
  logit_softcap_ = caps.final_logits;
  if (arch_.features.granite_multipliers) {
    if (hp_.attention_scale != 0.0) attention_.scale = static_cast<float>(hp_.attention_scale);
    if (hp_.embedding_scale != 0.0) embedding_scale_ = static_cast<float>(hp_.embedding_scale);
    if (hp_.residual_scale != 0.0) residual_scale_ = static_cast<float>(hp_.residual_scale);
    if (hp_.logit_scale != 0.0) logit_divisor_ = static_cast<float>(hp_.logit_scale);
    rope_enabled_ = hp_.rope_enabled;
  }
  if (arch_.features.alibi_max_bias != 0.0f) {  // ALiBi positions instead of rope
    attention_.alibi_max_bias = arch_.features.alibi_max_bias;
    rope_enabled_ = false;
  }
  split_fused_matrices();
  layer_window_ = layer_sliding_windows(arch_, hp_);
  if (arch_.features.ffn == FfnKind::MixtureOfExperts) {
    moe_ = std::make_unique<MoeFfn>(backend_, hp_, arch_.features, experts_);
  }
  if (arch_.features.attention == AttentionKind::MultiHeadLatent) {
    latent_ = std::make_unique<LatentAttention>(backend_, hp_, rope_);
  }
  if (arch_.features.mixer == Mixer::Mamba2 || arch_.features.mixer == Mixer::HybridMamba2) {
    mamba2_ = std::make_unique<Mamba2Mixer>(backend_, hp_);
  }
  if (arch_.features.mixer == Mixer::Rwkv7) rwkv7_ = std::make_unique<Rwkv7Block>(backend_, hp_);
}

}  // namespace lumen::model
