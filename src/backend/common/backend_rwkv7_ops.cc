// The Backend's public methods of RWKV 7's element-wise ops (BackendFeature::Rwkv7, beside
// rwkv_wkv7 in backend.cc): checks in front of every backend (rwkv7_checks.h), the observers,
// the backend's do_*. A backend without the feature refuses before reading anything.
#include "backend/backend.h"
#include "backend/common/observed.h"
#include "backend/common/op_checks.h"
#include "backend/common/rwkv7_checks.h"

namespace lumen::backend {

namespace {

[[noreturn]] void refuse_rwkv7(std::string_view op, std::string_view backend) {
  fail("{} (RWKV 7's element-wise work) is not supported on the {} backend yet; use --device cpu", op, backend);
}

}  // namespace

void Backend::rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps,
                         int64_t group, TensorView& out) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_norm", name());
  common::check_rwkv7_norm(x, weight, bias, group, out);
  OpCall call{OpKind::Rwkv7Norm};
  call.in = {&x, &weight, &bias};
  call.out = {&out};
  call.value = static_cast<float>(eps);
  call.numbers = {group, 0};
  observed(call, [&] { do_rwkv7_norm(x, weight, bias, eps, group, out); });
}

void Backend::rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                                TensorView& out) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_token_shift", name());
  common::check_rwkv7_token_shift(x, seqs, mixes, out);
  OpCall call{OpKind::Rwkv7TokenShift};
  call.in = {&x, &mixes};
  call.out = {&out};
  call.shift_seqs = seqs;
  observed(call, [&] { do_rwkv7_token_shift(x, seqs, mixes, out); });
}

void Backend::rwkv7_activation(TensorView& x, Rwkv7Activation f) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_activation", name());
  common::check_f32(x, x.dims[0], "rwkv7_activation", "x");
  OpCall call{OpKind::Rwkv7Activation};
  call.out = {&x};
  call.rwkv7_activation = f;
  observed(call, [&] { do_rwkv7_activation(x, f); });
}

void Backend::rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                                   const TensorView& v0) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_value_residual", name());
  common::check_rwkv7_value_residual(v, first, mix, v0);
  OpCall call{OpKind::Rwkv7ValueResidual};
  call.in = {&first, &mix, &v0};
  call.out = {&v};
  observed(call, [&] { do_rwkv7_value_residual(v, first, mix, v0); });
}

void Backend::rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_keys", name());
  common::check_rwkv7_keys(rows, weights, head_size);
  OpCall call{OpKind::Rwkv7Keys};
  call.in = {&weights.w0, &weights.a0, &weights.k_k, &weights.k_a};
  call.out = {&rows.kk, &rows.b};
  call.rwkv7_keys = &rows;
  call.numbers = {head_size, 0};
  observed(call, [&] { do_rwkv7_keys(rows, weights, head_size); });
}

void Backend::rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                               const TensorView& g, const TensorView& r_k, int64_t head_size) {
  if (!supports(BackendFeature::Rwkv7)) refuse_rwkv7("rwkv7_bonus_gate", name());
  common::check_rwkv7_bonus_gate(out, r, k, v, g, r_k, head_size);
  OpCall call{OpKind::Rwkv7BonusGate};
  call.in = {&r, &k, &v, &g, &r_k};
  call.out = {&out};
  call.numbers = {head_size, 0};
  observed(call, [&] { do_rwkv7_bonus_gate(out, r, k, v, g, r_k, head_size); });
}

void Backend::do_rwkv7_norm(const TensorView&, const TensorView&, const TensorView&, double, int64_t, TensorView&) {
  refuse_rwkv7("rwkv7_norm", name());
}
void Backend::do_rwkv7_token_shift(const TensorView&, std::span<const TokenShiftSequence>, const TensorView&,
                                   TensorView&) {
  refuse_rwkv7("rwkv7_token_shift", name());
}
void Backend::do_rwkv7_activation(TensorView&, Rwkv7Activation) { refuse_rwkv7("rwkv7_activation", name()); }
void Backend::do_rwkv7_value_residual(TensorView&, const TensorView&, const TensorView&, const TensorView&) {
  refuse_rwkv7("rwkv7_value_residual", name());
}
void Backend::do_rwkv7_keys(Rwkv7KeyRows&, const Rwkv7KeyWeights&, int64_t) { refuse_rwkv7("rwkv7_keys", name()); }
void Backend::do_rwkv7_bonus_gate(TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                  const TensorView&, const TensorView&, int64_t) {
  refuse_rwkv7("rwkv7_bonus_gate", name());
}

}  // namespace lumen::backend
