#pragma once
// One engine step as rank 0 of a model spread over processes (tensor and pipeline parallelism,
// issue 21) sends it to the other ranks: every change to the KV cache since the last step (block
// zeroing, swaps, copy-on-write copies, key shifts, a token tree's moved positions), in the order
// rank 0 made them, then the step's forward pass. The other ranks make the same changes to their
// own heads' and layers' blocks and run the same forward pass, whose all-reduces and stage-to-
// stage messages meet rank 0's. Block numbers, swap slots and positions mean the same on every
// rank: each holds the same blocks, only fewer heads or layers in each.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/swap_space.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace lumen::engine {

class ShardStepWriter {
 public:
  void zero_block(int64_t block);
  void swap_out(int64_t block, int32_t slot);
  void copy_block(int64_t src, int64_t dst);
  void swap_in(int64_t block, int32_t slot);
  void shift_keys(std::span<const int32_t> blocks, int32_t delta);
  void copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot);
  // The forward pass ends the step (its logit rows too: a pipeline's last stage sends their
  // hidden states to rank 0, the only rank that computes logits).
  void forward(const model::ForwardBatch& batch);

  bool empty() const { return bytes_.empty(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  void clear() { bytes_.clear(); }

 private:
  template <typename T>
  void put(T value);
  template <typename T>
  void put_span(std::span<const T> values);
  std::vector<std::byte> bytes_;
};

// What a rank other than 0 applies a step to: its shard of the model, its KV cache and its swap
// space (null when the engine does not swap).
struct ShardTarget {
  model::Transformer& transformer;
  model::KvCache& cache;
  SwapSpace* swap = nullptr;
};

// Applies the ops of `step` in order. Throws lumen::Error for a message that does not decode
// (and for what the ops themselves throw: the same checks rank 0 ran on the same data).
void apply_shard_step(std::span<const std::byte> step, ShardTarget& target);

}  // namespace lumen::engine
