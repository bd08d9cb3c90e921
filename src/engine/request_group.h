#pragma once
// A request inside the engine: one or more completions (output sequences) of one prompt, and
// what turns their sampled tokens into the streams the caller reads.
//
// How a request runs (GroupMode):
//  - Sample: one sequence computes the prompt; at its first sample it forks into `width`
//    sequences that share the prompt's blocks and sample independently. Completion i streams
//    to stream i as it goes (width == n).
//  - BestOf: the same with width = best_of > n, but the output is held until every
//    completion ended; the n with the highest mean log-probability per token are then
//    delivered, best first.
//  - Beam: the sequences are the live beams of a BeamSearch. Each beam pauses after it has
//    its next-token logits; when all have, the search picks the next beams, which the engine
//    makes by extending, forking (copy-on-write) and dropping sequences. The n best
//    hypotheses are delivered when the search ends.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/mask_workers.h"
#include "engine/request_stream.h"
#include "engine/sequence.h"
#include "grammar/grammar_matcher.h"
#include "lumen/outputs.h"
#include "sampling/beam_search.h"
#include "sampling/sampler.h"
#include "sampling/stop_string_matcher.h"
#include "sampling/stopping.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace lumen::engine {

enum class GroupMode { Sample, BestOf, Beam };

struct RequestGroup;

// One output sequence: the scheduler's Sequence plus its sampler, stop conditions and
// detokenizer.
struct Completion {
  // The request's first sequence.
  Completion(RequestGroup& owner, uint64_t sequence_id, std::vector<int32_t> prompt, int priority,
             const kv::KvSpace& kv_space, uint64_t cache_salt, const tokenizer::Tokenizer& tokenizer);
  // A sequence forked from `parent`: same tokens and K/V, its own sampler (drawing from
  // seed_of_choice(seed, completion_index)), stop conditions and detokenizer, all fresh: a fork happens before
  // the parent accepted any token (Sample, BestOf), or in Beam mode where they are unused.
  // Both sample with the group's shared SamplingSetup.
  Completion(const Completion& parent, uint64_t sequence_id, int32_t completion_index,
             const tokenizer::Tokenizer& tokenizer);

  RequestGroup* group;
  int32_t index;  // its stream (Sample), or its rank among the candidates (BestOf)
  Sequence seq;
  sampling::Sampler sampler;
  sampling::TokenStopCondition stop_condition;
  tokenizer::StreamingDetokenizer detokenizer;
  std::optional<sampling::StopStringMatcher> stop_strings;
  std::vector<GeneratedToken> held;  // BestOf: the output until the best are chosen
  double sum_logprob = 0.0;          // BestOf: of the tokens generated
  std::optional<FinishReason> finish;
  // Structured output (mask_workers.h): the job computing its next grammar mask, until the loop
  // has seen it done; and, while that mask came too late for its step, the row of logits it is
  // to be sampled from (seq.awaiting_mask is set meanwhile).
  std::shared_ptr<const MaskWorkers::Ticket> mask_job;
  std::vector<float> deferred_row;
};

struct RequestGroup {
  RequestGroup(uint64_t request_id, const sampling::SamplingParams& request_params,
               int64_t max_new_tokens, std::span<const int32_t> end_of_generation);

  uint64_t id;
  sampling::SamplingParams params;  // as asked
  // What the completions sample with: params, plus log-probabilities when BestOf needs them
  // to rank (they are not reported unless asked for).
  sampling::SamplingParams sampling;
  std::shared_ptr<const sampling::SamplingSetup> setup;  // `sampling`, for every completion
  // params.structured_outputs compiled (engine/structured_output.h); every completion samples
  // through its own matcher of it. Null when the request is not constrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // The mask work its sequences share (grammar/mask_work.h): n choices get one allowance.
  std::shared_ptr<grammar::MaskAllowance> mask_allowance = std::make_shared<grammar::MaskAllowance>();
  GroupMode mode;
  int32_t width;  // sequences it runs at most: best_of, or the beam width
  std::vector<std::shared_ptr<RequestStream>> streams;  // params.n
  std::vector<std::unique_ptr<Completion>> completions;  // every one made, finished or not
  bool forked = false;  // Sample / BestOf: the first sequence has forked
  int64_t n_running = 0;  // completions not finished

  // Beam mode.
  std::optional<sampling::BeamSearch> beam;
  std::vector<Completion*> beams;               // live beam i runs in beams[i]
  std::vector<std::vector<float>> beam_logits;  // live beam i's next-token logits, once it has them
  std::vector<bool> beam_has_logits;

  std::vector<PromptLogprob> prompt_logprobs;  // as they are computed
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
  bool scheduled = false;  // some step has computed its tokens
  bool ended = false;  // every stream has its finish reason
};

// BestOf: the n completions to deliver, best first (highest mean log-probability per token;
// ties: lower index).
std::vector<const Completion*> best_completions(const RequestGroup& group);

// Beam mode: a hypothesis as the caller sees it, its text detokenized whole (control tokens'
// text left out with skip_special_tokens).
std::vector<GeneratedToken> hypothesis_tokens(const sampling::BeamHypothesis& hypothesis,
                                              const tokenizer::Tokenizer& tokenizer, bool with_logprobs,
                                              bool skip_special_tokens);

}  // namespace lumen::engine
