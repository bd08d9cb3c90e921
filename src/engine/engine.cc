// The engine's loop: drain what other threads submitted, schedule, run one flat batch, sample,
// stream, finish. Everything below `step()` runs on the one thread that drives the engine;
// add_request / abort only touch the inbox under its mutex.
#include "lumen/engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <mutex>
#include <unordered_map>

#include "engine/engine_test_access.h"
#include "engine/kv_budget.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "engine/model_state.h"
#include "engine/request_group.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "sampling/stop_string_matcher.h"
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
// length, or the original context times the rope-scaling factor when that is larger.
int64_t trained_context(const model::HParams& hparams) {
  int64_t tokens = static_cast<int64_t>(hparams.context_length);
  const model::RopeScaling& scaling = hparams.rope_scaling;
  if (scaling.type != "none" && scaling.original_context_length > 0 && scaling.factor > 1.0) {
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
        config(engine_config),
        n_blocks(engine::kv_blocks_for(config, model.hparams, *handle.state().backend)),
        cache(*handle.state().backend, model.hparams, n_blocks, config.block_size),
        pool(static_cast<int32_t>(n_blocks), config.block_size, config.enable_prefix_caching),
        swap(make_swap_space()),
        scheduler(scheduler_config(), pool, swap.get()),
        runner(*model.transformer, cache, swap.get()) {
    const int64_t trained = trained_context(model.hparams);
    if (config.max_model_len > 0 && trained > 0 && config.max_model_len > trained) {
      // As vLLM: positions past the trained (or rope-scaled) context give garbage, not errors.
      fail("max_model_len {} exceeds the model's context of {} tokens (its training context{})",
           config.max_model_len, trained,
           model.hparams.rope_scaling.type == "none" ? "" : ", rope scaling included");
    }
    const int64_t pool_tokens = n_blocks * config.block_size;
    int64_t limit = config.max_model_len > 0 ? config.max_model_len : trained;
    if (limit <= 0) limit = pool_tokens;
    max_model_len = std::min(limit, pool_tokens);
    publish_stats();
  }

  static engine::LoadedModel& runnable(const Model& handle) {
    engine::LoadedModel& loaded = *handle.state().model;
    if (!loaded.transformer) fail("the model was loaded without its weights (vocab_only): an Engine cannot run it");
    return loaded;
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
  // After the forward pass: prompt log-probabilities, then sampling (or beam rounds).
  void process(const engine::StepPlan& plan, std::span<const float> logits);
  // The requests scheduled for the first time learn how long they waited.
  void mark_scheduled(const engine::StepPlan& plan);
  void record_prompt_logprobs(Completion& c, const engine::ChunkLogits& rows, std::span<const float> logits);
  void on_logits(Completion& c, std::span<const float> row);
  void sample_and_emit(Completion& c, std::span<const float> row);
  std::optional<FinishReason> emit(Completion& c, const sampling::SampleResult& result);
  Completion& fork(Completion& parent, int32_t index);
  // Takes a completion out of the scheduler (its blocks are released).
  void retire(Completion& c, FinishReason reason);
  void finish_completion(Completion& c, FinishReason reason);
  void deliver_best_of(RequestGroup& g);
  void beam_logits(Completion& c, std::span<const float> row);
  void beam_round(RequestGroup& g);
  void deliver_beams(RequestGroup& g);
  void out_of_blocks(Completion& c);
  // Ends every stream of the group (with `reason` where not yet ended) and retires it.
  void end_group(RequestGroup& g, FinishReason reason, const std::string& error = {});
  // Fault containment (see step()): ends the request a sequence belongs to with an error.
  void fail_request(uint64_t sequence_id, const std::string& error);
  // The forward pass of `plan` threw: every request in it ends with an error.
  void fail_batch(const engine::StepPlan& plan, const std::string& error);
  // Ends the requests whose logit rows hold NaN or infinity, before their blocks are published.
  void fail_non_finite(const engine::StepPlan& plan, std::span<float> logits);

  Model handle;  // keeps the model (and the device its weights are on) alive
  engine::LoadedModel& model;
  EngineConfig config;
  int64_t n_blocks;
  model::KvCache cache;
  kv::BlockPool pool;
  std::unique_ptr<engine::SwapSpace> swap;
  engine::Scheduler scheduler;
  engine::ModelRunner runner;
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
  std::unordered_map<uint64_t, std::unique_ptr<RequestGroup>> groups;  // by request id
  std::unordered_map<uint64_t, Completion*> live;  // running or waiting, by sequence id
  std::vector<uint64_t> ended;  // groups to drop at the end of the step
  uint64_t arrivals = 0;
  uint64_t computed_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t steps = 0;
  sampling::SamplerWorkspace workspace;  // shared by every request's sampler (one loop thread)
  std::vector<sampling::Candidate> logprob_scratch;
  std::vector<sampling::TokenLogprob> logprob_top;
  std::vector<uint64_t> chunk_ids;
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
    Completion& first = *group->completions.front();
    first.seq.arrival = arrivals++;
    scheduler.add(&first.seq);
    live.emplace(first.seq.id, &first);
    const uint64_t id = group->id;
    groups.emplace(id, std::move(group));
  }
  for (uint64_t id : to_abort) {
    if (auto it = groups.find(id); it != groups.end() && !it->second->ended) {
      end_group(*it->second, FinishReason::Abort);
    }
  }
}

void Engine::Impl::retire(Completion& c, FinishReason reason) {
  scheduler.remove(&c.seq);
  live.erase(c.seq.id);
  c.finish = reason;
  --c.group->n_running;
}

void Engine::Impl::end_group(RequestGroup& g, FinishReason reason, const std::string& error) {
  for (auto& c : g.completions) {
    if (!c->finish) retire(*c, reason);
  }
  for (auto& stream : g.streams) stream->finish(reason, error);  // no-op where it already ended
  g.ended = true;
  unfinished.fetch_sub(1);
  ended.push_back(g.id);
}

// One completion ends (Sample, BestOf).
void Engine::Impl::finish_completion(Completion& c, FinishReason reason) {
  RequestGroup& g = *c.group;
  retire(c, reason);
  if (g.mode == GroupMode::Sample) g.streams[static_cast<size_t>(c.index)]->finish(reason);
  if (g.n_running > 0) return;
  if (g.mode == GroupMode::BestOf) deliver_best_of(g);
  // Streams that have not ended yet (a request that ended before it forked) end like it.
  end_group(g, reason);
}

void Engine::Impl::deliver_best_of(RequestGroup& g) {
  const std::vector<const Completion*> best = engine::best_completions(g);
  for (size_t j = 0; j < best.size(); ++j) {
    for (const GeneratedToken& t : best[j]->held) g.streams[j]->push(t);
    g.streams[j]->finish(*best[j]->finish);
  }
}

// Streams one sampled token (with its text) and says whether the completion ends with it.
std::optional<FinishReason> Engine::Impl::emit(Completion& c, const sampling::SampleResult& result) {
  c.sampler.accept(result.token);
  c.seq.tokens.push_back(result.token);
  ++generated_tokens;
  GeneratedToken out{result.token, result.logprob, {}, c.detokenizer.push(result.token)};
  for (const auto& alt : result.top) out.top.push_back({alt.token, alt.logprob});
  const bool stop_strings_apply = c.stop_condition.past_min_tokens();
  std::optional<FinishReason> finish = c.stop_condition.check(result.token);
  if (c.stop_strings && stop_strings_apply) {
    sampling::StopStringMatcher::Step step = c.stop_strings->push(out.text);
    out.text = std::move(step.text);
    if (step.stopped) finish = FinishReason::Stop;
  }
  if (!finish && static_cast<int64_t>(c.seq.tokens.size()) >= max_model_len) {
    finish = FinishReason::Length;
  }
  if (finish && !(c.stop_strings && c.stop_strings->stopped())) {
    // The end of the stream: whatever was held back for a possible stop string or an
    // unfinished character goes out with the last token.
    std::string tail = c.detokenizer.flush();
    if (c.stop_strings) {
      sampling::StopStringMatcher::Step step = c.stop_strings->push(tail);
      tail = std::move(step.text) + c.stop_strings->flush();
    }
    out.text += tail;
  }
  RequestGroup& g = *c.group;
  if (g.mode == GroupMode::BestOf) {
    // Ranked on the log-probabilities; reported only when asked for.
    c.sum_logprob += static_cast<double>(result.logprob);
    if (!g.params.logprobs) {
      out.logprob = std::numeric_limits<float>::quiet_NaN();
      out.top.clear();
    }
    c.held.push_back(std::move(out));
  } else {
    g.streams[static_cast<size_t>(c.index)]->push(std::move(out));
  }
  return finish;
}

void Engine::Impl::sample_and_emit(Completion& c, std::span<const float> row) {
  const sampling::SampleResult result = c.sampler.sample(row, workspace);
  if (std::optional<FinishReason> finish = emit(c, result)) finish_completion(c, *finish);
}

Completion& Engine::Impl::fork(Completion& parent, int32_t index) {
  RequestGroup& g = *parent.group;
  auto child = std::make_unique<Completion>(parent, next_id.fetch_add(1), index, model.tokenizer);
  Completion& c = *child;
  g.completions.push_back(std::move(child));
  ++g.n_running;
  scheduler.add_fork(&c.seq, &parent.seq);
  live.emplace(c.seq.id, &c);
  return c;
}

void Engine::Impl::on_logits(Completion& c, std::span<const float> row) {
  RequestGroup& g = *c.group;
  if (g.mode == GroupMode::Beam) {
    beam_logits(c, row);
    return;
  }
  if (!g.forked) {
    // The prompt is computed: the other completions start here, sharing its blocks.
    g.forked = true;
    c.seq.seats = 1;
    std::vector<Completion*> siblings;
    for (int32_t i = 1; i < g.width; ++i) siblings.push_back(&fork(c, i));
    for (Completion* sibling : siblings) sample_and_emit(*sibling, row);
  }
  sample_and_emit(c, row);
}

void Engine::Impl::beam_logits(Completion& c, std::span<const float> row) {
  RequestGroup& g = *c.group;
  const auto at = std::find(g.beams.begin(), g.beams.end(), &c);
  if (at == g.beams.end()) return;
  const auto i = static_cast<size_t>(at - g.beams.begin());
  // A beam preempted while it waited computes its logits again: the same, already kept.
  if (g.beam_has_logits[i]) return;
  // Logits of a prefix the beam has since outgrown: a preempted beam recomputed in the step
  // whose round extended it. It computes its new token and comes back.
  if (c.seq.n_computed != static_cast<int64_t>(c.seq.tokens.size())) return;
  g.beam_logits[i].assign(row.begin(), row.end());
  g.beam_has_logits[i] = true;
  if (std::all_of(g.beam_has_logits.begin(), g.beam_has_logits.end(), [](bool b) { return b; })) {
    beam_round(g);
  }
}

void Engine::Impl::beam_round(RequestGroup& g) {
  std::vector<std::span<const float>> rows(g.beam_logits.begin(), g.beam_logits.end());
  const std::vector<sampling::BeamSearch::Extension> extensions = g.beam->step(rows);
  const std::vector<Completion*> old = g.beams;
  std::vector<Completion*> next(extensions.size(), nullptr);
  std::vector<int> children(old.size(), 0);
  // Forks first, so that they copy their parent before it is extended.
  for (size_t j = 0; j < extensions.size(); ++j) {
    const size_t p = extensions[j].parent;
    if (children[p]++ == 0) continue;
    next[j] = &fork(*old[p], 0);
    next[j]->seq.tokens.push_back(extensions[j].token);
  }
  for (size_t j = 0; j < extensions.size(); ++j) {
    if (next[j] != nullptr) continue;
    next[j] = old[extensions[j].parent];
    next[j]->seq.tokens.push_back(extensions[j].token);
  }
  generated_tokens += extensions.size();
  for (size_t p = 0; p < old.size(); ++p) {
    if (children[p] == 0) retire(*old[p], FinishReason::Stop);  // pruned: its blocks go back
  }
  // And the rest of it too: a search forks up to width beams every round, so keeping the pruned
  // ones would grow with the output's length (what is delivered comes from the search's own
  // hypotheses, not from these).
  std::erase_if(g.completions, [](const std::unique_ptr<Completion>& c) { return c->finish.has_value(); });
  g.beams = std::move(next);
  g.beam_logits.assign(g.beams.size(), {});
  g.beam_has_logits.assign(g.beams.size(), false);
  // The group keeps its width of seats: the first beam holds the unused ones.
  for (Completion* beam : g.beams) beam->seq.seats = 1;
  if (!g.beams.empty()) g.beams.front()->seq.seats = g.width - static_cast<int64_t>(g.beams.size()) + 1;
  if (g.beam->done()) deliver_beams(g);
}

void Engine::Impl::deliver_beams(RequestGroup& g) {
  const std::vector<sampling::BeamHypothesis> best = g.beam->results();
  for (size_t j = 0; j < best.size(); ++j) {
    for (GeneratedToken& t : engine::hypothesis_tokens(best[j], model.tokenizer, g.params.logprobs.has_value(),
                                                             g.params.skip_special_tokens)) {
      g.streams[j]->push(std::move(t));
    }
    g.streams[j]->finish(best[j].finish);
  }
  g.beams.clear();
  end_group(g, FinishReason::Length);  // streams without a hypothesis (none finished)
}

void Engine::Impl::out_of_blocks(Completion& c) {
  RequestGroup& g = *c.group;
  if (g.mode != GroupMode::Beam) {
    finish_completion(c, FinishReason::Length);
    return;
  }
  // The cache cannot hold the beams any longer: they end at their length.
  g.beam->stop();
  deliver_beams(g);
}

void Engine::Impl::record_prompt_logprobs(Completion& c, const engine::ChunkLogits& rows,
                                          std::span<const float> logits) {
  RequestGroup& g = *c.group;
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  const int32_t top_n = *g.params.prompt_logprobs;
  if (g.prompt_logprobs.empty()) {
    g.prompt_logprobs.push_back({c.seq.tokens[0], std::numeric_limits<float>::quiet_NaN(), {}});
  }
  for (int64_t r = 0; r < rows.n_prompt_rows; ++r) {
    const int64_t position = rows.first_prompt_position + r;
    const int32_t token = c.seq.tokens[static_cast<size_t>(position + 1)];
    const std::span<const float> row = logits.subspan(static_cast<size_t>(rows.first_row + r) * vocab, vocab);
    PromptLogprob entry;
    entry.token = token;
    entry.logprob = sampling::token_logprobs(row, token, top_n, logprob_top, logprob_scratch);
    for (const sampling::TokenLogprob& alt : logprob_top) entry.top.push_back({alt.token, alt.logprob});
    g.prompt_logprobs.push_back(std::move(entry));
  }
  c.seq.next_prompt_logit = rows.first_prompt_position + rows.n_prompt_rows;
  if (!c.seq.wants_prompt_logits()) {
    for (auto& stream : g.streams) stream->set_prompt_logprobs(g.prompt_logprobs);
  }
}

void Engine::Impl::mark_scheduled(const engine::StepPlan& plan) {
  const auto now = std::chrono::steady_clock::now();
  for (const engine::ScheduledChunk& chunk : plan.chunks) {
    RequestGroup& g = *live.at(chunk.seq->id)->group;
    if (g.scheduled) continue;
    g.scheduled = true;
    const double queued = std::chrono::duration<double>(now - g.submitted).count();
    for (auto& stream : g.streams) stream->mark_scheduled(queued);
  }
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

void Engine::Impl::fail_request(uint64_t sequence_id, const std::string& error) {
  const auto it = live.find(sequence_id);
  if (it == live.end()) return;
  RequestGroup& g = *it->second->group;
  if (!g.ended) end_group(g, FinishReason::Error, error);
}

void Engine::Impl::fail_batch(const engine::StepPlan& plan, const std::string& error) {
  for (const engine::ScheduledChunk& chunk : plan.chunks) fail_request(chunk.seq->id, error);
  // A sequence swapped out by this plan may not have had its blocks copied out.
  for (const engine::Sequence* seq : plan.preempted) {
    if (!seq->swap_slots.empty()) fail_request(seq->id, error);
  }
}

void Engine::Impl::fail_non_finite(const engine::StepPlan& plan, std::span<float> logits) {
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  const std::vector<engine::ChunkLogits>& rows = runner.chunk_logits();
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const uint64_t id = plan.chunks[i].seq->id;
    const auto n_rows = static_cast<size_t>(rows[i].n_prompt_rows + (rows[i].samples ? 1 : 0));
    if (n_rows == 0 || !live.contains(id)) continue;
    const std::span<float> own = logits.subspan(static_cast<size_t>(rows[i].first_row) * vocab, n_rows * vocab);
    try {
      if (logits_hook) logits_hook(live.at(id)->group->id, own);
    } catch (const std::exception& e) {
      fail_request(id, e.what());
      continue;
    }
    if (!all_finite(own)) fail_request(id, "the model produced non-finite logits (NaN or infinity)");
  }
}

void engine::EngineTestAccess::set_logits_hook(Engine& engine, LogitsHook hook) {
  engine.impl_->logits_hook = std::move(hook);
}

void Engine::Impl::process(const engine::StepPlan& plan, std::span<const float> logits) {
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  const std::vector<engine::ChunkLogits>& rows = runner.chunk_logits();
  // By id: a completion may end (and a beam be pruned) while earlier chunks are processed.
  chunk_ids.clear();
  for (const engine::ScheduledChunk& chunk : plan.chunks) chunk_ids.push_back(chunk.seq->id);
  for (size_t i = 0; i < chunk_ids.size(); ++i) {
    const auto it = live.find(chunk_ids[i]);
    if (it == live.end()) continue;
    Completion& c = *it->second;
    try {
      if (rows[i].n_prompt_rows > 0) record_prompt_logprobs(c, rows[i], logits);
      if (rows[i].samples) {
        const auto row = static_cast<size_t>(rows[i].first_row + rows[i].n_prompt_rows);
        on_logits(c, logits.subspan(row * vocab, vocab));
      }
    } catch (const std::exception& e) {
      // Its K/V was computed and checked: the blocks already published stay valid.
      fail_request(chunk_ids[i], std::string("processing the request's logits failed: ") + e.what());
    }
  }
}

Engine::Engine(Model model, EngineConfig config) : impl_(std::make_unique<Impl>(std::move(model), config)) {}

Engine::~Engine() {
  // Whoever still waits on a stream learns that the request ended.
  for (auto& [id, group] : impl_->groups) {
    for (auto& stream : group->streams) stream->finish(FinishReason::Abort);
  }
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
  const uint64_t id = impl_->next_id.fetch_add(1);
  auto group = std::make_unique<RequestGroup>(id, params, impl_->max_model_len - prompt_len,
                                              impl_->model.tokenizer.vocab().end_of_generation);
  auto first = std::make_unique<Completion>(*group, id, std::move(prompt), priority, impl_->pool,
                                            kv::mix64(impl_->hash_key ^ cache_salt), impl_->model.tokenizer);
  first->seq.seats = width;
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
  engine::StepPlan plan = m.scheduler.schedule();
  for (engine::Sequence* seq : plan.out_of_blocks) {
    if (auto it = m.live.find(seq->id); it != m.live.end()) m.out_of_blocks(*it->second);
  }
  if (!plan.empty()) {
    m.mark_scheduled(plan);
    std::span<float> logits;
    std::string fault;
    try {
      logits = m.runner.run(plan);
    } catch (const std::exception& e) {
      fault = e.what();
      if (fault.empty()) fault = "unknown error";
    }
    if (!fault.empty()) {
      m.scheduler.abandon(plan);
      m.fail_batch(plan, "the forward pass failed: " + fault);
    } else {
      m.fail_non_finite(plan, logits);  // before complete() publishes their blocks
      m.scheduler.complete(plan);
      m.computed_tokens += static_cast<uint64_t>(plan.n_tokens);
      ++m.steps;
      m.process(plan, logits);
    }
  }
  for (uint64_t id : m.ended) m.groups.erase(id);
  m.ended.clear();
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
      if (done[i] || impl_->groups.contains(handles[i].id())) continue;
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
  s.kv_blocks_total = m.n_blocks;
  s.kv_blocks_used = m.pool.n_used();
  for (const auto& [id, completion] : m.live) {
    const engine::Sequence& seq = completion->seq;
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
