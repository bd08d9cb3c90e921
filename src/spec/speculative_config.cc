#include "spec/speculative_config.h"

#include "spec/lookahead_proposer.h"
#include "spec/ngram_proposer.h"
#include "util/error.h"

namespace lumen::spec {

namespace {

// Each method's own fields, and no other method's: a field that would be ignored is a mistake
// worth saying (a draft model given to "layer_skip", lookup bounds given to a draft model).
void check_method_fields(const SpeculativeConfig& c) {
  const bool ngram = c.method == SpeculativeMethod::Ngram;
  const bool draft = c.method == SpeculativeMethod::DraftModel;
  const bool skip = c.method == SpeculativeMethod::LayerSkip;
  if (!ngram && (c.prompt_lookup_min != 0 || c.prompt_lookup_max != 0)) {
    fail("speculative config: prompt_lookup_min and prompt_lookup_max apply to method ngram only");
  }
  if (draft && c.model.empty()) fail("speculative config: method draft_model needs \"model\", the draft's GGUF path");
  if (!draft && !c.model.empty()) fail("speculative config: \"model\" applies to method draft_model only");
  if (skip && c.num_layers < 1) {
    fail("speculative config: num_layers must be >= 1 for method layer_skip (got {})", c.num_layers);
  }
  if (!skip && c.num_layers != 0) fail("speculative config: num_layers applies to method layer_skip only");
  const bool lookahead = c.method == SpeculativeMethod::Lookahead;
  if (c.num_candidates < 1 || c.num_candidates > kMaxCandidates) {
    fail("speculative config: num_candidates must be in [1, {}] (got {})", kMaxCandidates, c.num_candidates);
  }
  // num_candidates applies to every method: n-gram matches, lookahead's pooled n-grams, a draft
  // model's (or layer skip's) likeliest tokens beside its chain.
  if (!lookahead && (c.window_size != 0 || c.ngram_size != 0 || c.guess_set_size != 0)) {
    fail("speculative config: window_size, ngram_size and guess_set_size apply to method lookahead only");
  }
}

// Lookahead's window and pool: the paper's defaults where 0, then their ranges. The draft is an
// n-gram's tail, so num_speculative_tokens (optional for this method) is N - 1 unless smaller.
void resolve_lookahead(SpeculativeConfig& c) {
  if (c.window_size == 0) c.window_size = kDefaultLookaheadWindow;
  if (c.ngram_size == 0) c.ngram_size = kDefaultLookaheadNgram;
  if (c.guess_set_size == 0) c.guess_set_size = kDefaultLookaheadGuesses;
  if (c.window_size < 1 || c.window_size > kMaxLookaheadWindow) {
    fail("speculative config: window_size must be in [1, {}] (got {})", kMaxLookaheadWindow, c.window_size);
  }
  if (c.ngram_size < 3 || c.ngram_size > kMaxLookaheadNgram) {
    fail("speculative config: ngram_size must be in [3, {}] (got {})", kMaxLookaheadNgram, c.ngram_size);
  }
  if (c.guess_set_size < 1 || c.guess_set_size > kMaxLookaheadGuesses) {
    fail("speculative config: guess_set_size must be in [1, {}] (got {})", kMaxLookaheadGuesses, c.guess_set_size);
  }
  if (c.num_speculative_tokens == 0) c.num_speculative_tokens = c.ngram_size - 1;
  if (c.num_speculative_tokens > c.ngram_size - 1) {
    fail("speculative config: num_speculative_tokens must be at most ngram_size - 1 = {} for method lookahead (got {})",
         c.ngram_size - 1, c.num_speculative_tokens);
  }
}

// The adaptive fields every method shares.
SpeculativeConfig checked_adaptive(const SpeculativeConfig& c) {
  if (c.disable_by_batch_size < 0) {
    fail("speculative config: disable_by_batch_size must be >= 0 (got {})", c.disable_by_batch_size);
  }
  if (!(c.min_acceptance_rate >= 0.0 && c.min_acceptance_rate <= 1.0)) {
    fail("speculative config: min_acceptance_rate must be in [0, 1] (got {})", c.min_acceptance_rate);
  }
  return c;
}

}  // namespace

SpeculativeConfig resolved(const SpeculativeConfig& config) {
  SpeculativeConfig c = config;
  if (c.method == SpeculativeMethod::None) return c;
  check_method_fields(c);
  if (c.method == SpeculativeMethod::Lookahead) resolve_lookahead(c);
  if (c.num_speculative_tokens < 1 || c.num_speculative_tokens > kMaxSpeculativeTokens) {
    fail("speculative config: num_speculative_tokens must be in [1, {}] (got {})", kMaxSpeculativeTokens,
         c.num_speculative_tokens);
  }
  if (c.prompt_lookup_min < 0 || c.prompt_lookup_max < 0) {
    fail("speculative config: prompt_lookup_min and prompt_lookup_max must be >= 1 (got {} and {})",
         c.prompt_lookup_min, c.prompt_lookup_max);
  }
  // Only the other fields' checks below apply to a model-based proposer.
  if (c.method != SpeculativeMethod::Ngram) return checked_adaptive(c);
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
  return checked_adaptive(c);
}

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
  switch (config.method) {
    case SpeculativeMethod::None:
      return nullptr;
    case SpeculativeMethod::Ngram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
    case SpeculativeMethod::Lookahead:
      return std::make_unique<LookaheadProposer>(
          LookaheadShape{config.window_size, config.ngram_size, config.guess_set_size});
    case SpeculativeMethod::DraftModel:
    case SpeculativeMethod::LayerSkip:
      // They need the target (its vocabulary, its weights, its backend): the engine makes them
      // (engine/draft_proposers.h).
      return nullptr;
  }
  return nullptr;
}

}  // namespace lumen::spec

void lumen::SpeculativeConfig::validate() const { spec::resolved(*this); }
