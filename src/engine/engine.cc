// The engine's loop: drain what other threads submitted, schedule, run one flat batch, sample,
// stream, finish. Everything below `step()` runs on the one thread that drives the engine;
// add_request / abort only touch the inbox under its mutex.
#include "engine/engine_impl.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>

#include "engine/reduced_rows.h"
#include "engine/prompt_images.h"
#include "util/error.h"

namespace lumen {

namespace {

using engine::Completion;
using engine::GroupMode;
using engine::RequestGroup;

// The most completions one request may ask for (n, best_of, beam width).
constexpr int32_t kMaxCompletions = 256;

}  // namespace

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<RequestGroup>> arrived;
  std::vector<uint64_t> to_abort;
  std::vector<std::function<void()>> to_run;
  std::vector<EmbedJob> to_embed;
  {
    std::lock_guard lock(inbox_mutex);
    arrived.swap(inbox);
    to_abort.swap(aborts);
    to_run.swap(tasks);
    to_embed.swap(embed_jobs);
  }
  // First: an import of a prompt's K/V was queued before the request that adopts it.
  for (auto& task : to_run) task();
  if (!to_embed.empty()) queue_embeddings(to_embed);
  for (auto& group : arrived) {
    group->completions.front()->seq.arrival = arrivals++;
    outputs.admit(std::move(group));
  }
  for (uint64_t id : to_abort) outputs.abort(id);
}

void Engine::Impl::fail_non_finite(const engine::StepPlan& plan, std::span<float> logits) {
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  const std::vector<engine::ChunkLogits>& rows = runner.chunk_logits();
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const uint64_t id = plan.chunks[i].seq->id;
    const auto n_rows = static_cast<size_t>(rows[i].n_prompt_rows + rows[i].n_sample_rows());
    const std::optional<uint64_t> request = outputs.request_of(id);
    if (n_rows == 0 || !request) continue;
    const std::span<float> own = logits.subspan(static_cast<size_t>(rows[i].first_row) * vocab, n_rows * vocab);
    try {
      if (logits_hook) logits_hook(*request, own);
    } catch (const std::exception& e) {
      outputs.fail_request(id, e.what());
      continue;
    }
    // A reduced row says itself whether it was finite; its logits may not be there.
    const bool reduced = rows[i].form != backend::RowForm::Whole;
    bool finite = engine::all_finite(reduced ? own.first(static_cast<size_t>(rows[i].n_prompt_rows) * vocab) : own);
    for (int64_t r = 0; reduced && r < rows[i].n_sample_rows(); ++r) {
      finite = finite && runner.row_finite(static_cast<size_t>(rows[i].sample_row() + r));
    }
    if (!finite) outputs.fail_request(id, "the model produced non-finite logits (NaN or infinity)");
  }
}

void EngineTestAccess::set_logits_hook(Engine& engine, LogitsHook hook) { engine.impl_->logits_hook = std::move(hook); }

void EngineTestAccess::set_poison_reduced_rows(Engine& engine, bool on) {
  engine.impl_->runner.set_poison_reduced_rows(on);
}

uint64_t EngineTestAccess::argmax_rows(const Engine& engine) { return engine.impl_->runner.argmax_rows(); }

uint64_t EngineTestAccess::leading_rows(const Engine& engine) { return engine.impl_->runner.leading_rows(); }

uint64_t EngineTestAccess::rows_brought_back(const Engine& engine) { return engine.impl_->runner.rows_brought_back(); }

void EngineTestAccess::set_mask_job_hook(Engine& engine, engine::MaskWorkers::JobHook hook) {
  engine.impl_->outputs.set_mask_job_hook(std::move(hook));
}

void EngineTestAccess::set_proposer(Engine& engine, std::unique_ptr<spec::Proposer> proposer) {
  engine.impl_->speculation.set_proposer(std::move(proposer));
}

Engine::Engine(Model model, EngineConfig config) : impl_(std::make_unique<Impl>(std::move(model), config)) {}

Engine::~Engine() {
  // Whoever still waits on a stream learns that the request ended.
  impl_->outputs.abort_all();
  std::lock_guard lock(impl_->inbox_mutex);
  for (auto& group : impl_->inbox) {
    for (auto& stream : group->streams) stream->finish(FinishReason::Abort);
  }
}

const EngineConfig& Engine::config() const { return impl_->config; }

std::vector<RequestHandle> Engine::add_request_n(std::vector<int32_t> prompt, const SamplingParams& params,
                                                 int priority, uint64_t cache_salt, uint64_t client,
                                                 std::vector<PromptImage> images) {
  if (impl_->model.transformer->architecture().features.encoder) {
    fail("the {} model is an encoder: it computes embeddings (/v1/embeddings, lumen embed), not text",
         impl_->model.hparams.architecture);
  }
  const auto vocab = static_cast<int64_t>(impl_->model.hparams.vocab_size);
  params.validate_for_vocab(vocab);
  const int32_t width = params.best_of.value_or(params.n);
  if (width > kMaxCompletions) fail("n and best_of may be at most {} (got {})", kMaxCompletions, width);
  if (params.use_beam_search && !params.stop.empty()) {
    fail("stop strings are not supported with beam search (stop_token_ids are)");
  }
  if (prompt.empty()) fail("the prompt is empty");
  for (int32_t token : prompt) {
    if (token < 0 || token >= vocab) fail("token id {} is outside the vocabulary [0, {})", token, vocab);
  }
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  if (prompt_len >= impl_->max_model_len) {
    fail("the prompt has {} tokens; the context holds {} (prompt and output together)",
         prompt.size(), impl_->max_model_len);
  }
  if (params.kv_eviction && params.kv_eviction->enabled()) impl_->check_kv_importance(*params.kv_eviction);
  const KvImportance importance = params.kv_eviction.value_or(impl_->config.kv_importance);
  if (!images.empty()) {
    engine::check_prompt_images(images, prompt_len, static_cast<int64_t>(impl_->model.hparams.embedding_length));
    if (impl_->leader) fail("images are not supported with tensor, pipeline or expert parallelism yet");
    if (importance.enabled()) fail("kv eviction (snapkv, h2o) is not supported with images in the prompt");
    if (impl_->images_attend_both_ways()) {
      engine::check_whole_image_spans(images, impl_->scheduler.config().max_num_batched_tokens);
    }
  }
  if (params.use_beam_search && params.kv_eviction.value_or(impl_->config.kv_importance).enabled()) {
    fail("kv eviction (snapkv, h2o) is not supported with beam search");
  }
  // Compiled here, on the caller's thread: an invalid constraint is the caller's error.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  if (params.structured_outputs) grammar = impl_->grammars.compile(*params.structured_outputs);
  const uint64_t id = impl_->next_id.fetch_add(1);
  auto group = std::make_unique<RequestGroup>(id, params, impl_->max_model_len - prompt_len,
                                              impl_->model.tokenizer.vocab().end_of_generation);
  group->grammar = std::move(grammar);
  auto first = std::make_unique<Completion>(*group, id, std::move(prompt), priority, impl_->kv_space,
                                            kv::mix64(impl_->hash_key ^ cache_salt), impl_->model.tokenizer);
  first->seq.seats = width;
  first->seq.client = client;
  // A shift would move image positions whose K/V cannot be recomputed from tokens alone.
  first->seq.may_shift = impl_->scheduler.shift_policy().enabled && group->mode != GroupMode::Beam && images.empty();
  first->seq.importance.config = importance;
  if (!images.empty()) {
    first->seq.blocks.salt_blocks(engine::image_block_salts(images, impl_->config.block_size));
    first->seq.images = std::make_shared<const engine::PromptImages>(std::move(images));
    first->seq.images_both_ways = impl_->images_attend_both_ways();
  }
  if (params.prompt_logprobs) {
    first->seq.next_prompt_logit = 0;
    if (!first->seq.wants_prompt_logits()) {
      // A one-token prompt: its only entry has no log-probability, known now.
      group->prompt_logprobs.push_back({first->seq.tokens[0], std::numeric_limits<float>::quiet_NaN(), {}});
      for (auto& stream : group->streams) stream->set_prompt_logprobs(group->prompt_logprobs);
    }
  }
  if (group->mode == GroupMode::Beam) {
    group->beams = {first.get()};
    group->beam_logits.assign(1, {});
    group->beam_has_logits.assign(1, false);
  }
  group->completions.push_back(std::move(first));
  group->n_running = 1;
  std::vector<RequestHandle> handles;
  for (int32_t i = 0; i < params.n; ++i)
    handles.push_back(RequestHandle(id, i, group->streams[static_cast<size_t>(i)]));
  {
    std::lock_guard lock(impl_->inbox_mutex);
    impl_->inbox.push_back(std::move(group));
    impl_->unfinished.fetch_add(1);
  }
  impl_->work_arrived.notify_all();
  return handles;
}

RequestHandle Engine::add_request(std::vector<int32_t> prompt, const SamplingParams& params, int priority,
                                  uint64_t cache_salt, uint64_t client) {
  if (params.n != 1) fail("add_request makes one completion; use add_request_n for n = {}", params.n);
  return add_request_n(std::move(prompt), params, priority, cache_salt, client).front();
}

void Engine::abort(uint64_t request_id) {
  {
    std::lock_guard lock(impl_->inbox_mutex);
    impl_->aborts.push_back(request_id);
  }
  impl_->work_arrived.notify_all();
}

bool Engine::has_unfinished() const { return impl_->unfinished.load() > 0; }

void Engine::wait_for_work(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->inbox_mutex);
  impl_->work_arrived.wait_for(lock, timeout, [this] {
    return !impl_->inbox.empty() || !impl_->aborts.empty() || !impl_->tasks.empty() || !impl_->embed_jobs.empty() ||
           impl_->mask_ready.load();
  });
}

// Faults are contained to the requests they touch: an exception from the forward pass (a
// kernel's argument check, an allocation) cannot be pinned on one request of the flat batch, so
// every request in the batch ends with FinishReason::Error; non-finite logits, and any exception
// while a request's logits are processed (sampling, log-probabilities, stop strings), end only
// that request. Either way its blocks go back, nothing the failed pass wrote is published to the
// prefix cache, and the engine goes on with the others.
bool Engine::step() {
  Impl& m = *impl_;
  m.drain_inbox();
  m.mask_ready.store(false);
  // Rows kept for a late grammar mask are sampled first: their sequences can run in this step.
  const bool resumed = m.outputs.resume_deferred();
  // One pass of queued embeddings, then the step (engine_embeddings.cc).
  const bool embedded = m.embed_one_pass();
  // Timed from before the proposer runs: a stream waits the whole step between tokens (ITL-aware
  // scheduling), and a draft model's passes cost per draft token much as the verification's
  // extra rows do, so the draft length is chosen from both (below).
  const auto step_started = std::chrono::steady_clock::now();
  if (m.speculation.enabled()) {
    m.speculation.propose(m.outputs.live_sequences(), static_cast<int64_t>(m.scheduler.n_running()), m.max_model_len);
  }
  engine::StepPlan plan = m.scheduler.schedule();
  for (engine::Sequence* seq : plan.out_of_blocks) m.outputs.out_of_blocks(seq->id);
  if (!plan.empty()) {
    m.outputs.mark_scheduled(plan);
    std::span<float> logits;
    std::string fault;
    // Structured output: the grammar masks of the rows about to be sampled are computed beside
    // the forward pass (each mask depends only on tokens already accepted).
    m.outputs.start_masks(plan);
    // Rows whose draw needs only part of them come back reduced (reduced_rows.h); a test's
    // logits hook sees whole rows.
    m.chunk_forms.clear();
    if (!m.logits_hook) m.outputs.choose_row_forms(plan, m.chunk_forms);
    const auto forward_started = std::chrono::steady_clock::now();
    try {
      logits = m.runner.run(plan, m.chunk_forms);
    } catch (const std::exception& e) {
      fault = e.what();
      if (fault.empty()) fault = "unknown error";
    }
    // A mask may finish a little after the pass (a quarter of its time, at least 2 ms: ordinary
    // masks take well under a millisecond); one later than that is a slow grammar's, and its
    // sequence sits out rather than hold everyone's step (deferred_sampling.cc).
    const auto forward_ended = std::chrono::steady_clock::now();
    m.forward_seconds += std::chrono::duration<double>(forward_ended - forward_started).count();
    m.outputs.set_mask_deadline(forward_ended +
                                std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(2),
                                                                              (forward_ended - forward_started) / 4));
    if (!fault.empty()) {
      m.scheduler.abandon(plan);
      m.outputs.fail_batch(plan, "the forward pass failed: " + fault);
    } else {
      // What a draft token costs, learned from single-sequence decode steps (spec/step_cost.h).
      // Rows beyond the sequence's own count alike, draft or the proposer's (lookahead's window).
      if (m.speculation.enabled() && plan.chunks.size() == 1 && plan.chunks[0].samples &&
          plan.chunks[0].n_known() == 1) {
        m.speculation.record_step(
            plan.chunks[0].n_draft + plan.chunks[0].n_extra,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - step_started).count());
      }
      m.fail_non_finite(plan, logits);  // before complete() publishes their blocks
      m.scheduler.complete(plan);
      // Before the slots run again: the states that just ended a prompt's block.
      m.runner.save_state_snapshots(m.scheduler.take_state_snapshots());
      if (m.prompt_kv_store) m.keep_completed_prompts(plan);
      m.computed_tokens += static_cast<uint64_t>(plan.n_tokens);
      ++m.steps;
      m.outputs.process(plan, m.runner, logits);
      // The first step pays one-time costs (weights repacked at first use): not a sample.
      if (m.config.max_itl_ms > 0 && m.steps > 1) {
        const auto elapsed = std::chrono::steady_clock::now() - step_started;
        m.step_time.record(plan.shape, std::chrono::duration<double>(elapsed).count());
      }
    }
  }
  m.outputs.drop_ended();
  if (!plan.empty())
    m.step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_started).count();
  m.publish_stats();
  if (plan.empty() && !resumed && m.outputs.has_deferred()) {
    // Only late masks are left: wait for one (or a new request) rather than spin.
    wait_for_work(std::chrono::milliseconds(5));
    return true;
  }
  return resumed || embedded || !plan.empty() || !plan.out_of_blocks.empty();
}

std::vector<GenerationResult> Engine::generate(const std::vector<std::vector<int32_t>>& prompts,
                                               const SamplingParams& params) {
  std::vector<RequestHandle> handles;
  handles.reserve(prompts.size() * static_cast<size_t>(params.n));
  for (const auto& prompt : prompts) {
    for (RequestHandle& h : add_request_n(prompt, params)) handles.push_back(std::move(h));
  }
  std::vector<GenerationResult> results(handles.size());
  std::vector<bool> done(handles.size(), false);
  size_t n_done = 0;
  while (n_done < handles.size()) {
    step();
    for (size_t i = 0; i < handles.size(); ++i) {
      // After a step every request of ours is live or ended; an ended one's streams hold all
      // its output, so draining them does not block.
      if (done[i] || impl_->outputs.has_request(handles[i].id())) continue;
      results[i] = handles[i].collect();
      done[i] = true;
      ++n_done;
    }
  }
  return results;
}



}  // namespace lumen
