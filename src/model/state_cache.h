#pragma once
// Backend memory for the recurrent state of state-space (Mamba 2) and RWKV layers: one
// fixed-size slot per live sequence, beside the paged KV cache. A slot holds, for every recurrent
// layer (a hybrid's attention layers have none), what the architecture keeps there
// (hparams.h: recurrent_state_values_per_layer): Mamba 2's causal convolution's last
// (kernel - 1) inputs and SSM state, or RWKV's two token-shift rows and wkv matrices, whatever
// the sequence's length. Which slot belongs to which
// sequence is decided elsewhere (the engine, kv/state_slots.h); this owns the memory only.
// The memory is the backend's (device memory on a GPU): clearing, copying, saving and restoring
// a slot go through the backend's own ops (get_rows of a slot's layer rows, copy_to_host,
// copy_from_host), so the same code serves every backend.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"

namespace lumen::model {

class StateCache {
 public:
  StateCache(backend::Backend& backend, const HParams& hp, int64_t n_slots);

  // Bytes of one slot, every layer: what one sequence's state costs.
  static size_t bytes_per_slot(const HParams& hp);

  int64_t n_slots() const { return n_slots_; }
  // RWKV 7's views of it: the token-shift row of the time mix (mix 0) or of the channel mix (mix
  // 1), f32 {embedding, 1}, and the wkv matrices (backend::Wkv7Sequence's state).
  backend::TensorView rwkv_shift_row(int64_t slot, uint64_t layer, int mix) const;
  backend::TensorView rwkv_wkv_state(int64_t slot, uint64_t layer) const;
  // Mamba 2's views of it (backend::SsmSequence's conv_window and state).
  backend::TensorView conv_window(int64_t slot, uint64_t layer) const;
  backend::TensorView ssm_state(int64_t slot, uint64_t layer) const;
  // A sequence starts from zeros (its first chunk, or a recompute after preemption).
  void clear(int64_t slot);
  // Forking a sequence (n > 1, beams): dst becomes a copy of src.
  void copy(int64_t src, int64_t dst);
  // A slot's whole state as opaque bytes (slot_bytes() of them), to and from host memory:
  // swapping a preempted sequence's state, and the state prefix cache's snapshots.
  size_t slot_bytes() const { return slot_floats_ * sizeof(float); }
  void read_slot(int64_t slot, void* dst) const;
  void write_slot(int64_t slot, const void* src);
  size_t bytes() const { return static_cast<size_t>(n_slots_) * slot_floats_ * sizeof(float); }

 private:
  float* slot_data(int64_t slot) const;
  float* layer_data(int64_t slot, uint64_t layer) const;
  // Slot `slot` as a matrix of one row per recurrent layer (what get_rows and the host copies
  // take); all slots as one such matrix, slot after slot.
  backend::TensorView slot_rows(int64_t slot) const;
  backend::TensorView all_rows() const;

  backend::Backend& backend_;
  HParams hp_;
  int64_t n_slots_;
  size_t layer_floats_;
  size_t slot_floats_;
  std::vector<int64_t> state_index_;  // per layer: its place in a slot (-1: attention, none)
  std::unique_ptr<backend::Buffer> buffer_;
  std::unique_ptr<backend::Buffer> zero_row_;  // one layer's worth of zeros: clear() copies it
  std::vector<int32_t> row_ids_;               // get_rows' ids (a member: no allocation per call)
};

struct ForwardBatch;

// What every recurrent block (Mamba 2's mixer, RWKV 7's block) checks before it runs a batch:
// one distinct state slot per sequence, and no draft verification (a state cannot be rolled
// back); then it zeroes the slot of each sequence that starts at position 0. `model` names the
// kind of model in the errors ("a state-space model").
void begin_state_batch(const ForwardBatch& batch, const char* model);

}  // namespace lumen::model
