#pragma once
// Lumen's engine: many requests at once over one model. Requests may be submitted and aborted
// from any thread; one thread drives the engine by calling step() (or generate(), which steps
// until its own requests are done). Each step runs one flat batch: decodes of every running
// request plus prefill chunks of new ones (continuous batching with chunked prefill), over a
// paged KV cache with prefix caching and preemption.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "lumen/engine_config.h"
#include "lumen/image_encoder.h"
#include "lumen/model.h"
#include "lumen/outputs.h"
#include "lumen/prompt_image.h"
#include "lumen/sampling_params.h"

namespace lumen {

class RequestStream;      // src/engine/request_stream.h
struct EngineTestAccess;  // fault injection for tests (src/engine/engine_test_access.h)
class PromptKvExchange;   // lumen/prompt_kv_exchange.h

// One completion of a submitted request: the request's id, which of its completions, and the
// stream of that completion's outputs. Copyable; thread-safe.
class RequestHandle {
 public:
  uint64_t id() const { return id_; }
  int32_t index() const { return index_; }
  // Blocks until new tokens arrive or the request ends. False once the request has ended and
  // the chunk carrying its finish reason was read.
  bool next(StreamChunk& out);
  // next() without blocking: false when nothing new has arrived (for the thread that drives the
  // engine itself: step(), then take what the step made).
  bool try_next(StreamChunk& out);
  // Reads the rest of the stream into one result; blocks until the request ends.
  GenerationResult collect();

 private:
  friend class Engine;  // the only maker of handles
  RequestHandle(uint64_t id, int32_t index, std::shared_ptr<RequestStream> stream);
  uint64_t id_;
  int32_t index_;
  std::shared_ptr<RequestStream> stream_;
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;          // referenced by a sequence
  // Block slots held by running sequences, and the positions those blocks hold K/V for, both in
  // positions of every layer (a sliding-window layer's dropped blocks count for neither).
  int64_t kv_slots_allocated = 0;
  int64_t kv_slots_filled = 0;
  size_t kv_cache_bytes = 0;
  // A state-space model's recurrent-state slots (at most this many sequences run at once) and
  // their bytes, from the same memory budget as the KV (0 for other models).
  int64_t state_slots_total = 0;
  size_t state_cache_bytes = 0;
  int64_t state_slots_used = 0;       // held by a running sequence
  int64_t state_swap_slots_used = 0;  // holding a swapped-out sequence's state (Swap mode)
  // The state prefix cache (EngineConfig::state_prefix_cache_bytes): snapshots it holds and can
  // hold, their bytes, prompts looked up, lookups that found one, and the prompt tokens the hits
  // skipped.
  int64_t state_snapshots_used = 0;
  int64_t state_snapshots_total = 0;
  size_t state_snapshot_bytes = 0;
  uint64_t state_prefix_queries = 0;
  uint64_t state_prefix_hits = 0;
  uint64_t state_prefix_hit_tokens = 0;
  uint64_t prefix_queried_blocks = 0;
  uint64_t prefix_hit_blocks = 0;
  uint64_t prefix_evictions = 0;
  uint64_t computed_tokens = 0;        // tokens run through the model (prefill + decode)
  uint64_t generated_tokens = 0;
  uint64_t preemptions = 0;
  uint64_t swapped_out_blocks = 0;     // blocks copied to host memory by swap preemption
  uint64_t context_shifts = 0;         // times a sequence dropped old positions (context shift)
  uint64_t kv_evictions = 0;           // times a sequence evicted positions by importance (snapkv, h2o)
  // Rows a constrained sequence sampled steps late, because its grammar mask was not ready in
  // its own step (the others went on without it).
  uint64_t late_grammar_masks = 0;
  uint64_t steps = 0;
  // Wall time of the steps that ran a forward pass, and of those passes alone (the model
  // runner: building the batch, the device's work and the wait for its logits). The difference
  // is the host's own work per step (scheduling, sampling, streaming), which a device sits idle
  // through unless the next step is prepared while it runs.
  double step_seconds = 0;
  double forward_seconds = 0;
  // Sampling rows that came back reduced instead of whole (on a device, only these bytes cross
  // the link): greedy rows as their argmax, draws confined by top-k, top-p or min-p as their 64
  // leading candidates; and of those, the rows brought back whole after all (a nucleus or
  // min-p set that reached past the candidates).
  uint64_t argmax_rows = 0;
  uint64_t leading_rows = 0;
  uint64_t rows_brought_back = 0;
  int64_t max_model_len = 0;
  // Speculative decoding: sequence-steps that carried a draft, the draft tokens scored, and
  // those the target model agreed with (acceptance rate = accepted / draft tokens; mean
  // accepted length = 1 + accepted / drafts, the tokens a speculating step yields).
  uint64_t spec_drafts = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
  // Token trees (num_candidates > 1): the accepted tokens that were off a tree's first branch,
  // which a chain of the same first candidate would not have had.
  uint64_t spec_branch_tokens = 0;
  // Sequence-steps decoded without speculating because that sequence's drafts did not pay: an
  // acceptance below min_acceptance_rate, or speculating steps that yielded fewer tokens per
  // second than plain decoding on this machine (the break-even, measured from step times).
  uint64_t spec_paused_steps = 0;
  // Engine::encode_image's visual-feature cache: images found encoded, images encoded, and the
  // bytes of features it holds.
  uint64_t image_feature_cache_hits = 0;
  uint64_t image_feature_cache_misses = 0;
  size_t image_feature_cache_bytes = 0;
  // Expert parallelism (ModelOptions::expert_parallel_size; empty and 0 otherwise): routed
  // token-expert pairs that went to each rank's experts, and the bytes the all-to-alls moved
  // between different ranks, since the model was loaded.
  std::vector<uint64_t> expert_pairs_per_rank;
  uint64_t expert_exchanged_bytes = 0;
  // Data-parallel attention: the rows (tokens) of attention each rank ran (empty: off).
  std::vector<uint64_t> attention_rows_per_rank;
};

class Engine {
 public:
  // The engine keeps the model alive. Throws lumen::Error when the configuration does not fit
  // the model or the memory (max_model_len past the model's context, no room for a KV block).
  explicit Engine(Model model, EngineConfig config = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request for params.n completions and returns one handle per completion, in index
  // order, all with the request's id. Its sequences share the prompt's KV blocks:
  //  - sampling (the default): the prompt is computed once, then forked into best_of (default
  //    n) sequences that sample independently, completion i from seed_of_choice(seed, i)
  //    when a seed is given (src/sampling/seed_stream.h: a mix of both, not seed + i). With
  //    best_of == n each streams as it goes; with best_of > n the n with the highest mean
  //    log-probability per token are delivered when all have finished;
  //  - use_beam_search: beam search of width best_of (default n) over the model's
  //    log-probabilities (sampling/beam_search.h has the exact rules); the n best hypotheses
  //    are delivered, best first, when the search ends. Sampling filters, penalties and stop
  //    strings do not apply (stop strings are refused).
  // With prompt_logprobs, the first chunk of every stream carries them.
  // Throws lumen::Error (and queues nothing) for an empty prompt, a token id outside the
  // vocabulary, a prompt that leaves no room to generate within max_model_len, or invalid
  // sampling parameters; lumen::ConstraintError (lumen/constraint_error.h) for an output
  // constraint that cannot be used. priority: larger runs first under SchedulingPolicy::Priority.
  // cache_salt: requests with different salts never share cached K/V (tenant isolation).
  // client: who asks (any key; the server's is its client id). While several clients have work,
  // each gets a fair share of the max_num_seqs seats and of the prefill (docs/engine.md,
  // "Fairness between clients"); requests that leave it 0 are one client.
  // images: features placed at spans of the prompt (lumen/prompt_image.h), in prompt order, never
  // overlapping; lumen::Error for a span outside the prompt or vectors of the wrong size. Such a
  // request does not shift its context (it finishes at max_model_len instead) and refuses
  // kv eviction (snapkv, h2o): both rewrite positions the features cannot be recomputed for.
  std::vector<RequestHandle> add_request_n(std::vector<int32_t> prompt, const SamplingParams& params, int priority = 0,
                                           uint64_t cache_salt = 0, uint64_t client = 0,
                                           std::vector<PromptImage> images = {});
  // add_request_n for a request with n = 1 (throws lumen::Error when params.n > 1).
  RequestHandle add_request(std::vector<int32_t> prompt, const SamplingParams& params, int priority = 0,
                            uint64_t cache_salt = 0, uint64_t client = 0);
  // Ends the request (every completion) at the next step with FinishReason::Abort; unknown
  // ids are ignored.
  void abort(uint64_t request_id);
  // Runs one iteration. Returns false when there was nothing to do.
  bool step();
  // Whether any request is queued or running.
  bool has_unfinished() const;
  // Sleeps until a request arrives or the timeout passes (for a loop thread with nothing to do).
  void wait_for_work(std::chrono::milliseconds timeout);
  // Submits every prompt and steps until all are done (for batch use; call from the thread
  // that drives the engine). Returns params.n results per prompt: result p * n + i is
  // completion i of prompt p.
  std::vector<GenerationResult> generate(const std::vector<std::vector<int32_t>>& prompts,
                                         const SamplingParams& params);
  EngineStats stats() const;
  const EngineConfig& config() const;

  // An image file encoded by the model's image encoder (Model::image_encoder), or taken from
  // the feature cache when the same bytes were encoded before: its content hash (SHA-256 of the
  // bytes, the first 128 bits) and the encoder's output, shared with the cache. Runs on the
  // caller's thread. Throws lumen::Error when the model has no image encoder, or the encoder
  // refuses the file or returns a layout that does not cover its features.
  struct ImageFeatures {
    ImageContentHash content_hash{};
    std::shared_ptr<const EncodedImage> encoded;
  };
  ImageFeatures encode_image(std::span<const uint8_t> file);

  // Embeddings: each input's final hidden states (after the output norm, not logits) pooled as
  // the model's {arch}.pooling_type says (mean, CLS or last token; a file without one, a decoder,
  // pools the last token: src/model/pooling.h) and L2-normalised, one vector of
  // embedding_length per input, in input order. Run on the thread that steps the engine, at its
  // next step: the inputs of every embed() call since the last step go through the model
  // together as one flat batch of separate sequences (several batches when they outgrow
  // max_num_batched_tokens or the free KV blocks), whose K/V is dropped when the pass ends.
  // Throws lumen::Error at once (computing nothing) for no inputs, an empty input, a token
  // outside the vocabulary or an input longer than max_model_len; the future holds one when even
  // a single input finds no room in the KV cache, and under tensor or pipeline parallelism.
  std::future<std::vector<std::vector<float>>> embed(std::vector<std::vector<int32_t>> inputs);
  // The width of embed()'s vectors (the model's embedding_length) and how it pools.
  int64_t embedding_dimensions() const;
  std::string_view embedding_pooling() const;

  // Disaggregated prefill and decode: lumen/prompt_kv_exchange.h.

 private:
  friend struct EngineTestAccess;
  friend class PromptKvExchange;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Tensor and pipeline parallelism (ModelOptions::tensor_parallel_size, pipeline_parallel_size):
// what every process but rank 0 does
// with its Model. Rank 0 runs Engines as usual; this follows each of them in turn (building its
// share of the KV cache, running its share of every step) and returns when rank 0's Model is
// released. A model of one process returns at once. Throws lumen::Error when MPI fails.
void follow_model_parallel_leader(const Model& model);

}  // namespace lumen
