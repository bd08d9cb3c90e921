// The CPU's route_experts and moe_ffn_routed: its memory is the host's, so the routing is
// common::route_token row by row and the experts run as moe_ffn runs them, grouped by expert.
#include <span>

#include "backend/common/expert_router.h"
#include "backend/cpu/cpu_backend.h"

namespace lumen::backend {

void CpuBackend::do_route_experts(const TensorView& logits, const TensorView* selection_bias,
                                  const RouterConfig& config, TensorView& experts, TensorView& weights,
                                  TensorView* counts) {
  router_probs_.resize(static_cast<size_t>(config.n_experts));
  const float* bias = selection_bias != nullptr ? static_cast<const float*>(selection_bias->data) : nullptr;
  auto* ids = static_cast<int32_t*>(experts.data);
  auto* w = static_cast<float*>(weights.data);
  const int64_t k = config.n_used;
  for (int64_t t = 0; t < logits.rows(); ++t) {
    common::route_token(logits.row<const float>(t), config, bias, router_probs_.data(), ids + t * k, w + t * k);
    if (counts != nullptr) {
      for (int64_t s = 0; s < k; ++s) static_cast<float*>(counts->data)[ids[t * k + s]] += 1.0f;
    }
  }
}

void CpuBackend::do_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                                   const RoutedExperts& matrices, Glu glu, TensorView& out) {
  const int64_t k = experts.dims[0];
  const auto entries = static_cast<size_t>(experts.elements());
  std::span<const float> shared_logits;
  if (matrices.shared_logit != nullptr) {
    shared_logits = {static_cast<const float*>(matrices.shared_logit->data), static_cast<size_t>(x.rows())};
  }
  const std::span<const ExpertWork> work =
      routed_work_.build({static_cast<const int32_t*>(experts.data), entries},
                         {static_cast<const float*>(weights.data), entries}, k, matrices, shared_logits);
  do_moe_ffn(x, work, routed_work_.n_slots(), glu, out);
}

}  // namespace lumen::backend
