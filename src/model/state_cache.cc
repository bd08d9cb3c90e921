#include "model/state_cache.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::model {

StateCache::StateCache(backend::Backend& backend, const HParams& hp, int64_t n_slots)
    : hp_(hp),
      n_slots_(n_slots),
      layer_floats_(ssm_state_values_per_layer(hp)),
      slot_floats_(layer_floats_ * hp.block_count) {
  if (!has_ssm(hp)) fail("a state cache for a model without state-space layers");
  if (n_slots < 1) fail("a state cache needs at least one slot (got {})", n_slots);
  if (!backend.supports(backend::BackendFeature::StateSpace)) {
    fail("state-space models do not run on the {} backend yet; use --device cpu", backend.name());
  }
  buffer_ = backend.allocate(bytes());  // zero-filled
}

size_t StateCache::bytes_per_slot(const HParams& hp) {
  return ssm_state_values_per_layer(hp) * hp.block_count * sizeof(float);
}

float* StateCache::slot_data(int64_t slot) const {
  if (slot < 0 || slot >= n_slots_) fail("state cache: slot {} is not in [0, {})", slot, n_slots_);
  return static_cast<float*>(buffer_->data()) + static_cast<size_t>(slot) * slot_floats_;
}

backend::TensorView StateCache::conv_window(int64_t slot, uint64_t layer) const {
  if (layer >= hp_.block_count) fail("state cache: layer {} of {}", layer, hp_.block_count);
  float* data = slot_data(slot) + layer * layer_floats_;
  return backend::f32_matrix(data, static_cast<int64_t>(ssm_conv_channels(hp_)),
                             static_cast<int64_t>(hp_.ssm_conv_kernel - 1));
}

backend::TensorView StateCache::ssm_state(int64_t slot, uint64_t layer) const {
  if (layer >= hp_.block_count) fail("state cache: layer {} of {}", layer, hp_.block_count);
  float* data = slot_data(slot) + layer * layer_floats_ + (hp_.ssm_conv_kernel - 1) * ssm_conv_channels(hp_);
  return backend::f32_matrix(data, static_cast<int64_t>(hp_.ssm_state_size), static_cast<int64_t>(hp_.ssm_inner_size));
}

void StateCache::clear(int64_t slot) { std::fill_n(slot_data(slot), slot_floats_, 0.0f); }

void StateCache::copy(int64_t src, int64_t dst) {
  if (src == dst) return;
  std::copy_n(slot_data(src), slot_floats_, slot_data(dst));
}

}  // namespace lumen::model
