#include "sampling/stopping.h"

#include <algorithm>

namespace lumen {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "abort";
}

}  // namespace lumen

namespace lumen::sampling {

TokenStopCondition::TokenStopCondition(const SamplingParams& params,
                                       std::span<const int32_t> end_of_generation)
    : stop_ids_(params.stop_token_ids),
      max_tokens_(params.max_tokens),
      min_tokens_(params.min_tokens) {
  if (!params.ignore_eos)
    stop_ids_.insert(stop_ids_.end(), end_of_generation.begin(), end_of_generation.end());
  std::sort(stop_ids_.begin(), stop_ids_.end());
}

std::optional<FinishReason> TokenStopCondition::check(int32_t token) {
  const bool may_stop = n_generated_ >= min_tokens_;
  ++n_generated_;
  if (may_stop && std::binary_search(stop_ids_.begin(), stop_ids_.end(), token))
    return FinishReason::Stop;
  if (n_generated_ >= max_tokens_) return FinishReason::Length;
  return std::nullopt;
}

}  // namespace lumen::sampling
