#include "sampling/sampling_params.h"

#include <cmath>

#include "util/error.h"

namespace lumen {

namespace {

void check_unit_interval(const char* name, float value, bool zero_allowed) {
  const bool ok = zero_allowed ? (value >= 0.0f && value <= 1.0f) : (value > 0.0f && value <= 1.0f);
  if (!ok) fail("{} must be in {}0, 1] (got {})", name, zero_allowed ? "[" : "(", value);
}

void check_logprobs(const char* name, const std::optional<int32_t>& value) {
  if (value && (*value < 0 || *value > kMaxLogprobs)) {
    fail("{} must be between 0 and {} (got {})", name, kMaxLogprobs, *value);
  }
}

}  // namespace

void SamplingParams::validate() const {
  // NaN fails every comparison below, so each check is written to reject it.
  if (!(temperature >= 0.0f) || std::isinf(temperature)) {
    fail("temperature must be a finite number >= 0 (got {})", temperature);
  }
  if (top_k < -1) fail("top_k must be -1 or 0 (off) or positive (got {})", top_k);
  check_unit_interval("top_p", top_p, false);
  check_unit_interval("min_p", min_p, true);
  check_unit_interval("typical_p", typical_p, false);
  if (!(repetition_penalty > 0.0f) || std::isinf(repetition_penalty)) {
    fail("repetition_penalty must be a finite number > 0 (got {})", repetition_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    fail("frequency_penalty must be in [-2, 2] (got {})", frequency_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    fail("presence_penalty must be in [-2, 2] (got {})", presence_penalty);
  }
  if (penalty_last_n < -1) {
    fail("penalty_last_n must be -1 (all), 0 (none) or positive (got {})", penalty_last_n);
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) fail("logit_bias names token id {}; ids are >= 0", token);
    const bool ban = std::isinf(bias) && bias < 0.0f;
    if (!ban && !(bias >= -100.0f && bias <= 100.0f)) {
      fail("logit_bias for token {} must be in [-100, 100] or -inf (got {})", token, bias);
    }
  }
  if (max_tokens < 1) fail("max_tokens must be at least 1 (got {})", max_tokens);
  if (min_tokens < 0 || min_tokens > max_tokens) {
    fail("min_tokens must be in [0, max_tokens = {}] (got {})", max_tokens, min_tokens);
  }
  if (stop.size() > kMaxStopStrings) fail("at most {} stop strings (got {})", kMaxStopStrings, stop.size());
  for (const std::string& s : stop) {
    if (s.empty()) fail("stop strings must not be empty");
    if (s.size() > kMaxStopStringBytes) {
      fail("a stop string may be at most {} bytes (got {})", kMaxStopStringBytes, s.size());
    }
  }
  for (int32_t token : stop_token_ids) {
    if (token < 0) fail("stop_token_ids holds {}; ids are >= 0", token);
  }
  check_logprobs("logprobs", logprobs);
  check_logprobs("prompt_logprobs", prompt_logprobs);
  if (n < 1) fail("n must be at least 1 (got {})", n);
  if (best_of && *best_of < n) fail("best_of ({}) must be at least n ({})", *best_of, n);
  if (!std::isfinite(length_penalty))
    fail("length_penalty must be finite (got {})", length_penalty);
  if (structured_outputs) {
    if (structured_outputs->count() > 1) {
      fail("structured_outputs may set one of json, json_object, regex, choice and grammar (got {})",
           structured_outputs->count());
    }
    if (structured_outputs->choice && structured_outputs->choice->empty()) {
      fail("structured_outputs.choice must list at least one string");
    }
    // Beam search ranks whole hypotheses; a grammar would have to be forked and rolled back
    // with every beam, which it does not do yet.
    if (use_beam_search && structured_outputs->count() > 0) {
      fail("structured outputs are not supported with beam search");
    }
  }
}

void SamplingParams::validate_for_vocab(int64_t vocab_size) const {
  validate();
  for (const auto& [token, bias] : logit_bias) {
    if (token >= vocab_size) {
      fail("logit_bias names token id {}, outside the vocabulary [0, {})", token, vocab_size);
    }
  }
  for (int32_t token : stop_token_ids) {
    if (token >= vocab_size) {
      fail("stop_token_ids holds {}, outside the vocabulary [0, {})", token, vocab_size);
    }
  }
}

}  // namespace lumen
