#pragma once
// What an Engine holds (lumen/engine.h's pimpl): the loaded model, the KV cache and its block
// pool, the scheduler, the model runner, speculation and the output processor, the inbox other
// threads submit to, and the counters stats() publishes. Built, and checked, in this order;
// engine.cc runs the loop over it, engine_stats.cc reports on it.
#include "lumen/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <future>
#include <span>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <mutex>
#include <unordered_map>

#include "engine/draft_proposers.h"
#include "engine/engine_backend_needs.h"
#include "engine/engine_test_access.h"
#include "engine/image_feature_cache.h"
#include "engine/kv_budget.h"
#include "engine/largest_step_reserve.h"
#include "engine/kv_cache_dtype.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "engine/model_state.h"
#include "engine/output_processor.h"
#include "engine/prompt_kv_store.h"
#include "engine/prompt_kv_transfer.h"
#include "engine/request_group.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "engine/speculation.h"
#include "engine/step_time_model.h"
#include "engine/structured_output.h"
#include "engine/model_parallel.h"
#include "kv/block_hash.h"
#include "lumen/image_encoder.h"
#include "kv/block_pool.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "sampling/stop_string_matcher.h"
#include "spec/speculative_config.h"
#include "tokenizer/streaming_detokenizer.h"
#include "util/error.h"

namespace lumen {

namespace engine {

// The longest sequence the model's positions were trained or scaled for: the file's context
// length, or, for linear and YaRN scaling, the original context times the factor when that is
// larger. llama3-style scaling's files already give the extended context as context_length.
inline int64_t trained_context(const model::HParams& hparams) {
  int64_t tokens = static_cast<int64_t>(hparams.context_length);
  const model::RopeScaling& scaling = hparams.rope_scaling;
  const bool stretches = scaling.type == "linear" || scaling.type == "yarn";
  if (stretches && scaling.original_context_length > 0 && scaling.factor > 1.0) {
    tokens = std::max(tokens, static_cast<int64_t>(static_cast<double>(scaling.original_context_length) * scaling.factor));
  }
  return tokens;
}

}  // namespace engine

struct Engine::Impl {
  Impl(Model model_handle, EngineConfig engine_config)
      : handle(std::move(model_handle)),
        model(runnable(handle)),
        config(checked(engine_config, handle)),
        // The transformer's: a tensor-parallel shard caches its own heads only, a pipeline stage
        // its own layers.
        layout(model.transformer->kv_layout(config.free_out_of_window_kv)),
        // A state model's slots and the KV share one budget (engine/kv_budget.h).
        cache_sizes(sized_caches(handle, config, layout)),
        n_blocks(cache_sizes.kv_blocks),
        // A model split over two backends keeps each layer's K/V with the backend that runs it.
        cache(*engine::model_state(handle).backend, model.transformer->hparams(), layout, n_blocks, config.block_size,
              engine::kv_tensor_type(config.kv_cache_dtype), config.kv_cache_rotation, model.transformer->split()),
        pool(static_cast<int32_t>(n_blocks), config.block_size, config.enable_prefix_caching),
        kv_space(make_kv_space()),
        swap(make_swap_space()),
        scheduler(scheduler_config(), pool, swap.get()),
        runner(*model.transformer, cache, swap.get()),
        states(make_states()),
        snapshots(make_snapshots()),
        state_swap(make_state_swap()) {
    runner.set_states(states.get());
    runner.set_state_places(snapshots.get(), state_swap.get());
    scheduler.set_state_snapshots(snapshots.get());
    scheduler.set_state_swap(state_swap.get());
    if (engine::ModelParallelGroup* group = engine::model_state(handle).parallel.get()) {
      // A sequence's rank follows its first block (model/data_parallel_attention.h): what would
      // give it another one mid-life (swapped back into new blocks, its first positions dropped)
      // would send it where its keys are not.
      if (group->data_parallel_attention() &&
          (config.preemption_mode == PreemptionMode::Swap || config.context_overflow == ContextOverflow::Shift ||
           config.kv_window_tokens > 0)) {
        fail("--data-parallel-attention does not combine with swap preemption, context shift or a KV window yet");
      }
      leader = std::make_unique<engine::ModelParallelLeader>(
          *group, engine::ShardCacheGeometry{n_blocks, config.block_size, config.kv_cache_dtype, config.kv_cache_rotation,
                                             config.free_out_of_window_kv, swap ? swap->n_slots() : 0});
      runner.set_leader(leader.get());
    }
    if (kv_space.null_block >= 0) runner.zero_block(kv_space.null_block);
    const int64_t trained = engine::trained_context(model.hparams);
    if (config.max_model_len > 0 && trained > 0 && config.max_model_len > trained) {
      // As vLLM: positions past the trained (or rope-scaled) context give garbage, not errors.
      fail("max_model_len {} exceeds the model's context of {} tokens (its training context{})",
           config.max_model_len, trained,
           model.hparams.rope_scaling.type == "none" ? "" : ", rope scaling included");
    }
    const int64_t pool_tokens = layout.max_tokens(pool.n_available(), config.block_size, config.max_num_batched_tokens);
    int64_t limit = config.max_model_len > 0 ? config.max_model_len : trained;
    if (limit <= 0) limit = pool_tokens;
    max_model_len = std::min(limit, pool_tokens);
    model.transformer->set_context_length(max_model_len);  // Phi-3's LongRoPE factor set
    if (states) check_state_model_config();
    scheduler.set_shift_policy(shift_policy());
    const std::span<const int64_t> windows = model.transformer->layer_windows();
    scheduler.set_importance_heads(static_cast<int64_t>(model.hparams.head_count_kv * model.hparams.block_count),
                                   std::vector<int64_t>(windows.begin(), windows.end()));
    if (config.kv_importance.enabled()) check_kv_importance(config.kv_importance);
    if (config.speculative.num_candidates > 1) {
      // Token trees: a tree attention mask, and the accepted branch's K/V moved position by
      // position (in each layer group's blocks).
      for (const backend::Backend* backend : model_backends(handle)) {
        if (!backend->supports_tree_attention()) {
          fail(
              "speculative config: num_candidates > 1 (token trees) needs tree attention, which the {} backend does "
              "not have",
              backend->name());
        }
      }
      outputs.set_kv_cache(&runner);
    }
    if (config.max_itl_ms > 0) {
      scheduler.limit_step_time(step_time, config.max_itl_ms / 1000.0, config.min_prefill_tokens);
    }
    if (config.prompt_kv_store_bytes < 0) fail("prompt_kv_store_bytes must be >= 0");
    if (config.prompt_kv_store_bytes > 0) {
      check_prompt_kv_possible();
      prompt_kv_store = std::make_unique<engine::PromptKvStore>(static_cast<size_t>(config.prompt_kv_store_bytes));
    }
    // A grammar mask computed late is work for a loop that may be waiting for some.
    outputs.on_mask_ready([this] {
      {
        std::lock_guard lock(inbox_mutex);
        mask_ready.store(true);
      }
      work_arrived.notify_all();
    });
    publish_stats();
  }

  // Moving K/V between engines reads and writes this process's cache alone, and arrives as a
  // cached prefix (engine/prompt_kv_transfer.h).
  void check_prompt_kv_possible() const {
    if (leader)
      fail("moving a prompt's K/V between engines is not supported with tensor, pipeline or expert parallelism");
    if (!config.enable_prefix_caching) fail("moving a prompt's K/V between engines needs prefix caching");
  }

  // A state-space model's recurrent states: one slot per sequence that may run at once
  // (max_num_seqs, fewer when the memory budget holds fewer), beside the KV cache.
  std::unique_ptr<model::StateCache> make_states() const {
    if (cache_sizes.state_slots == 0) return nullptr;
    return std::make_unique<model::StateCache>(*engine::model_state(handle).backend, model.hparams,
                                               cache_sizes.state_slots);
  }

  // The state prefix cache (engine/state_snapshots.h): its snapshots were set aside in the
  // memory budget (cache_sizes_for); it needs the prefix cache, whose blocks a hit adopts too.
  std::unique_ptr<engine::StateSnapshots> make_snapshots() const {
    if (cache_sizes.state_snapshots == 0 || !config.enable_prefix_caching) return nullptr;
    return std::make_unique<engine::StateSnapshots>(cache_sizes.state_snapshots, states->slot_bytes(),
                                                    config.block_size);
  }

  // Swap preemption of a state model: a host slot per state slot, out of swap_space_bytes
  // (make_swap_space leaves them room), so every sequence that runs can be swapped with its state.
  std::unique_ptr<engine::SwapSpace> make_state_swap() const {
    if (!swap || !states) return nullptr;
    return std::make_unique<engine::SwapSpace>(states->n_slots(), states->slot_bytes());
  }
  uint64_t state_swap_bytes() const {
    if (cache_sizes.state_slots == 0) return 0;
    return static_cast<uint64_t>(cache_sizes.state_slots) * model::StateCache::bytes_per_slot(model.hparams);
  }

  // What a state-space model cannot do: its state holds every token computed, and cannot be
  // rolled back (speculation), shifted (context shift) or moved between engines as K/V.
  void check_state_model_config() const {
    if (config.speculative.method != SpeculativeMethod::None) {
      fail(
          "speculative decoding is not supported for the {} model: its recurrent state cannot be rolled back to "
          "the last accepted draft token",
          model.hparams.architecture);
    }
    if (config.context_overflow == ContextOverflow::Shift || config.kv_window_tokens > 0) {
      fail("context shift is not possible for the {} model: its recurrent state holds every earlier token",
           model.hparams.architecture);
    }
    if (config.prompt_kv_store_bytes > 0) {
      fail("moving a prompt's K/V between engines is not supported for the {} model (its state is not K/V)",
           model.hparams.architecture);
    }
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

  // Importance-based eviction (engine/kv_importance.h), the engine's or a request's: what it
  // needs of the engine, and an H2O budget that leaves room to evict a block at a time.
  void check_kv_importance(const KvImportance& importance) const {
    auto refuse = [&](std::string_view why) {
      fail("kv eviction {}: not supported {}", format_kv_importance(importance), why);
    };
    if (leader) refuse("with tensor, pipeline or expert parallelism");
    if (scheduler.shift_policy().enabled) refuse("together with a context shift or StreamingLLM (sink:N,window:W)");
    if (config.speculative.method != SpeculativeMethod::None) refuse("with speculative decoding");
    if (config.kv_cache_dtype != KvCacheDtype::F16) refuse("with a compressed KV cache type (f16 only)");
    if (layout.n_groups() != 1) {
      refuse("with sliding-window layers that keep only their window (--keep-out-of-window-kv keeps every position)");
    }
    if (model::is_mla(model.hparams)) refuse("with multi-head latent attention");
    // gpt-oss: each head's sink takes a share of its rows' softmax that no position holds, which
    // the scores would leave out (backend/common/kv_eviction_checks.cc refuses them in a step).
    if (runnable(handle).transformer->architecture().features.attention_sinks) {
      refuse("with attention sinks (gpt-oss): no position holds a sink's share of the attention");
    }
    for (const backend::Backend* backend : model_backends(handle)) {
      backend->require(engine::kv_eviction_needs(importance),
                       fmt::format("kv eviction {}", format_kv_importance(importance)));
    }
    const int64_t bs = config.block_size;
    if (importance.method == KvImportanceMethod::H2O) {
      const int64_t cap = (importance.budget + bs - 1) / bs * bs;
      if (cap < 2 * bs || importance.recent > cap - bs) {
        fail(
            "kv eviction {}: H2O evicts a block of {} at a time, so the budget must hold two blocks and recent at "
            "most the budget less one block",
            format_kv_importance(importance), bs);
      }
    }
  }

  // The configuration with its speculative part validated and vLLM's defaults filled in, and
  // held to what the model's backend runs (all it lacks named at once), before anything is
  // allocated.
  static EngineConfig checked(EngineConfig c, const Model& handle) {
    c.speculative = spec::resolved(c.speculative);
    if (!(c.max_itl_ms >= 0) || !std::isfinite(c.max_itl_ms)) {
      fail("max_itl_ms must be 0 (off) or a positive number of milliseconds (got {})", c.max_itl_ms);
    }
    if (c.min_prefill_tokens <= 0) fail("min_prefill_tokens must be positive (got {})", c.min_prefill_tokens);
    for (const backend::Backend* backend : model_backends(handle)) {
      backend->require(engine::engine_backend_needs(runnable(handle).transformer->hparams(), c),
                       "this engine's configuration");
      if (images_attend_both_ways(handle)) {
        backend::BackendNeeds images;
        images.add(backend::BackendFeature::SpanAttention);
        backend->require(images, "this model's projector");
      }
    }
    if (c.image_feature_cache_bytes < 0) {
      fail("image_feature_cache_bytes must be 0 (off) or more (got {})", c.image_feature_cache_bytes);
    }
    return c;
  }

  // Whether the model's image spans attend both ways (Gemma 3; ImageEncoder::image_attends_both_ways).
  static bool images_attend_both_ways(const Model& handle) {
    const std::shared_ptr<const ImageEncoder> encoder = handle.image_encoder();
    return encoder && encoder->image_attends_both_ways();
  }
  bool images_attend_both_ways() const { return images_attend_both_ways(handle); }

  // Every backend the model runs on: its own, and the second of a model split over two
  // (model/backend_split.h). An engine's options must suit both.
  static std::vector<const backend::Backend*> model_backends(const Model& handle) {
    std::vector<const backend::Backend*> backends{engine::model_state(handle).backend};
    if (const model::BackendSplit& split = runnable(handle).transformer->split(); split.active()) {
      backends.push_back(split.second);
    }
    return backends;
  }

  // The caches' sizes (engine/kv_budget.h), after the largest step has taken its memory where the
  // pool is sized from what a device has free (engine/largest_step_reserve.h).
  static engine::CacheSizes sized_caches(const Model& handle, const EngineConfig& config, const kv::KvLayout& layout) {
    ModelState& state = engine::model_state(handle);
    engine::LoadedModel& loaded = runnable(handle);
    if (engine::reserves_largest_step(config, loaded, *state.backend, state.parallel != nullptr)) {
      engine::reserve_largest_step(config, loaded, *state.backend);
    }
    return engine::cache_sizes_for(config, loaded.transformer->hparams(), layout, *state.backend,
                                   loaded.transformer->split());
  }

  static engine::LoadedModel& runnable(const Model& handle) {
    engine::LoadedModel& loaded = *engine::model_state(handle).model;
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
    const uint64_t space = static_cast<uint64_t>(std::max<int64_t>(config.swap_space_bytes, 0));
    // A state model's states are swapped beside their blocks, out of the same space.
    if (state_swap_bytes() > space) {
      fail("a swap space of {} bytes holds not the {} state slots of {} bytes each", config.swap_space_bytes,
           cache_sizes.state_slots, model::StateCache::bytes_per_slot(model.hparams));
    }
    // An attention-free model's blocks hold no bytes: a slot per block, of one byte.
    const size_t slot_bytes = std::max<size_t>(cache.block_host_bytes(), 1);
    const auto slots =
        cache.block_host_bytes() == 0 ? n_blocks : static_cast<int64_t>((space - state_swap_bytes()) / slot_bytes);
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
    sc.state_slots = static_cast<int32_t>(cache_sizes.state_slots);
    return sc;
  }

  void drain_inbox();
  // Engine::embed's requests waiting for the loop (engine_embeddings.cc): each its inputs and
  // the promise of their vectors.
  struct EmbedJob {
    std::vector<std::vector<int32_t>> inputs;
    std::promise<std::vector<std::vector<float>>> vectors;
  };
  // A request's progress through the passes: its vectors so far, the next input to run, and
  // how many the pass being planned takes.
  struct PendingEmbedding {
    EmbedJob job;
    std::vector<std::vector<float>> vectors;
    std::exception_ptr error;
    size_t next = 0;
    size_t taken = 0;
  };
  // Arrived requests join the queue; each step runs one pass over the next inputs of every
  // queued request together, as many as the token budget and the free KV blocks allow, and
  // answers the requests it completes (each promise kept or failed on its own). False: none
  // queued.
  void queue_embeddings(std::vector<EmbedJob>& jobs);
  bool embed_one_pass();
  // One forward pass over `inputs`, each its own sequence at positions 0.. with blocks of its
  // own in every layer group; their pooled, normalised vectors go to *out[i].
  void embed_batch(std::span<const std::vector<int32_t>* const> inputs, std::span<std::vector<float>* const> out);
  // Disaggregated prefill: the K/V of every prompt this step completed goes to the store.
  void keep_completed_prompts(const engine::StepPlan& plan);
  // Runs `work` on the loop thread at the next step; its result or exception reaches the future.
  std::future<int64_t> run_on_loop(std::function<int64_t()> work);
  // Copies the counters for other threads (stats() may be called from anywhere).
  void publish_stats();
  // Ends the requests whose logit rows hold NaN or infinity, before their blocks are published
  // (fault containment, see step()).
  void fail_non_finite(const engine::StepPlan& plan, std::span<float> logits);

  Model handle;  // keeps the model (and the device its weights are on) alive
  engine::LoadedModel& model;
  EngineConfig config;
  kv::KvLayout layout;
  engine::CacheSizes cache_sizes;
  int64_t n_blocks;
  model::KvCache cache;
  kv::BlockPool pool;
  kv::KvSpace kv_space;
  std::unique_ptr<engine::SwapSpace> swap;
  engine::Scheduler scheduler;
  engine::ModelRunner runner;
  std::unique_ptr<model::StateCache> states;  // a state-space model's (null otherwise)
  std::unique_ptr<engine::StateSnapshots> snapshots;  // its state prefix cache (null: off)
  std::unique_ptr<engine::SwapSpace> state_swap;      // its swapped-out states (Swap mode)
  // Tensor parallelism's rank 0: the other ranks build this engine's cache and follow its steps
  // until it goes (null in one process).
  std::unique_ptr<engine::ModelParallelLeader> leader;
  // ITL-aware scheduling's cost model: fed each step's measured time when max_itl_ms is set.
  engine::StepTimeModel step_time;
  // Structured outputs' compiled grammars, shared by submitting threads (it locks).
  engine::GrammarCompiler grammars{model.tokenizer};
  // Engine::encode_image's, shared by submitting threads (it locks).
  engine::ImageFeatureCache image_features{static_cast<size_t>(std::max<int64_t>(0, config.image_feature_cache_bytes))};
  int64_t max_model_len = 0;
  // Mixed into every request's cache salt, so block hashes are keyed per process: nobody can
  // precompute prompts whose blocks collide in the prefix cache's table.
  const uint64_t hash_key = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();

  // Shared with submitting threads.
  mutable std::mutex inbox_mutex;
  std::condition_variable work_arrived;
  std::vector<std::unique_ptr<engine::RequestGroup>> inbox;
  std::vector<uint64_t> aborts;
  std::vector<std::function<void()>> tasks;  // run_on_loop's, before the next step's arrivals
  std::vector<EmbedJob> embed_jobs;          // Engine::embed's, queued at the next step
  std::atomic<uint64_t> next_id{1};
  std::atomic<int64_t> unfinished{0};
  std::atomic<bool> mask_ready{false};  // a mask worker finished since the step began

  // The loop thread's own.
  std::deque<PendingEmbedding> embedding_queue;  // one pass of them per step
  engine::Speculation speculation{config.speculative,
                                  engine::make_proposer(config.speculative, model, *engine::model_state(handle).backend,
                                                        static_cast<int32_t>(n_blocks), config.block_size),
                                  // Jump-forward verifies forced tokens as a draft, which a
                                  // recurrent state cannot take back when one is rejected.
                                  config.jump_forward && !states, model.tokenizer};
  engine::OutputProcessor outputs{scheduler,     speculation, model.tokenizer,    next_id,
                                  unfinished,    max_model_len, runner.vocab_size()};
  uint64_t arrivals = 0;
  uint64_t computed_tokens = 0;
  uint64_t steps = 0;
  double step_seconds = 0;     // EngineStats::step_seconds
  double forward_seconds = 0;  // EngineStats::forward_seconds
  // Written by the loop thread, read by PromptKvExchange::stats() on any thread.
  std::atomic<uint64_t> imported_tokens{0};
  // Disaggregated prefill and decode: the cache's format, and the prompts kept for another
  // engine (null unless prompt_kv_store_bytes).
  const uint64_t kv_format = engine::kv_format(model, cache, config.kv_cache_dtype);
  std::unique_ptr<engine::PromptKvStore> prompt_kv_store;
  EngineTestAccess::LogitsHook logits_hook;  // tests only
  std::vector<engine::ChunkForm> chunk_forms;  // per chunk of the step's plan (reduced_rows.h)

  mutable std::mutex stats_mutex;
  EngineStats snapshot;
};

}  // namespace lumen
