// The Backend's public methods of a mixture-of-experts layer: moe_ffn (the experts over a routing
// given on the host) and the two declared ops that keep the routing where the logits are
// (route_experts, moe_ffn_routed).
#include "backend/backend.h"
#include "backend/common/observed.h"
#include "backend/common/op_checks.h"
#include "backend/common/routed_moe_checks.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// gpt-oss's experts (biases, the clamped SwiGLU) need BackendFeature::BiasedExperts.
bool biased(std::span<const ExpertWork> experts, Backend::Glu glu) {
  if (glu == Glu::SwigluOai) return true;
  for (const ExpertWork& e : experts) {
    if (e.gate_bias != nullptr || e.up_bias != nullptr || e.down_bias != nullptr) return true;
  }
  return false;
}

}  // namespace

void Backend::refuse_unless_biased_experts(std::string_view op) const {
  if (!supports(BackendFeature::BiasedExperts)) {
    fail("{}: the {} backend does not run {}", op, name(), backend_feature_name(BackendFeature::BiasedExperts));
  }
}

void Backend::moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                      TensorView& out) {
  common::check_moe_ffn(x, experts, out);
  if (biased(experts, glu)) refuse_unless_biased_experts("moe_ffn");
  OpCall call{OpKind::MoeFfn};
  call.in = {&x};
  call.out = {&out};
  call.experts = experts;
  call.numbers = {n_slots, 0};
  call.glu = glu;
  observed(call, [&] { do_moe_ffn(x, experts, n_slots, glu, out); });
}

void Backend::do_moe_ffn(const TensorView&, std::span<const ExpertWork>, int64_t, Glu, TensorView&) {
  fail("moe_ffn (a mixture-of-experts FFN) is not supported on the {} backend yet", name());
}

void Backend::route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                            TensorView& experts, TensorView& weights, TensorView* counts) {
  require_op(OpKind::RouteExperts);
  common::check_route_experts(logits, selection_bias, config, experts, weights, counts);
  if (config.gating == ExpertGating::SoftmaxWeight) refuse_unless_biased_experts("route_experts");
  OpCall call{OpKind::RouteExperts};
  call.in = {&logits, selection_bias};
  call.out = {&experts, &weights, counts};
  call.router = &config;
  observed(call, [&] { do_route_experts(logits, selection_bias, config, experts, weights, counts); });
}

void Backend::do_route_experts(const TensorView&, const TensorView*, const RouterConfig&, TensorView&, TensorView&,
                               TensorView*) {
  refuse_op(OpKind::RouteExperts);
}

void Backend::moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                             const RoutedExperts& matrices, Glu glu, TensorView& out) {
  require_op(OpKind::MoeFfnRouted);
  common::check_moe_ffn_routed(x, experts, weights, matrices, out);
  if (glu == Glu::SwigluOai || matrices.gate_bias != nullptr) refuse_unless_biased_experts("moe_ffn_routed");
  OpCall call{OpKind::MoeFfnRouted};
  call.in = {&x, &experts, &weights};
  call.out = {&out};
  call.routed = &matrices;
  call.glu = glu;
  observed(call, [&] { do_moe_ffn_routed(x, experts, weights, matrices, glu, out); });
}

void Backend::do_moe_ffn_routed(const TensorView&, const TensorView&, const TensorView&, const RoutedExperts&, Glu,
                                TensorView&) {
  refuse_op(OpKind::MoeFfnRouted);
}

}  // namespace lumen::backend
