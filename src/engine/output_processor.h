#pragma once
// What becomes of a step's logits, and of the requests while they run. For each sequence the
// step computed: its prompt log-probabilities, then its next token — sampled and streamed
// (Sample), sampled and held until the best are chosen (BestOf), or kept until every beam has
// its logits and the search picks the next beams (Beam; request_group.h has the modes). It
// owns the running requests and every way they end: a stop, max_tokens, the context, an
// abort, an error, the KV cache running out.
//
// The engine's loop (engine.cc) decides what runs and hands the results here. Features that
// change what a row of logits turns into plug in here too: grammar masks before sampling,
// speculative verification of several rows per sequence.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/mask_workers.h"
#include "engine/model_runner.h"
#include "engine/request_group.h"
#include "engine/scheduler.h"
#include "engine/speculation.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace lumen::engine {

class OutputProcessor {
 public:
  // References the engine's own: its scheduler, the model's tokenizer, the sequence id counter
  // (forks take ids from it), the count of unfinished requests (which other threads read), and
  // max_model_len (which the engine sets once it knows its KV cache).
  // Speculative decoding's drafts are verified here and counted in `speculation`.
  OutputProcessor(Scheduler& scheduler, Speculation& speculation, const tokenizer::Tokenizer& tokenizer,
                  std::atomic<uint64_t>& next_id, std::atomic<int64_t>& unfinished, const int64_t& max_model_len,
                  int64_t vocab_size);

  // A submitted request starts: its first sequence goes to the scheduler.
  void admit(std::unique_ptr<RequestGroup> group);
  // Ends a request with FinishReason::Abort (unknown or ended ids are ignored).
  void abort(uint64_t request_id);
  // Ends every request with FinishReason::Abort (the engine is going away).
  void abort_all();

  // The requests the plan schedules for the first time learn how long they waited.
  void mark_scheduled(const StepPlan& plan);
  // A sequence the scheduler could not give a block: it ends at its length (a beam search
  // ends with what it has).
  void out_of_blocks(uint64_t sequence_id);
  // How each chunk of the plan wants its sampling rows back (reduced_rows.h), for
  // ModelRunner::run. A sequence gets a reduced form when it samples (its next token, or a
  // draft's rows to verify; no proposer's extra rows) for a plain sampling request (not
  // best-of, not a beam) whose sampler needs only part of the row (Sampler::row_need: the need
  // of a draft's first row holds for its others, accepted tokens only lift bans).
  void choose_row_forms(const StepPlan& plan, std::vector<ChunkForm>& forms) const;
  // The step's logits: the runner's chunk_logits()[i] says which rows belong to plan.chunks[i];
  // rows that came back reduced are sampled from their reductions (and brought back whole,
  // through the runner, only when the sampler needs them after all).
  void process(const StepPlan& plan, ModelRunner& runner, std::span<const float> logits);

  // Fault containment: ends the request a sequence belongs to with FinishReason::Error.
  void fail_request(uint64_t sequence_id, const std::string& error);
  // The forward pass of `plan` failed: every request in it ends with an error.
  void fail_batch(const StepPlan& plan, const std::string& error);

  // Drops the requests that ended during the step (at its end, when nothing refers to them);
  // one whose grammar mask is still being computed is kept until its job is done.
  void drop_ended();

  // Structured output off the loop thread (mask_workers.h, deferred_sampling.cc).
  // Starts the next grammar mask of every constrained sequence the plan samples, to run beside
  // the forward pass.
  void start_masks(const StepPlan& plan);
  // process() waits for a sampling row's mask until `deadline`; a sequence whose mask is later
  // than that keeps its row and sits out until it is ready.
  void set_mask_deadline(std::chrono::steady_clock::time_point deadline) { mask_deadline = deadline; }
  // Samples the kept rows whose masks are now ready; true if there was one.
  bool resume_deferred();
  bool has_deferred() const { return !deferred.empty(); }
  // Called on a mask worker after each mask it computed (the loop may be asleep).
  void on_mask_ready(std::function<void()> callback) { mask_ready_callback = std::move(callback); }
  void set_mask_job_hook(MaskWorkers::JobHook hook) { workers().set_job_hook(std::move(hook)); }
  // Rows sampled late because their mask was not ready in their step.
  uint64_t deferred_samples() const { return n_deferred_samples; }

  // The request a running sequence belongs to.
  std::optional<uint64_t> request_of(uint64_t sequence_id) const;
  bool has_request(uint64_t request_id) const { return groups.contains(request_id); }
  // Running or waiting sequences, by id.
  const std::unordered_map<uint64_t, Completion*>& live_sequences() const { return live; }
  uint64_t generated_tokens() const { return n_generated; }
  // The cache token-tree verification moves accepted K/V in.
  void set_kv_cache(ModelRunner* runner) { kv_cache = runner; }

 private:
  void record_prompt_logprobs(Completion& c, const ChunkLogits& rows, std::span<const float> logits);
  void on_logits(Completion& c, std::span<const float> row);
  void sample_and_emit(Completion& c, std::span<const float> row);
  // on_logits for a row that came back reduced (choose_row_forms chose its form): logit row
  // `row` of the runner's last run.
  void on_reduced(Completion& c, ModelRunner& runner, backend::RowForm form, size_t row);
  // The Leading rows whose candidates will not settle their draws, brought back whole together
  // (one copy from the device, not one per row), before any row is sampled.
  void bring_back_unsettled_rows(const StepPlan& plan, ModelRunner& runner);
  // A draw for `choice` from logit row `row`, which came back in `form`.
  sampling::SampleResult sample_reduced(Completion& choice, ModelRunner& runner, backend::RowForm form, size_t row);
  // Draws the next token from a chunk's sampling row j (row 0 after the last token, row 1 + i
  // after draft node i): from its logits, or from its argmax when the rows came back so.
  using RowSampler = std::function<sampling::SampleResult(size_t)>;
  // Speculative decoding (draft_verification.cc): `sample_row` draws from the 1 + draft.size()
  // rows, the first after the sequence's last token, each next one after the draft token before
  // it. `extra_rows`: the proposer's own rows the step computed beside the draft (their cost
  // counts in the sequence's break-even).
  void verify_draft(Completion& c, std::span<const int32_t> draft, const RowSampler& sample_row, int64_t extra_rows);
  // A token tree (draft_parents): one row per node after the last token's; the accepted
  // branch's K/V is moved to consecutive positions before the rest is rolled back.
  void verify_tree(Completion& c, std::span<const int32_t> draft, std::span<const int32_t> parents,
                   const RowSampler& sample_row, int64_t extra_rows);
  // Streams one sampled token (with its text) and says whether the completion ends with it.
  std::optional<FinishReason> emit(Completion& c, const sampling::SampleResult& result);
  Completion& fork(Completion& parent, int32_t index);
  // At a request's first sampled row: its other choices, forked from `c` (none after that).
  std::vector<Completion*> fork_choices(Completion& c);
  // Takes a completion out of the scheduler (its blocks are released).
  void retire(Completion& c, FinishReason reason);
  // One completion ends (Sample, BestOf).
  void finish_completion(Completion& c, FinishReason reason);
  void deliver_best_of(RequestGroup& g);
  void beam_logits(Completion& c, std::span<const float> row);
  void beam_round(RequestGroup& g);
  void deliver_beams(RequestGroup& g);
  // Ends every stream of the group (with `reason` where not yet ended) and retires it.
  void end_group(RequestGroup& g, FinishReason reason, const std::string& error = {});
  // The row's mask is ready: true, or false after `c` kept the row to be sampled once it is
  // (may_defer false waits for it, for draft verification, which needs every row at once).
  bool mask_ready_for(Completion& c, std::span<const float> row, bool may_defer);
  bool mask_job_running(const RequestGroup& g) const;
  MaskWorkers& workers();

  Scheduler& scheduler;
  Speculation& speculation;
  const tokenizer::Tokenizer& tokenizer;
  std::atomic<uint64_t>& next_id;
  std::atomic<int64_t>& unfinished;
  const int64_t& max_model_len;
  const int64_t vocab_size;
  // Where a verified token tree's accepted branch is moved into place (set_kv_cache): through
  // the runner, which owns every change to the KV cache.
  ModelRunner* kv_cache = nullptr;

  std::unordered_map<uint64_t, std::unique_ptr<RequestGroup>> groups;  // by request id
  std::unordered_map<uint64_t, Completion*> live;  // running or waiting, by sequence id
  std::vector<uint64_t> ended;  // groups to drop at the end of the step
  uint64_t n_generated = 0;
  sampling::SamplerWorkspace workspace;  // shared by every request's sampler (one loop thread)
  std::vector<sampling::Candidate> logprob_scratch;
  std::vector<sampling::TokenLogprob> logprob_top;
  std::vector<uint64_t> chunk_ids;
  std::vector<int32_t> unsettled_rows;  // bring_back_unsettled_rows' rows

  // Structured output off the loop thread.
  std::chrono::steady_clock::time_point mask_deadline{};
  std::vector<uint64_t> deferred;  // sequences holding a row until their mask is ready
  uint64_t n_deferred_samples = 0;
  std::function<void()> mask_ready_callback;
  // Ended requests whose mask jobs still run: the workers use their samplers until done.
  std::vector<std::unique_ptr<RequestGroup>> draining;
  // Last, so that it is destroyed first: its workers stop before any sampler they use goes.
  // Made at the first constrained request.
  std::unique_ptr<MaskWorkers> mask_workers;
};

}  // namespace lumen::engine
