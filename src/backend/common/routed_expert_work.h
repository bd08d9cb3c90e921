#pragma once
// A routing in host memory (each token's experts and weights, slot by slot) turned into what
// Backend::moe_ffn takes: one ExpertWork per chosen expert, its matrices sliced from the layer's
// 3-D tensors, its tokens in token order, and a shared expert, if the layer has one, in the slot
// after the routed ones with its weight from its gate logit. The CPU's moe_ffn_routed, the CUDA
// backend's host fallback and the model's expert-parallel path all build it so.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend_types.h"
#include "backend/common/expert_router.h"

namespace lumen::backend::common {

class RoutedExpertWork {
 public:
  // experts and weights: n_used per token, n tokens. shared_logits: one per token (empty: the
  // shared expert's weight is 1; ignored without a shared expert). Throws lumen::Error for an
  // expert id outside the tensors. The spans returned stay valid until the next build.
  std::span<const ExpertWork> build(std::span<const int32_t> experts, std::span<const float> weights, int64_t n_used,
                                    const RoutedExperts& matrices, std::span<const float> shared_logits);
  // Places per token the last build filled: n_used, one more with a shared expert.
  int64_t n_slots() const { return n_slots_; }

 private:
  Routing routing_;
  ExpertGroups groups_;
  std::vector<TensorView> matrices_;  // gate, up, down of each group
  std::vector<int32_t> all_rows_, shared_slots_;
  std::vector<float> shared_weights_;
  std::vector<ExpertWork> work_;
  int64_t n_slots_ = 0;
};

}  // namespace lumen::backend::common
