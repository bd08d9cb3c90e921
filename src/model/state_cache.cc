#include "model/state_cache.h"

#include <algorithm>

#include "model/forward_batch.h"
#include "util/error.h"

namespace lumen::model {

StateCache::StateCache(backend::Backend& backend, const HParams& hp, int64_t n_slots)
    : backend_(backend),
      hp_(hp),
      n_slots_(n_slots),
      layer_floats_(recurrent_state_values_per_layer(hp)),
      slot_floats_(layer_floats_ * recurrent_layer_count(hp)) {
  if (!has_recurrent_state(hp)) fail("a state cache for a model without recurrent layers");
  if (n_slots < 1) fail("a state cache needs at least one slot (got {})", n_slots);
  // The feature whose ops read and write these slots (model_backend_needs asks the same).
  if (!backend.supports(has_rwkv(hp) ? backend::BackendFeature::Rwkv7 : backend::BackendFeature::StateSpace)) {
    fail("state-space models do not run on the {} backend yet; use --device cpu", backend.name());
  }
  // A hybrid's attention layers keep no state: slot offsets count the recurrent layers only.
  uint64_t ordinal = 0;
  for (uint64_t layer = 0; layer < hp.block_count; ++layer) {
    state_index_.push_back(is_recurrent_layer(hp, layer) ? static_cast<int64_t>(ordinal++) : -1);
  }
  buffer_ = backend.allocate(bytes());  // zero-filled
  zero_row_ = backend.allocate(layer_floats_ * sizeof(float));
}

size_t StateCache::bytes_per_slot(const HParams& hp) {
  return recurrent_state_values_per_layer(hp) * recurrent_layer_count(hp) * sizeof(float);
}

float* StateCache::slot_data(int64_t slot) const {
  if (slot < 0 || slot >= n_slots_) fail("state cache: slot {} is not in [0, {})", slot, n_slots_);
  return static_cast<float*>(buffer_->data()) + static_cast<size_t>(slot) * slot_floats_;
}

float* StateCache::layer_data(int64_t slot, uint64_t layer) const {
  if (layer >= hp_.block_count) fail("state cache: layer {} of {}", layer, hp_.block_count);
  if (state_index_[layer] < 0) fail("state cache: layer {} is an attention layer (no state)", layer);
  return slot_data(slot) + static_cast<size_t>(state_index_[layer]) * layer_floats_;
}

backend::TensorView StateCache::rwkv_shift_row(int64_t slot, uint64_t layer, int mix) const {
  const auto width = static_cast<int64_t>(hp_.embedding_length);
  return backend::f32_matrix(layer_data(slot, layer) + mix * width, width, 1);
}

backend::TensorView StateCache::rwkv_wkv_state(int64_t slot, uint64_t layer) const {
  const auto width = static_cast<int64_t>(hp_.embedding_length), head = static_cast<int64_t>(hp_.wkv_head_size);
  return backend::f32_matrix(layer_data(slot, layer) + 2 * width, head, width);
}

backend::TensorView StateCache::conv_window(int64_t slot, uint64_t layer) const {
  float* data = layer_data(slot, layer);
  return backend::f32_matrix(data, static_cast<int64_t>(ssm_conv_channels(hp_)),
                             static_cast<int64_t>(hp_.ssm_conv_kernel - 1));
}

backend::TensorView StateCache::ssm_state(int64_t slot, uint64_t layer) const {
  float* data = layer_data(slot, layer) + (hp_.ssm_conv_kernel - 1) * ssm_conv_channels(hp_);
  return backend::f32_matrix(data, static_cast<int64_t>(hp_.ssm_state_size), static_cast<int64_t>(hp_.ssm_inner_size));
}

backend::TensorView StateCache::slot_rows(int64_t slot) const {
  return backend::f32_matrix(slot_data(slot), static_cast<int64_t>(layer_floats_),
                             static_cast<int64_t>(slot_floats_ / layer_floats_));
}

backend::TensorView StateCache::all_rows() const {
  return backend::f32_matrix(static_cast<float*>(buffer_->data()), static_cast<int64_t>(layer_floats_),
                             n_slots_ * static_cast<int64_t>(slot_floats_ / layer_floats_));
}

void StateCache::clear(int64_t slot) {
  // Every layer row of the slot from the one row of zeros.
  backend::TensorView into = slot_rows(slot);
  row_ids_.assign(static_cast<size_t>(into.rows()), 0);
  const backend::TensorView zeros =
      backend::f32_matrix(static_cast<float*>(zero_row_->data()), static_cast<int64_t>(layer_floats_), 1);
  backend_.get_rows(zeros, row_ids_, into);
}

void StateCache::read_slot(int64_t slot, void* dst) const {
  backend_.copy_to_host(slot_rows(slot), static_cast<float*>(dst));
}

void StateCache::write_slot(int64_t slot, const void* src) {
  backend::TensorView into = slot_rows(slot);
  backend_.copy_from_host(static_cast<const float*>(src), into);
}

void StateCache::copy(int64_t src, int64_t dst) {
  if (src == dst) return;
  backend::TensorView into = slot_rows(dst);
  const auto layers = static_cast<int32_t>(into.rows());
  row_ids_.resize(static_cast<size_t>(layers));
  for (int32_t l = 0; l < layers; ++l) row_ids_[static_cast<size_t>(l)] = static_cast<int32_t>(src) * layers + l;
  backend_.get_rows(all_rows(), row_ids_, into);
}

void begin_state_batch(const ForwardBatch& batch, const char* model) {
  if (batch.states == nullptr) fail("forward: {}'s batch carries no state cache", model);
  // Attention-free layers: one slice per sequence.
  if (batch.state_slots.size() != batch.sequences.size()) {
    fail("forward: {} state slots for {} sequences", batch.state_slots.size(), batch.sequences.size());
  }
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const backend::SequenceSlice& slice = batch.sequences[i];
    if (!slice.visible.empty()) {
      fail("{} cannot verify draft tokens or token trees (its state cannot be rolled back)", model);
    }
    const int32_t slot = batch.state_slots[i];
    for (size_t j = 0; j < i; ++j) {
      if (batch.state_slots[j] == slot) fail("forward: two sequences of one batch share state slot {}", slot);
    }
    if (slice.start_pos == 0) batch.states->clear(slot);
  }
}

}  // namespace lumen::model
