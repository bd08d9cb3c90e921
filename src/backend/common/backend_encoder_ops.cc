// The Backend's public methods of the LayerNorm blocks (layer_norm, gelu_erf, gelu_tanh, activation:
// BackendFeature::LayerNorm) and of an encoder's attention (bidirectional_attention:
// BackendFeature::Encoder). A backend without the feature refuses before reading anything.
#include "backend/backend.h"
#include "backend/common/encoder_ops_checks.h"
#include "backend/common/observed.h"
#include "backend/common/op_checks.h"

namespace lumen::backend {

namespace {

[[noreturn]] void refuse_feature(std::string_view op, BackendFeature feature, std::string_view backend) {
  fail("{} ({}) is not supported on the {} backend yet; use --device cpu", op, backend_feature_name(feature), backend);
}

}  // namespace

void Backend::layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                         TensorView& out) {
  if (!supports(BackendFeature::LayerNorm)) refuse_feature("layer_norm", BackendFeature::LayerNorm, name());
  common::check_layer_norm(x, weight, bias, out);
  OpCall call{OpKind::LayerNorm};
  call.in = {&x, &weight, &bias};
  call.out = {&out};
  call.value = eps;
  observed(call, [&] { do_layer_norm(x, weight, bias, eps, out); });
}

void Backend::do_layer_norm(const TensorView&, const TensorView&, const TensorView&, float, TensorView&) {
  refuse_feature("layer_norm", BackendFeature::LayerNorm, name());
}

void Backend::gelu_erf(TensorView& x) {
  if (!supports(BackendFeature::LayerNorm)) refuse_feature("gelu_erf", BackendFeature::LayerNorm, name());
  common::check_f32(x, x.dims[0], "gelu_erf", "x");
  OpCall call{OpKind::GeluErf};
  call.out = {&x};
  observed(call, [&] { do_gelu_erf(x); });
}

void Backend::do_gelu_erf(TensorView&) { refuse_feature("gelu_erf", BackendFeature::LayerNorm, name()); }

void Backend::gelu_tanh(TensorView& x) {
  if (!supports(BackendFeature::LayerNorm)) refuse_feature("gelu_tanh", BackendFeature::LayerNorm, name());
  common::check_f32(x, x.dims[0], "gelu_tanh", "x");
  OpCall call{OpKind::GeluTanh};
  call.out = {&x};
  observed(call, [&] { do_gelu_tanh(x); });
}

void Backend::do_gelu_tanh(TensorView&) { refuse_feature("gelu_tanh", BackendFeature::LayerNorm, name()); }

void Backend::activation(TensorView& x, Activation kind) {
  if (!supports(BackendFeature::LayerNorm)) refuse_feature("activation", BackendFeature::LayerNorm, name());
  common::check_f32(x, x.dims[0], "activation", "x");
  if (static_cast<uint8_t>(kind) > static_cast<uint8_t>(Activation::Tanh)) {
    fail("activation: no activation number {}", static_cast<int>(kind));
  }
  OpCall call{OpKind::Activation};
  call.out = {&x};
  call.value = static_cast<float>(kind);
  observed(call, [&] { do_activation(x, kind); });
}

void Backend::do_activation(TensorView&, Activation) {
  refuse_feature("activation", BackendFeature::LayerNorm, name());
}

void Backend::bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                      std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                      TensorView& out) {
  if (!supports(BackendFeature::Encoder)) {
    refuse_feature("bidirectional_attention", BackendFeature::Encoder, name());
  }
  common::check_bidirectional_attention(q, k, v, seqs, config, out);
  OpCall call{OpKind::BidirectionalAttention};
  call.in = {&q, &k, &v};
  call.out = {&out};
  call.seqs = seqs;
  call.attention = &config;
  observed(call, [&] { do_bidirectional_attention(q, k, v, seqs, config, out); });
}

void Backend::do_bidirectional_attention(const TensorView&, const TensorView&, const TensorView&,
                                         std::span<const SequenceSlice>, const AttentionConfig&, TensorView&) {
  refuse_feature("bidirectional_attention", BackendFeature::Encoder, name());
}

}  // namespace lumen::backend
