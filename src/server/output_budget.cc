#include "server/output_budget.h"

#include <algorithm>

#include "server/api_error.h"

namespace lumen::server {

namespace {

// The field to lower: the one with the largest factor (ties go to the earlier one).
struct Factor {
  int64_t value;
  const char* param;
};

const char* largest(std::initializer_list<Factor> factors) {
  const Factor* best = factors.begin();
  for (const Factor& f : factors) best = f.value > best->value ? &f : best;
  return best->param;
}

}  // namespace

OutputEstimate estimate_output(const std::vector<int64_t>& prompt_lengths, const GenerationOptions& options,
                               Endpoint endpoint, bool echo, int64_t max_model_len) {
  const SamplingParams& p = options.params;
  const bool chat = endpoint == Endpoint::ChatCompletions;
  const int64_t n = options.n;
  const int64_t width = std::max<int64_t>(n, p.best_of.value_or(options.n));
  const int64_t alternatives = p.logprobs.value_or(0);
  const int64_t per_token = p.logprobs ? 1 + alternatives : 1;
  const int64_t prompt_per_token = 1 + p.prompt_logprobs.value_or(0);
  // Copies of each prompt token in each choice: echo's (text, or log-probabilities when asked
  // for) and the prompt_logprobs field's.
  const int64_t prompt_weight =
      (echo ? (p.logprobs ? prompt_per_token : 1) : 0) + (options.prompt_logprobs_field ? prompt_per_token : 0);

  OutputEstimate out;
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
  for (int64_t length : prompt_lengths) {
    const int64_t room = std::max<int64_t>(max_model_len - length, 0);
    const int64_t generated = std::max<int64_t>(max_new_tokens(options, endpoint, room), 0);
    prompt_tokens += length;
    max_tokens = std::max(max_tokens, generated);
    out.prompt_records += n * length * prompt_weight;
    out.generated_records += width * generated * per_token;
  }
  if (out.generated_records >= out.prompt_records) {
    const char* choices = width > n ? "best_of" : "n";
    const char* tokens = chat ? "max_completion_tokens" : "max_tokens";
    const char* logprobs = chat ? (alternatives > 0 ? "top_logprobs" : "logprobs") : "logprobs";
    out.dominant_param = largest({{max_tokens, tokens}, {per_token, logprobs}, {width, choices}});
  } else {
    const char* prompt = chat ? "messages" : "prompt";
    const char* weight = options.prompt_logprobs_field ? "prompt_logprobs" : (p.logprobs ? "logprobs" : "echo");
    out.dominant_param = largest({{prompt_tokens, prompt}, {prompt_weight, weight}, {n, "n"}});
  }
  return out;
}

void check_output_budget(const OutputEstimate& estimate, int64_t limit) {
  if (estimate.total() <= limit) return;
  invalid(estimate.dominant_param,
          "this request could produce {} tokens and log-probability entries ({} from prompts, {} generated), more "
          "than one response may hold ({}, --max-output-records); lower '{}'",
          estimate.total(), estimate.prompt_records, estimate.generated_records, limit, estimate.dominant_param);
}

}  // namespace lumen::server
