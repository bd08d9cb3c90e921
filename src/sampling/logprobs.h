#pragma once
// Log-probabilities as reported to the user: the log-softmax of a row of logits, for one token
// and for the row's most likely tokens. The sampler calls it on the logits after bias,
// penalties and masks (see SampleResult); the serving core can call it on raw model logits for
// prompt_logprobs.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidate.h"

namespace lumen::sampling {

struct TokenLogprob {
  int32_t token;
  float logprob;
};

// Fills `top` with the top_n most likely tokens of log_softmax(logits) (more_likely order:
// ties go to the lower id; fewer when fewer tokens are finite) and returns token's own
// log-probability (-inf for a masked token). `scratch` is reused working memory.
float token_logprobs(std::span<const float> logits, int32_t token, int32_t top_n,
                     std::vector<TokenLogprob>& top, std::vector<Candidate>& scratch);

}  // namespace lumen::sampling
