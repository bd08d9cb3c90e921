#pragma once
// Why a sequence ended, and the token-level checks that end it: stop token ids, end-of-generation
// tokens (unless ignore_eos), max_tokens and min_tokens. Stop strings are text-level
// (stop_string_matcher.h); the caller combines the two.
//
// min_tokens: the first min_tokens generated tokens never end the sequence. The Sampler masks
// stop ids and end-of-generation ids to -inf while fewer than min_tokens were accepted, so they
// cannot even be drawn; this check agrees (a stop token among the first min_tokens, e.g. from a
// caller that did not pass the end-of-generation ids to its Sampler, is counted as an ordinary
// token), and stop strings should be matched only in the text of later tokens
// (past_min_tokens()).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lumen/finish_reason.h"
#include "sampling/sampling_params.h"

namespace lumen::sampling {

using lumen::FinishReason;  // include/lumen/finish_reason.h

class TokenStopCondition {
 public:
  // `end_of_generation`: the vocabulary's end-of-generation ids (ignored with ignore_eos).
  TokenStopCondition(const SamplingParams& params, std::span<const int32_t> end_of_generation);

  // Each generated token, in order. Returns why the sequence ends with this token: Stop for a
  // stop id or end-of-generation token past the first min_tokens (checked first), Length when
  // this is the max_tokens-th token; nothing otherwise.
  std::optional<FinishReason> check(int32_t token);

  int64_t n_generated() const { return n_generated_; }
  // Tokens that may still be generated before max_tokens ends the sequence.
  int64_t tokens_left() const { return std::max<int64_t>(0, max_tokens_ - n_generated_); }
  // Whether the next token's text may end the sequence by a stop string.
  bool past_min_tokens() const { return n_generated_ >= min_tokens_; }

 private:
  std::vector<int32_t> stop_ids_;  // sorted: stop_token_ids and (unless ignore_eos) EOS ids
  int64_t max_tokens_;
  int64_t min_tokens_;
  int64_t n_generated_ = 0;
};

}  // namespace lumen::sampling
