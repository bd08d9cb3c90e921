#include "engine/request_group.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/structured_output.h"

namespace lumen::engine {

namespace {

GroupMode mode_of(const sampling::SamplingParams& params) {
  if (params.use_beam_search) return GroupMode::Beam;
  return params.best_of.value_or(params.n) > params.n ? GroupMode::BestOf : GroupMode::Sample;
}

}  // namespace

Completion::Completion(RequestGroup& owner, uint64_t sequence_id, std::vector<int32_t> prompt,
                       int priority, const kv::KvSpace& kv_space, uint64_t cache_salt,
                       const tokenizer::Tokenizer& tokenizer)
    : group(&owner),
      index(0),
      seq(sequence_id, std::move(prompt), priority, 0, kv_space, cache_salt),
      sampler(owner.setup, seq.tokens, tokenizer.vocab().end_of_generation),
      stop_condition(group->setup->params, tokenizer.vocab().end_of_generation),
      detokenizer(tokenizer, {.skip_special = group->setup->params.skip_special_tokens}) {
  if (!group->setup->params.stop.empty()) stop_strings.emplace(group->setup->params.stop);
  if (group->grammar) {
    sampler.set_mask(std::make_unique<GrammarMask>(group->grammar, tokenizer.vocab().size(), group->mask_allowance));
  }
}

Completion::Completion(const Completion& parent, uint64_t sequence_id, int32_t completion_index,
                       const tokenizer::Tokenizer& tokenizer)
    : group(parent.group),
      index(completion_index),
      seq(sequence_id, parent.seq),
      // Its own stream of draws: seed_of_choice(seed, index) when a seed was given.
      sampler(parent.group->setup, std::span(seq.tokens).first(static_cast<size_t>(seq.prompt_len)),
              tokenizer.vocab().end_of_generation, static_cast<uint64_t>(completion_index)),
      stop_condition(group->setup->params, tokenizer.vocab().end_of_generation),
      detokenizer(tokenizer, {.skip_special = group->setup->params.skip_special_tokens}) {
  if (!group->setup->params.stop.empty()) stop_strings.emplace(group->setup->params.stop);
  // A fresh matcher is the parent's state: forks happen before the parent accepted a token
  // (beam search, which forks later, does not take grammars).
  if (group->grammar) {
    sampler.set_mask(std::make_unique<GrammarMask>(group->grammar, tokenizer.vocab().size(), group->mask_allowance));
  }
}

RequestGroup::RequestGroup(uint64_t request_id, const sampling::SamplingParams& request_params,
                           int64_t max_new_tokens, std::span<const int32_t> end_of_generation)
    : id(request_id),
      params(request_params),
      sampling(request_params),
      mode(mode_of(request_params)),
      width(request_params.best_of.value_or(request_params.n)) {
  if (mode == GroupMode::BestOf && !sampling.logprobs) sampling.logprobs = 0;
  setup = std::make_shared<const sampling::SamplingSetup>(sampling);
  for (int32_t i = 0; i < params.n; ++i) streams.push_back(std::make_shared<RequestStream>());
  if (mode == GroupMode::Beam) {
    sampling::BeamSearchConfig config;
    config.width = width;
    config.n_results = params.n;
    config.length_penalty = params.length_penalty;
    config.early_stopping = params.early_stopping;
    config.max_tokens = std::min(params.max_tokens, max_new_tokens);
    config.min_tokens = std::min(params.min_tokens, config.max_tokens);
    config.end_tokens = params.stop_token_ids;
    if (!params.ignore_eos) {
      config.end_tokens.insert(config.end_tokens.end(), end_of_generation.begin(), end_of_generation.end());
    }
    beam.emplace(std::move(config));
  }
}

std::vector<const Completion*> best_completions(const RequestGroup& group) {
  std::vector<const Completion*> all;
  for (const auto& c : group.completions) all.push_back(c.get());
  auto mean = [](const Completion* c) {
    return c->held.empty() ? -std::numeric_limits<double>::infinity()
                           : c->sum_logprob / static_cast<double>(c->held.size());
  };
  std::stable_sort(all.begin(), all.end(), [&](const Completion* a, const Completion* b) {
    if (mean(a) != mean(b)) return mean(a) > mean(b);
    return a->index < b->index;
  });
  all.resize(std::min(all.size(), static_cast<size_t>(group.params.n)));
  return all;
}

std::vector<GeneratedToken> hypothesis_tokens(const sampling::BeamHypothesis& hypothesis,
                                              const tokenizer::Tokenizer& tokenizer, bool with_logprobs,
                                              bool skip_special_tokens) {
  tokenizer::StreamingDetokenizer detokenizer(tokenizer, {.skip_special = skip_special_tokens});
  std::vector<GeneratedToken> out;
  for (const sampling::BeamToken& t : hypothesis.tokens) {
    GeneratedToken g;
    g.token = t.token;
    g.logprob = with_logprobs ? t.logprob : std::numeric_limits<float>::quiet_NaN();
    g.text = detokenizer.push(t.token);
    out.push_back(std::move(g));
  }
  if (!out.empty()) out.back().text += detokenizer.flush();
  return out;
}

}  // namespace lumen::engine
