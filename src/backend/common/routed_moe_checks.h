#pragma once
// The argument checks of route_experts and moe_ffn_routed (Backend), run in front of every
// backend. Each throws lumen::Error naming the op and the operand.
#include "backend/backend_types.h"

namespace lumen::backend::common {

// logits f32 {n_experts, n}; experts i32 and weights f32, both {n_used, n} and contiguous;
// selection_bias and counts f32 {n_experts} where given; a configuration
// check_router_config accepts; no output overlapping another operand.
void check_route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                         const TensorView& experts, const TensorView& weights, const TensorView* counts);
// x and out f32 {in, n}, out apart from every input; experts i32 and weights f32 {n_used, n},
// contiguous; gate and up {in, ff, n_experts}, down {ff, in, n_experts}; a shared expert whole
// (gate and up {in, ff_shared}, down {ff_shared, in}) or absent, and its logit f32 {1, n} only
// with it.
void check_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                          const RoutedExperts& matrices, const TensorView& out);

}  // namespace lumen::backend::common
