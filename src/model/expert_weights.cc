#include "model/expert_weights.h"

#include "gguf/file.h"
#include "model/arch/tensor_spec.h"
#include "util/error.h"

namespace lumen::model {

TensorSource expert_tensor_source(const ExpertRange& experts) {
  return [experts](const TensorSpec& spec, const gguf::TensorInfo& info, uint64_t) -> HostTensor {
    using Optional = std::optional<backend::TensorView> LayerWeights::*;
    const auto* slot = std::get_if<Optional>(&spec.slot);
    if (slot == nullptr || (*slot != &LayerWeights::ffn_gate_exps && *slot != &LayerWeights::ffn_up_exps &&
                            *slot != &LayerWeights::ffn_down_exps)) {
      return {info.type, info.dims, info.data};
    }
    if (info.dims.size() != 3 || experts.first + experts.count > info.dims[2]) {
      fail("expert parallelism: experts {}..{} of tensor '{}'", experts.first, experts.first + experts.count,
           info.name);
    }
    const size_t expert_bytes = info.bytes / static_cast<size_t>(info.dims[2]);
    return {info.type,
            {info.dims[0], info.dims[1], experts.count},
            info.data + expert_bytes * static_cast<size_t>(experts.first)};
  };
}

}  // namespace lumen::model
