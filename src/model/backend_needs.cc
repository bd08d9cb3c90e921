#include "model/backend_needs.h"

namespace lumen::model {

backend::BackendNeeds model_backend_needs(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp) {
  backend::BackendNeeds needs;
  const BlockFeatures& f = arch.features;
  if (f.ffn == FfnKind::MixtureOfExperts) needs.add(backend::BackendFeature::MoeFfn);
  if (f.attention == AttentionKind::MultiHeadLatent) needs.add(backend::BackendFeature::LatentAttention);
  // RWKV 7's layers need its own op; Mamba 2's (alone or beside attention) the state-space ops.
  if (f.mixer == Mixer::Rwkv7) {
    needs.add(backend::BackendFeature::Rwkv7);
  } else if (f.mixer != Mixer::Attention) {
    needs.add(backend::BackendFeature::StateSpace);
  }
  if (f.encoder) needs.add(backend::BackendFeature::Encoder);
  // A final logit soft cap runs the element-wise activation op, which comes with LayerNorm.
  if (f.encoder || f.layer_norm || resolved_softcaps(arch, hp).final_logits != 0.0f) {
    needs.add(backend::BackendFeature::LayerNorm);
  }
  if (f.alibi_max_bias != 0.0f) needs.add(backend::BackendFeature::Alibi);
  if (f.attention_sinks) needs.add(backend::BackendFeature::AttentionSinks);
  if (f.ffn == FfnKind::MixtureOfExperts &&
      (f.activation == Activation::SwiGluOai || f.expert_gating == ExpertGating::SoftmaxWeight)) {
    needs.add(backend::BackendFeature::BiasedExperts);
  }
  // validate_tensors holds every tensor of the file to the architecture's list, so the file's
  // types are the weights' types.
  for (const gguf::TensorInfo& info : file.tensors()) needs.add_weight_type(info.type);
  if (f.mixer == Mixer::Attention) needs.attention_head_dim = static_cast<int64_t>(hp.head_dim);
  return needs;
}

}  // namespace lumen::model
