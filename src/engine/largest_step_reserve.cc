#include "engine/largest_step_reserve.h"

#include <algorithm>
#include <vector>

#include "engine/single_sequence_forward.h"
#include "util/error.h"

namespace lumen::engine {

bool reserves_largest_step(const EngineConfig& config, const LoadedModel& model,
                           std::span<const backend::Backend* const> backends, bool model_parallel) {
  if (std::none_of(backends.begin(), backends.end(), [](const backend::Backend* b) { return b->device_memory(); })) {
    return false;
  }
  if (config.kv_cache_bytes > 0 || config.num_kv_blocks > 0 || config.kv_cache_full_sequences > 0) return false;
  if (model_parallel || !model.transformer) return false;
  return !model.transformer->architecture().features.encoder;
}

void reserve_largest_step(const EngineConfig& config, LoadedModel& model, backend::Backend& backend) {
  const int64_t tokens = config.max_num_batched_tokens;
  if (tokens <= 0) fail("max_num_batched_tokens must be positive (got {})", tokens);
  try {
    // One prompt of the step's every token, logits for each: the largest activations, matmuls
    // and logits rows a step of the scheduler's can need. Token 0 is in every vocabulary.
    SingleSequenceForward pass(model, backend, tokens, tokens);
    const std::vector<int32_t> prompt(static_cast<size_t>(tokens), 0);
    std::vector<float> logits;
    pass.feed_all_logits(prompt, logits);
  } catch (const Error& e) {
    fail(
        "the largest step ({} tokens, max_num_batched_tokens) does not fit in the device memory beside the model: "
        "{} (a smaller max_num_batched_tokens needs less)",
        tokens, e.what());
  }
  model.transformer->reset_expert_load();
}

}  // namespace lumen::engine
