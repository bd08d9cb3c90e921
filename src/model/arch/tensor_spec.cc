#include "model/arch/tensor_spec.h"

#include <fmt/format.h>

namespace lumen::model {

int64_t dim_value(Dim dim, const HParams& hp) {
  switch (dim) {
    case Dim::Embedding: return static_cast<int64_t>(hp.embedding_length);
    case Dim::Vocab: return static_cast<int64_t>(hp.vocab_size);
    case Dim::QWidth: return static_cast<int64_t>(hp.head_dim * hp.head_count);
    case Dim::KvWidth: return static_cast<int64_t>(hp.head_dim * hp.head_count_kv);
    case Dim::FeedForward: return static_cast<int64_t>(hp.feed_forward_length);
    case Dim::HeadDim: return static_cast<int64_t>(hp.head_dim);
    case Dim::RopePairs: return static_cast<int64_t>(hp.rope_dimension_count / 2);
    case Dim::Experts: return static_cast<int64_t>(hp.expert_count);
    case Dim::ExpertFeedForward: return static_cast<int64_t>(expert_ffn_width(hp));
    case Dim::SharedFeedForward: return static_cast<int64_t>(shared_expert_ffn_width(hp));
    case Dim::SharedExpertsFeedForward: return static_cast<int64_t>(expert_ffn_width(hp) * hp.expert_shared_count);
    case Dim::Heads: return static_cast<int64_t>(hp.head_count);
    case Dim::QLoraRank: return static_cast<int64_t>(hp.q_lora_rank);
    case Dim::KvLoraRank: return static_cast<int64_t>(hp.kv_lora_rank);
    case Dim::LatentKeyWidth: return static_cast<int64_t>(hp.kv_lora_rank + hp.rope_dimension_count);
    case Dim::MlaQWidth: return static_cast<int64_t>(hp.head_count * hp.key_length_mla);
    case Dim::MlaNopeDim: return static_cast<int64_t>(hp.key_length_mla - hp.rope_dimension_count);
    case Dim::MlaValueDim: return static_cast<int64_t>(hp.value_length_mla);
    case Dim::MlaOutWidth: return static_cast<int64_t>(hp.head_count * hp.value_length_mla);
    case Dim::Positions: return static_cast<int64_t>(hp.context_length);
    case Dim::TokenTypes: return static_cast<int64_t>(hp.token_type_count);
    case Dim::QkvWidth: return static_cast<int64_t>(hp.head_dim * (hp.head_count + 2 * hp.head_count_kv));
    case Dim::GateUpWidth: return static_cast<int64_t>(2 * hp.feed_forward_length);
    case Dim::One: return 1;
    case Dim::RwkvDecayLora: return static_cast<int64_t>(hp.rwkv_decay_lora);
    case Dim::RwkvIclrLora: return static_cast<int64_t>(hp.rwkv_iclr_lora);
    case Dim::RwkvValueLora: return static_cast<int64_t>(hp.rwkv_value_lora);
    case Dim::RwkvGateLora: return static_cast<int64_t>(hp.rwkv_gate_lora);
    case Dim::RwkvMixes: return 6;
    case Dim::SsmInProj: return static_cast<int64_t>(ssm_in_proj_width(hp));
    case Dim::SsmConvKernel: return static_cast<int64_t>(hp.ssm_conv_kernel);
    case Dim::SsmConvChannels: return static_cast<int64_t>(ssm_conv_channels(hp));
    case Dim::SsmInner: return static_cast<int64_t>(hp.ssm_inner_size);
    case Dim::SsmHeads: return static_cast<int64_t>(hp.ssm_head_count);
    case Dim::SsmGroups: return static_cast<int64_t>(hp.ssm_group_count);
    case Dim::SsmGroupWidth:
      return hp.ssm_group_count == 0 ? 0 : static_cast<int64_t>(hp.ssm_inner_size / hp.ssm_group_count);
  }
  return 0;
}

std::string TensorSpec::file_name(uint64_t layer) const {
  return per_layer() ? fmt::format("blk.{}.{}", layer, name) : name;
}

std::vector<int64_t> TensorSpec::dims(const HParams& hp) const {
  std::vector<int64_t> out;
  for (Dim dim : shape) out.push_back(dim_value(dim, hp));
  return out;
}

bool TensorSpec::allows(tensor::DType type) const {
  if (role != TensorRole::Matrix && role != TensorRole::Router) return type == tensor::DType::F32;
  // Q8_K and Q8_1 are the kernels' activation formats, not weight formats.
  return tensor::has_reference_kernels(type) && type != tensor::DType::Q8_K && type != tensor::DType::Q8_1;
}

TensorSpec model_tensor(std::string name, std::vector<Dim> shape, TensorRole role, Presence presence, TensorSlot slot) {
  return {std::move(name), std::move(shape), role, presence, slot};
}

TensorSpec layer_tensor(std::string name, std::vector<Dim> shape, TensorRole role, TensorSlot slot) {
  return {std::move(name), std::move(shape), role, Presence::Required, slot};
}

TensorSpec layer_tensor_if(bool (*in_layer)(const HParams&, uint64_t), std::string name, std::vector<Dim> shape,
                           TensorRole role, TensorSlot slot, Presence presence) {
  TensorSpec spec{std::move(name), std::move(shape), role, presence, slot};
  spec.in_layer = in_layer;
  return spec;
}

}  // namespace lumen::model
