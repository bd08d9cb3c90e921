// The engine's loop: drain what other threads submitted, schedule, run one flat batch, sample,
// stream, finish. Everything below `step()` runs on the one thread that drives the engine;
// add_request / abort only touch the inbox under its mutex.
#include "lumen/engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unordered_map>

#include "engine/kv_budget.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "kv/block_pool.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "sampling/stop_string_matcher.h"
#include "tokenizer/streaming_detokenizer.h"
#include "util/error.h"

namespace lumen {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
  }
  return "abort";
}

RequestHandle::RequestHandle(uint64_t id, std::shared_ptr<engine::RequestStream> stream)
    : id_(id), stream_(std::move(stream)) {}

bool RequestHandle::next(StreamChunk& out) { return stream_->next(out); }

namespace {

// One request inside the engine: the scheduler's sequence plus what sampling and streaming need.
struct Request {
  Request(uint64_t id, std::vector<int32_t> prompt, const SamplingParams& sampling, int priority,
          kv::BlockPool& pool, uint64_t cache_salt, const tokenizer::Tokenizer& tokenizer)
      : seq(id, std::move(prompt), priority, 0, pool, cache_salt),
        params(sampling),
        sampler(sampling, seq.tokens, tokenizer.vocab().end_of_generation),
        stop_condition(sampling, tokenizer.vocab().end_of_generation),
        detokenizer(tokenizer),
        stream(std::make_shared<engine::RequestStream>()) {
    if (!sampling.stop.empty()) stop_strings.emplace(sampling.stop);
  }

  engine::Sequence seq;
  SamplingParams params;
  sampling::Sampler sampler;
  sampling::TokenStopCondition stop_condition;
  tokenizer::StreamingDetokenizer detokenizer;
  std::optional<sampling::StopStringMatcher> stop_strings;
  std::shared_ptr<engine::RequestStream> stream;
};

// Everything a finished request's stream holds.
GenerationResult collect(RequestHandle& handle) {
  GenerationResult result;
  result.request_id = handle.id();
  StreamChunk chunk;
  while (handle.next(chunk)) {
    for (const GeneratedToken& t : chunk.tokens) {
      result.text += t.text;
      result.tokens.push_back(t.token);
      result.logprobs.push_back(t.logprob);
    }
    if (chunk.finished) result.finish = chunk.finish_reason;
  }
  return result;
}

}  // namespace

struct Engine::Impl {
  Impl(engine::LoadedModel& loaded, backend::Backend& backend, EngineConfig engine_config)
      : model(loaded),
        config(engine_config),
        n_blocks(engine::kv_blocks_for(config, model.hparams)),
        cache(backend, model.hparams, n_blocks, config.block_size),
        pool(static_cast<int32_t>(n_blocks), config.block_size, config.enable_prefix_caching),
        swap(make_swap_space()),
        scheduler(scheduler_config(), pool, swap.get()),
        runner(*model.transformer, cache, swap.get()) {
    const int64_t trained = static_cast<int64_t>(model.hparams.context_length);
    const int64_t pool_tokens = n_blocks * config.block_size;
    int64_t limit = config.max_model_len > 0 ? config.max_model_len : trained;
    if (limit <= 0) limit = pool_tokens;
    max_model_len = std::min(limit, pool_tokens);
    publish_stats();
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
  void finish_request(Request& request, FinishReason reason);
  void sample(const engine::StepPlan& plan, std::span<const float> logits);
  std::optional<FinishReason> emit(Request& request, const sampling::SampleResult& result);

  engine::LoadedModel& model;
  EngineConfig config;
  int64_t n_blocks;
  model::KvCache cache;
  kv::BlockPool pool;
  std::unique_ptr<engine::SwapSpace> swap;
  engine::Scheduler scheduler;
  engine::ModelRunner runner;
  int64_t max_model_len = 0;

  // Shared with submitting threads.
  mutable std::mutex inbox_mutex;
  std::condition_variable work_arrived;
  std::vector<std::unique_ptr<Request>> inbox;
  std::vector<uint64_t> aborts;
  std::atomic<uint64_t> next_id{1};
  std::atomic<int64_t> unfinished{0};

  // The loop thread's own.
  std::unordered_map<uint64_t, std::unique_ptr<Request>> live;
  uint64_t arrivals = 0;
  uint64_t computed_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t steps = 0;
  sampling::SamplerWorkspace workspace;  // shared by every request's sampler (one loop thread)

  mutable std::mutex stats_mutex;
  EngineStats snapshot;
};

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<Request>> arrived;
  std::vector<uint64_t> to_abort;
  {
    std::lock_guard lock(inbox_mutex);
    arrived.swap(inbox);
    to_abort.swap(aborts);
  }
  for (auto& request : arrived) {
    request->seq.arrival = arrivals++;
    scheduler.add(&request->seq);
    const uint64_t id = request->seq.id;
    live.emplace(id, std::move(request));
  }
  for (uint64_t id : to_abort) {
    if (auto it = live.find(id); it != live.end()) finish_request(*it->second, FinishReason::Abort);
  }
}

void Engine::Impl::finish_request(Request& request, FinishReason reason) {
  scheduler.remove(&request.seq);
  request.stream->finish(reason);
  unfinished.fetch_sub(1);
  live.erase(request.seq.id);  // destroys `request`
}

// Streams one sampled token (with its text) and says whether the request ends with it.
std::optional<FinishReason> Engine::Impl::emit(Request& request,
                                               const sampling::SampleResult& result) {
  request.sampler.accept(result.token);
  request.seq.tokens.push_back(result.token);
  ++generated_tokens;
  GeneratedToken out{result.token, result.logprob, {}, request.detokenizer.push(result.token)};
  for (const auto& alt : result.top) out.top.push_back({alt.token, alt.logprob});
  const bool stop_strings_apply = request.stop_condition.past_min_tokens();
  std::optional<FinishReason> finish = request.stop_condition.check(result.token);
  if (request.stop_strings) {
    if (stop_strings_apply) {
      sampling::StopStringMatcher::Step step = request.stop_strings->push(out.text);
      out.text = std::move(step.text);
      if (step.stopped) finish = FinishReason::Stop;
    }
  }
  if (!finish && static_cast<int64_t>(request.seq.tokens.size()) >= max_model_len) {
    finish = FinishReason::Length;
  }
  if (finish && !(request.stop_strings && request.stop_strings->stopped())) {
    // The end of the stream: whatever was held back for a possible stop string or an
    // unfinished character goes out with the last token.
    std::string tail = request.detokenizer.flush();
    if (request.stop_strings) {
      sampling::StopStringMatcher::Step step = request.stop_strings->push(tail);
      tail = std::move(step.text) + request.stop_strings->flush();
    }
    out.text += tail;
  }
  request.stream->push(std::move(out));
  return finish;
}

void Engine::Impl::sample(const engine::StepPlan& plan, std::span<const float> logits) {
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  size_t row = 0;
  for (const engine::ScheduledChunk& chunk : plan.chunks) {
    if (!chunk.samples) continue;
    Request& request = *live.at(chunk.seq->id);
    const sampling::SampleResult result =
        request.sampler.sample(logits.subspan(row * vocab, vocab), workspace);
    ++row;
    if (std::optional<FinishReason> finish = emit(request, result)) finish_request(request, *finish);
  }
}

Engine::Engine(engine::LoadedModel& model, backend::Backend& backend, EngineConfig config)
    : impl_(std::make_unique<Impl>(model, backend, config)) {}

Engine::~Engine() {
  // Whoever still waits on a stream learns that the request ended.
  for (auto& [id, request] : impl_->live) request->stream->finish(FinishReason::Abort);
  std::lock_guard lock(impl_->inbox_mutex);
  for (auto& request : impl_->inbox) request->stream->finish(FinishReason::Abort);
}

const EngineConfig& Engine::config() const { return impl_->config; }

RequestHandle Engine::add_request(std::vector<int32_t> prompt, const SamplingParams& params,
                                  int priority, uint64_t cache_salt) {
  const auto vocab = static_cast<int64_t>(impl_->model.hparams.vocab_size);
  params.validate_for_vocab(vocab);
  if (prompt.empty()) fail("the prompt is empty");
  for (int32_t token : prompt) {
    if (token < 0 || token >= vocab) fail("token id {} is outside the vocabulary [0, {})", token, vocab);
  }
  if (static_cast<int64_t>(prompt.size()) >= impl_->max_model_len) {
    fail("the prompt has {} tokens; the context holds {} (prompt and output together)",
         prompt.size(), impl_->max_model_len);
  }
  const uint64_t id = impl_->next_id.fetch_add(1);
  auto request = std::make_unique<Request>(id, std::move(prompt), params, priority, impl_->pool,
                                           cache_salt, impl_->model.tokenizer);
  RequestHandle handle(id, request->stream);
  {
    std::lock_guard lock(impl_->inbox_mutex);
    impl_->inbox.push_back(std::move(request));
    impl_->unfinished.fetch_add(1);
  }
  impl_->work_arrived.notify_all();
  return handle;
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

bool Engine::step() {
  Impl& m = *impl_;
  m.drain_inbox();
  engine::StepPlan plan = m.scheduler.schedule();
  for (engine::Sequence* seq : plan.out_of_blocks) m.finish_request(*m.live.at(seq->id), FinishReason::Length);
  if (!plan.empty()) {
    const std::span<const float> logits = m.runner.run(plan);
    m.scheduler.complete(plan);
    m.computed_tokens += static_cast<uint64_t>(plan.n_tokens);
    ++m.steps;
    m.sample(plan, logits);
  }
  m.publish_stats();
  return !plan.empty() || !plan.out_of_blocks.empty();
}

std::vector<GenerationResult> Engine::generate(const std::vector<std::vector<int32_t>>& prompts,
                                               const SamplingParams& params) {
  std::vector<RequestHandle> handles;
  handles.reserve(prompts.size());
  for (const auto& prompt : prompts) handles.push_back(add_request(prompt, params));
  std::vector<GenerationResult> results(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  size_t n_done = 0;
  while (n_done < prompts.size()) {
    step();
    for (size_t i = 0; i < handles.size(); ++i) {
      // After a step every request of ours is live or finished; a finished one's stream holds
      // all its output, so draining it does not block.
      if (done[i] || impl_->live.contains(handles[i].id())) continue;
      results[i] = collect(handles[i]);
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
  s.kv_blocks_total = m.n_blocks;
  s.kv_blocks_used = m.pool.n_used();
  for (const auto& [id, request] : m.live) {
    const engine::Sequence& seq = request->seq;
    s.kv_slots_allocated += static_cast<int64_t>(seq.blocks.table().size()) * m.config.block_size;
    s.kv_slots_filled += seq.n_computed;
  }
  s.kv_cache_bytes = m.cache.bytes();
  const kv::PrefixCacheCounters& c = m.pool.counters();
  s.prefix_queried_blocks = c.queried_blocks;
  s.prefix_hit_blocks = c.hit_blocks;
  s.prefix_evictions = c.evictions;
  s.computed_tokens = m.computed_tokens;
  s.generated_tokens = m.generated_tokens;
  s.preemptions = m.scheduler.n_preemptions();
  s.swapped_out_blocks = m.scheduler.n_swapped_out_blocks();
  s.steps = m.steps;
  s.max_model_len = m.max_model_len;
  std::lock_guard lock(stats_mutex);
  snapshot = s;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->snapshot;
}


}  // namespace lumen
