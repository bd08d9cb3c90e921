#pragma once
// The forward pass alone, for one sequence: prefill tokens in chunks, then decode token by
// token, with no sampling, scheduling or paging policy around it. `lumen bench latency` times
// this (as llama-bench times llama.cpp's), and tests use it as the plain reference the batched
// engine must agree with. Every user-facing path generates through lumen::Engine instead.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/loaded_model.h"
#include "engine/model_parallel.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"

namespace lumen::engine {

class SingleSequenceForward {
 public:
  // `context` tokens of KV cache; prompts are processed `chunk` tokens per forward call.
  // With the group of a tensor-parallel model (rank 0's), the other ranks follow each forward
  // pass (engine/model_parallel.h).
  SingleSequenceForward(LoadedModel& model, backend::Backend& backend, int64_t context, int64_t chunk = 512,
                        ModelParallelGroup* group = nullptr);

  // Forgets the sequence (the KV cache is reused).
  void reset() { n_past_ = 0; }
  // Keeps the first n tokens of the sequence and forgets the rest (a later feed overwrites
  // their K/V): how a chat reuses the conversation so far. A state-space model's state holds
  // every token, so it can only be kept whole or dropped (n = 0): any other n throws.
  void truncate(int64_t n);
  int64_t context() const { return context_; }
  int64_t position() const { return n_past_; }

  // Feeds tokens; returns the logits after the last one (a view into an internal buffer).
  // Throws lumen::Error when the context would overflow.
  std::span<const float> feed(std::span<const int32_t> tokens);
  // Feeds tokens; returns the greedy token after the last one (sampling::argmax's: the lowest
  // index among equal maxima), asked of the step as the engine asks for a greedy row
  // (backend::RowForm::Argmax): a device backend reduces the row where it is and copies back its
  // argmax alone; the CPU leaves the row whole and it is reduced here. The logits of feed() are
  // then not written. What a greedy decode loop timed on a device should call.
  int32_t feed_greedy(std::span<const int32_t> tokens);
  // Feeds tokens and wants the logits at every position: logits_out gets tokens.size() rows.
  void feed_all_logits(std::span<const int32_t> tokens, std::vector<float>& logits_out);
  // Feeds tokens in one pass (at most the chunk's) and wants the logits of the last `rows`
  // positions: logits_out gets those rows, in order. The last row's logits of feed() are then not
  // written. (The engine's largest step: engine/largest_step_reserve.h.)
  void feed_last_logits(std::span<const int32_t> tokens, int64_t rows, std::vector<float>& logits_out);

 private:
  // Throws lumen::Error when `tokens` more would overflow the context.
  void require_room(size_t tokens) const;
  // feed and feed_greedy: the tokens in chunks, the last row's logits into last_logits_ (or, with
  // `argmax` and a backend that reduces the row, its argmax there).
  void feed_last_row(std::span<const int32_t> tokens, backend::RowArgmax* argmax);
  // `argmax`: the last row comes back as its argmax there, when the backend reduces it.
  void forward_chunk(std::span<const int32_t> tokens, int64_t last_rows, float* logits,
                     backend::RowArgmax* argmax = nullptr);

  LoadedModel& model_;
  int64_t context_;
  int64_t chunk_;
  model::KvCache cache_;
  std::unique_ptr<model::StateCache> states_;  // one slot: a state-space model's
  std::unique_ptr<ModelParallelLeader> leader_;
  std::vector<int32_t> block_table_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> logit_rows_;
  // The last row's logits, in the backend's host memory for copies (page-locked on a GPU: a copy
  // into ordinary memory goes through the driver's staging, every token).
  std::unique_ptr<backend::Buffer> last_logits_buffer_;
  std::span<float> last_logits_;
  int64_t n_past_ = 0;
};

}  // namespace lumen::engine
