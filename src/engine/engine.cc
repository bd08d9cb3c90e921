// The engine's loop: drain what other threads submitted, schedule, run one flat batch, sample,
// stream, finish. Everything below `step()` runs on the one thread that drives the engine;
// add_request / abort only touch the inbox under its mutex.
#include "lumen/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <future>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <mutex>
#include <unordered_map>

#include "engine/draft_proposers.h"
#include "engine/engine_test_access.h"
#include "engine/kv_budget.h"
#include "engine/kv_cache_dtype.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "engine/model_state.h"
#include "engine/output_processor.h"
#include "engine/request_group.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "engine/speculation.h"
#include "engine/step_time_model.h"
#include "engine/structured_output.h"
#include "engine/model_parallel.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "sampling/stop_string_matcher.h"
#include "spec/speculative_config.h"
#include "tokenizer/streaming_detokenizer.h"
#include "util/error.h"

namespace lumen {

RequestHandle::RequestHandle(uint64_t id, int32_t index, std::shared_ptr<engine::RequestStream> stream)
    : id_(id), index_(index), stream_(std::move(stream)) {}

bool RequestHandle::next(StreamChunk& out) { return stream_->next(out); }

bool RequestHandle::try_next(StreamChunk& out) { return stream_->try_next(out); }

GenerationResult RequestHandle::collect() {
  GenerationResult result;
  result.request_id = id_;
  result.index = index_;
  StreamChunk chunk;
  while (next(chunk)) {
    if (!chunk.prompt_logprobs.empty()) result.prompt_logprobs = std::move(chunk.prompt_logprobs);
    for (const GeneratedToken& t : chunk.tokens) {
      result.text += t.text;
      result.tokens.push_back(t.token);
      result.logprobs.push_back(t.logprob);
      result.top_logprobs.push_back(t.top);
    }
    if (chunk.finished) {
      result.finish = chunk.finish_reason;
      result.error = chunk.error;
    }
  }
  return result;
}

namespace {

using engine::Completion;

// The longest sequence the model's positions were trained or scaled for: the file's context
// length, or, for linear and YaRN scaling, the original context times the factor when that is
// larger. llama3-style scaling's files already give the extended context as context_length.
int64_t trained_context(const model::HParams& hparams) {
  int64_t tokens = static_cast<int64_t>(hparams.context_length);
  const model::RopeScaling& scaling = hparams.rope_scaling;
  const bool stretches = scaling.type == "linear" || scaling.type == "yarn";
  if (stretches && scaling.original_context_length > 0 && scaling.factor > 1.0) {
    tokens = std::max(tokens, static_cast<int64_t>(static_cast<double>(scaling.original_context_length) * scaling.factor));
  }
  return tokens;
}
using engine::GroupMode;
using engine::RequestGroup;

// The most completions one request may ask for (n, best_of, beam width).
constexpr int32_t kMaxCompletions = 256;


}  // namespace

struct Engine::Impl {
  Impl(Model model_handle, EngineConfig engine_config)
      : handle(std::move(model_handle)),
        model(runnable(handle)),
        config(checked(engine_config)),
        // The transformer's: a tensor-parallel shard caches its own heads only, a pipeline stage
        // its own layers.
        layout(model.transformer->kv_layout(config.free_out_of_window_kv)),
        n_blocks(engine::kv_blocks_for(config, model.transformer->hparams(), layout, *handle.state().backend)),
        cache(*handle.state().backend, model.transformer->hparams(), layout, n_blocks, config.block_size,
              engine::kv_tensor_type(config.kv_cache_dtype), config.kv_cache_rotation),
        pool(static_cast<int32_t>(n_blocks), config.block_size, config.enable_prefix_caching),
        kv_space(make_kv_space()),
        swap(make_swap_space()),
        scheduler(scheduler_config(), pool, swap.get()),
        runner(*model.transformer, cache, swap.get()) {
    if (engine::ModelParallelGroup* group = handle.state().parallel.get()) {
      leader = std::make_unique<engine::ModelParallelLeader>(
          *group, engine::ShardCacheGeometry{n_blocks, config.block_size, config.kv_cache_dtype, config.kv_cache_rotation,
                                             config.free_out_of_window_kv, swap ? swap->n_slots() : 0});
      runner.set_leader(leader.get());
    }
    if (kv_space.null_block >= 0) runner.zero_block(kv_space.null_block);
    const int64_t trained = trained_context(model.hparams);
    if (config.max_model_len > 0 && trained > 0 && config.max_model_len > trained) {
      // As vLLM: positions past the trained (or rope-scaled) context give garbage, not errors.
      fail("max_model_len {} exceeds the model's context of {} tokens (its training context{})",
           config.max_model_len, trained,
           model.hparams.rope_scaling.type == "none" ? "" : ", rope scaling included");
    }
    const int64_t pool_tokens = layout.max_tokens(pool.n_available(), config.block_size);
    int64_t limit = config.max_model_len > 0 ? config.max_model_len : trained;
    if (limit <= 0) limit = pool_tokens;
    max_model_len = std::min(limit, pool_tokens);
    scheduler.set_shift_policy(shift_policy());
    if (config.speculative.num_candidates > 1) {
      // Token trees: a tree attention mask, and the accepted branch's K/V moved position by
      // position (in each layer group's blocks).
      if (!handle.state().backend->supports_tree_attention()) {
        fail("speculative config: num_candidates > 1 (token trees) needs tree attention, which the {} backend does "
             "not have", handle.state().backend->name());
      }
      outputs.set_kv_cache(&runner);
    }
    if (config.max_itl_ms > 0) {
      scheduler.limit_step_time(step_time, config.max_itl_ms / 1000.0, config.min_prefill_tokens);
    }
    publish_stats();
  }

  // Context shift and StreamingLLM (engine/context_shift.h), checked against the model and the
  // context once max_model_len is known.
  engine::ContextShiftPolicy shift_policy() const {
    engine::ContextShiftPolicy policy;
    policy.enabled = config.context_overflow == ContextOverflow::Shift || config.kv_window_tokens > 0;
    if (!policy.enabled) return policy;
    if (layout.n_groups() != 1) {
      fail("context shift is not supported with sliding-window layers that keep only their window "
           "(free_out_of_window_kv false, --keep-out-of-window-kv, keeps every position)");
    }
    policy.keep_tokens = config.context_keep_tokens;
    policy.window_tokens = config.kv_window_tokens;
    policy.max_model_len = max_model_len;
    const int64_t bs = config.block_size;
    if (config.context_keep_tokens < 0 || config.kv_window_tokens < 0) fail("context keep and window tokens must be >= 0");
    if (config.kv_window_tokens > 0 && config.kv_window_tokens < bs) {
      fail("the KV window ({} tokens) must hold at least one block of {}", config.kv_window_tokens, bs);
    }
    const int64_t keep = (config.context_keep_tokens + bs - 1) / bs * bs;
    if (keep + 2 * bs > max_model_len || engine::positions_held(policy, bs) > max_model_len) {
      fail("the context of {} tokens leaves no room to shift: {} kept{}", max_model_len, keep,
           config.kv_window_tokens > 0 ? fmt::format(", a window of {}", config.kv_window_tokens) : "");
    }
    return policy;
  }

  // The configuration with its speculative part validated and vLLM's defaults filled in, before
  // anything is allocated.
  static EngineConfig checked(EngineConfig c) {
    c.speculative = spec::resolved(c.speculative);
    if (!(c.max_itl_ms >= 0) || !std::isfinite(c.max_itl_ms)) {
      fail("max_itl_ms must be 0 (off) or a positive number of milliseconds (got {})", c.max_itl_ms);
    }
    if (c.min_prefill_tokens <= 0) fail("min_prefill_tokens must be positive (got {})", c.min_prefill_tokens);
    return c;
  }

  static engine::LoadedModel& runnable(const Model& handle) {
    engine::LoadedModel& loaded = *handle.state().model;
    if (!loaded.transformer) fail("the model was loaded without its weights (vocab_only): an Engine cannot run it");
    return loaded;
  }

  // Windowed layers point their dropped blocks at one block held for good, zeroed so that a
  // kernel that reads it anyway sees finite numbers.
  kv::KvSpace make_kv_space() {
    kv::KvSpace space{&pool, &layout, -1};
    // (zeroed through the runner once it exists: under tensor parallelism every rank zeroes it)
    if (layout.has_windows()) space.null_block = *pool.allocate();
    return space;
  }

  std::unique_ptr<engine::SwapSpace> make_swap_space() const {
    if (config.preemption_mode != PreemptionMode::Swap) return nullptr;
    const size_t slot_bytes = cache.block_host_bytes();
    const auto slots = static_cast<int64_t>(static_cast<uint64_t>(std::max<int64_t>(config.swap_space_bytes, 0)) / slot_bytes);
    if (slots == 0) fail("a swap space of {} bytes holds no block of {} bytes", config.swap_space_bytes, slot_bytes);
    return std::make_unique<engine::SwapSpace>(slots, slot_bytes);
  }

  engine::SchedulerConfig scheduler_config() const {
    engine::SchedulerConfig sc;
    sc.max_num_seqs = config.max_num_seqs;
    sc.max_num_batched_tokens = config.max_num_batched_tokens;
    sc.policy = config.policy;
    sc.watermark_blocks = std::max<int32_t>(
        1, static_cast<int32_t>(config.watermark * static_cast<double>(n_blocks)));
    return sc;
  }

  void drain_inbox();
  // Copies the counters for other threads (stats() may be called from anywhere).
  void publish_stats();
  // Ends the requests whose logit rows hold NaN or infinity, before their blocks are published
  // (fault containment, see step()).
  void fail_non_finite(const engine::StepPlan& plan, std::span<float> logits);

  Model handle;  // keeps the model (and the device its weights are on) alive
  engine::LoadedModel& model;
  EngineConfig config;
  kv::KvLayout layout;
  int64_t n_blocks;
  model::KvCache cache;
  kv::BlockPool pool;
  kv::KvSpace kv_space;
  std::unique_ptr<engine::SwapSpace> swap;
  engine::Scheduler scheduler;
  engine::ModelRunner runner;
  // Tensor parallelism's rank 0: the other ranks build this engine's cache and follow its steps
  // until it goes (null in one process).
  std::unique_ptr<engine::ModelParallelLeader> leader;
  // ITL-aware scheduling's cost model: fed each step's measured time when max_itl_ms is set.
  engine::StepTimeModel step_time;
  // Structured outputs' compiled grammars, shared by submitting threads (it locks).
  engine::GrammarCompiler grammars{model.tokenizer};
  int64_t max_model_len = 0;
  // Mixed into every request's cache salt, so block hashes are keyed per process: nobody can
  // precompute prompts whose blocks collide in the prefix cache's table.
  const uint64_t hash_key = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();

  // Shared with submitting threads.
  mutable std::mutex inbox_mutex;
  std::condition_variable work_arrived;
  std::vector<std::unique_ptr<RequestGroup>> inbox;
  std::vector<uint64_t> aborts;
  std::atomic<uint64_t> next_id{1};
  std::atomic<int64_t> unfinished{0};

  // The loop thread's own.
  engine::Speculation speculation{config.speculative,
                                  engine::make_proposer(config.speculative, model, *handle.state().backend,
                                                        static_cast<int32_t>(n_blocks), config.block_size),
                                  config.jump_forward, model.tokenizer};
  engine::OutputProcessor outputs{scheduler,     speculation, model.tokenizer,    next_id,
                                  unfinished,    max_model_len, runner.vocab_size()};
  uint64_t arrivals = 0;
  uint64_t computed_tokens = 0;
  uint64_t steps = 0;
  engine::EngineTestAccess::LogitsHook logits_hook;  // tests only

  mutable std::mutex stats_mutex;
  EngineStats snapshot;
};

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<RequestGroup>> arrived;
  std::vector<uint64_t> to_abort;
  {
    std::lock_guard lock(inbox_mutex);
    arrived.swap(inbox);
    to_abort.swap(aborts);
  }
  for (auto& group : arrived) {
    group->completions.front()->seq.arrival = arrivals++;
    outputs.admit(std::move(group));
  }
  for (uint64_t id : to_abort) outputs.abort(id);
}

namespace {

// NaN and infinities are the floats whose exponent bits are all ones. Branch-free, so the
// compiler vectorizes it: a pass over a row costs about what sampling's first pass does.
bool all_finite(std::span<const float> values) {
  uint32_t bad = 0;
  for (const float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

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
    if (!all_finite(own)) outputs.fail_request(id, "the model produced non-finite logits (NaN or infinity)");
  }
}

void engine::EngineTestAccess::set_logits_hook(Engine& engine, LogitsHook hook) {
  engine.impl_->logits_hook = std::move(hook);
}

void engine::EngineTestAccess::set_proposer(Engine& engine, std::unique_ptr<spec::Proposer> proposer) {
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
                                                 int priority, uint64_t cache_salt) {
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
  first->seq.may_shift = impl_->scheduler.shift_policy().enabled && group->mode != GroupMode::Beam;
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
  for (int32_t i = 0; i < params.n; ++i) handles.emplace_back(id, i, group->streams[static_cast<size_t>(i)]);
  {
    std::lock_guard lock(impl_->inbox_mutex);
    impl_->inbox.push_back(std::move(group));
    impl_->unfinished.fetch_add(1);
  }
  impl_->work_arrived.notify_all();
  return handles;
}

RequestHandle Engine::add_request(std::vector<int32_t> prompt, const SamplingParams& params,
                                  int priority, uint64_t cache_salt) {
  if (params.n != 1) fail("add_request makes one completion; use add_request_n for n = {}", params.n);
  return add_request_n(std::move(prompt), params, priority, cache_salt).front();
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
    return !impl_->inbox.empty() || !impl_->aborts.empty();
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
    std::future<void> masks = engine::prepare_grammar_masks(plan, m.outputs.live_sequences(),
                                                            static_cast<size_t>(m.runner.vocab_size()));
    try {
      logits = m.runner.run(plan);
    } catch (const std::exception& e) {
      fault = e.what();
      if (fault.empty()) fault = "unknown error";
    }
    if (masks.valid()) masks.get();  // prepare() does not throw past the task (see there)
    if (!fault.empty()) {
      m.scheduler.abandon(plan);
      m.outputs.fail_batch(plan, "the forward pass failed: " + fault);
    } else {
      // What a draft token costs, learned from single-sequence decode steps (spec/step_cost.h).
      if (m.speculation.enabled() && plan.chunks.size() == 1 && plan.chunks[0].samples &&
          plan.chunks[0].n_tokens - plan.chunks[0].n_draft == 1) {
        m.speculation.record_step(plan.chunks[0].n_draft,
                                  std::chrono::duration<double>(std::chrono::steady_clock::now() - step_started).count());
      }
      m.fail_non_finite(plan, logits);  // before complete() publishes their blocks
      m.scheduler.complete(plan);
      m.computed_tokens += static_cast<uint64_t>(plan.n_tokens);
      ++m.steps;
      m.outputs.process(plan, m.runner.chunk_logits(), logits);
      // The first step pays one-time costs (weights repacked at first use): not a sample.
      if (m.config.max_itl_ms > 0 && m.steps > 1) {
        const auto elapsed = std::chrono::steady_clock::now() - step_started;
        m.step_time.record(plan.shape, std::chrono::duration<double>(elapsed).count());
      }
    }
  }
  m.outputs.drop_ended();
  m.publish_stats();
  return !plan.empty() || !plan.out_of_blocks.empty();
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

void Engine::Impl::publish_stats() {
  const Impl& m = *this;
  EngineStats s;
  s.running = static_cast<int64_t>(m.scheduler.n_running());
  s.waiting = static_cast<int64_t>(m.scheduler.n_waiting());
  // The null block is held for good and holds nothing: not counted.
  const int64_t null_blocks = m.kv_space.null_block >= 0 ? 1 : 0;
  s.kv_blocks_total = m.n_blocks - null_blocks;
  s.kv_blocks_used = m.pool.n_used() - null_blocks;
  for (const auto& [id, completion] : m.outputs.live_sequences()) {
    const engine::Sequence& seq = completion->seq;
    // In positions of every layer: a page holds group_size of the model's layers, and a
    // windowed group holds only its window's positions.
    const int64_t n_layers = m.layout.n_layers_held();
    s.kv_slots_allocated += seq.blocks.n_held_blocks() * m.config.block_size * m.layout.group_size / n_layers;
    s.kv_slots_filled += seq.blocks.n_held_positions(seq.n_computed) * m.layout.group_size / n_layers;
  }
  s.kv_cache_bytes = m.cache.bytes();
  const kv::PrefixCacheCounters& c = m.pool.counters();
  s.prefix_queried_blocks = c.queried_blocks;
  s.prefix_hit_blocks = c.hit_blocks;
  s.prefix_evictions = c.evictions;
  s.computed_tokens = m.computed_tokens;
  s.generated_tokens = m.outputs.generated_tokens();
  s.preemptions = m.scheduler.n_preemptions();
  s.swapped_out_blocks = m.scheduler.n_swapped_out_blocks();
  s.context_shifts = m.scheduler.n_context_shifts();
  s.steps = m.steps;
  s.max_model_len = m.max_model_len;
  const engine::SpeculationCounters& spec = m.speculation.counters();
  s.spec_drafts = spec.drafts;
  s.spec_draft_tokens = spec.draft_tokens;
  s.spec_accepted_tokens = spec.accepted_tokens;
  s.spec_branch_tokens = spec.branch_tokens;
  std::lock_guard lock(stats_mutex);
  snapshot = s;
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lock(impl_->stats_mutex);
    s = impl_->snapshot;
  }
  // Submitted but not yet seen by the loop: waiting too.
  std::lock_guard lock(impl_->inbox_mutex);
  s.waiting += static_cast<int64_t>(impl_->inbox.size());
  return s;
}


}  // namespace lumen
