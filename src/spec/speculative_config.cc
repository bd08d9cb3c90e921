#include "spec/speculative_config.h"

#include "spec/ngram_proposer.h"
#include "util/error.h"

namespace lumen::spec {

SpeculativeConfig resolved(const SpeculativeConfig& config) {
  SpeculativeConfig c = config;
  if (c.method == SpeculativeMethod::None) return c;
  if (c.num_speculative_tokens < 1 || c.num_speculative_tokens > kMaxSpeculativeTokens) {
    fail("speculative config: num_speculative_tokens must be in [1, {}] (got {})", kMaxSpeculativeTokens,
         c.num_speculative_tokens);
  }
  if (c.prompt_lookup_min < 0 || c.prompt_lookup_max < 0) {
    fail("speculative config: prompt_lookup_min and prompt_lookup_max must be >= 1 (got {} and {})",
         c.prompt_lookup_min, c.prompt_lookup_max);
  }
  // vLLM's defaults: one bound given sets the other; none gives 5 and 5.
  if (c.prompt_lookup_min == 0 && c.prompt_lookup_max == 0) c.prompt_lookup_min = c.prompt_lookup_max = 5;
  if (c.prompt_lookup_min == 0) c.prompt_lookup_min = c.prompt_lookup_max;
  if (c.prompt_lookup_max == 0) c.prompt_lookup_max = c.prompt_lookup_min;
  if (c.prompt_lookup_min > c.prompt_lookup_max) {
    fail("speculative config: prompt_lookup_min ({}) exceeds prompt_lookup_max ({})", c.prompt_lookup_min,
         c.prompt_lookup_max);
  }
  // Past this the backward scan compares more than it can ever gain.
  if (c.prompt_lookup_max > 1024) fail("speculative config: prompt_lookup_max must be at most 1024 (got {})", c.prompt_lookup_max);
  if (c.disable_by_batch_size < 0) {
    fail("speculative config: disable_by_batch_size must be >= 0 (got {})", c.disable_by_batch_size);
  }
  if (!(c.min_acceptance_rate >= 0.0 && c.min_acceptance_rate <= 1.0)) {
    fail("speculative config: min_acceptance_rate must be in [0, 1] (got {})", c.min_acceptance_rate);
  }
  return c;
}

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
  switch (config.method) {
    case SpeculativeMethod::None:
      return nullptr;
    case SpeculativeMethod::Ngram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
  }
  return nullptr;
}

}  // namespace lumen::spec

void lumen::SpeculativeConfig::validate() const { spec::resolved(*this); }
