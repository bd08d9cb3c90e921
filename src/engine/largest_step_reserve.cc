#include "engine/largest_step_reserve.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/single_sequence_forward.h"
#include "util/error.h"

namespace lumen::engine {

bool reserves_largest_step(const EngineConfig& config, const LoadedModel& model, const backend::Backend& backend,
                           bool model_parallel) {
  if (!backend.device_memory() || !model.transformer || model.transformer->split().active()) return false;
  if (config.kv_cache_bytes > 0 || config.num_kv_blocks > 0 || config.kv_cache_full_sequences > 0) return false;
  if (model_parallel) return false;
  return !model.transformer->architecture().features.encoder;
}

int64_t reserved_logit_rows(const EngineConfig& config) {
  return std::min(config.max_num_batched_tokens, std::max<int64_t>(config.max_num_seqs, kReservedLogitRows));
}

void reserve_largest_step(const EngineConfig& config, LoadedModel& model, backend::Backend& backend) {
  const int64_t tokens = config.max_num_batched_tokens;
  if (tokens <= 0) fail("max_num_batched_tokens must be positive (got {})", tokens);
  const int64_t rows = reserved_logit_rows(config);
  try {
    // One prompt of the step's every token: the largest activations and matmuls a step of the
    // scheduler's can need, and its logits rows. Token 0 is in every vocabulary.
    SingleSequenceForward pass(model, backend, tokens, tokens);
    const std::vector<int32_t> prompt(static_cast<size_t>(tokens), 0);
    std::vector<float> logits;
    pass.feed_last_logits(prompt, rows, logits);
  } catch (const Error& e) {
    // Most likely the device's memory; any other failure is named as it is (a step the backend
    // cannot run at all would fail every such step later, inside the requests).
    const std::string what = e.what();
    if (what.find("out of memory") != std::string::npos) {
      fail(
          "the largest step ({} tokens, max_num_batched_tokens, {} rows of logits) does not fit in the device memory "
          "beside the model: {} (a smaller max_num_batched_tokens needs less)",
          tokens, rows, what);
    }
    fail("the largest step ({} tokens, max_num_batched_tokens, {} rows of logits) failed on the device: {}", tokens,
         rows, what);
  }
  model.transformer->reset_expert_load();
}

}  // namespace lumen::engine
