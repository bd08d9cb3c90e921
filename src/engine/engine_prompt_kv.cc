// Engine's side of disaggregated prefill and decode (lumen/prompt_kv_exchange.h): keeping
// computed prompts' K/V for another engine, handing it out, and taking another engine's in. The cache and
// the pool belong to the loop thread, so whatever touches them runs there (run_on_loop); the
// store of kept prompts has its own lock, so taking from it does not wait for a step.
#include <algorithm>
#include <memory>

#include "engine/engine_impl.h"
#include "lumen/prompt_kv_exchange.h"
#include "util/error.h"

namespace lumen {

void Engine::Impl::keep_completed_prompts(const engine::StepPlan& plan) {
  for (const engine::ScheduledChunk& chunk : plan.chunks) {
    const engine::Sequence& seq = *chunk.seq;
    // The step that computed a prompt's last token, before anything was generated (a recompute
    // after preemption, or a fork, has generated tokens and was kept already).
    if (!chunk.samples || seq.n_generated() != 0 || seq.n_computed != seq.prompt_len) continue;
    const std::optional<uint64_t> request = outputs.request_of(seq.id);
    if (!request) continue;  // ended with an error this step: its blocks were not published
    std::optional<engine::StoredPromptKv> entry =
        engine::capture_prompt_kv(kv_space, cache, seq.tokens, seq.blocks.cache_salt());
    if (!entry) continue;  // shorter than a block
    entry->request_id = *request;
    prompt_kv_store->add(std::move(*entry));
  }
}

std::future<int64_t> Engine::Impl::run_on_loop(std::function<int64_t()> work) {
  auto task = std::make_shared<std::packaged_task<int64_t()>>(std::move(work));
  std::future<int64_t> result = task->get_future();
  {
    std::lock_guard lock(inbox_mutex);
    tasks.emplace_back([task] { (*task)(); });
  }
  work_arrived.notify_all();
  return result;
}

uint64_t PromptKvExchange::kv_format() const { return engine_->impl_->kv_format; }

size_t PromptKvExchange::kv_page_bytes() const { return engine_->impl_->cache.block_host_bytes(); }

size_t PromptKvExchange::kv_transfer_pages(int64_t n_known, int64_t n_tokens) const {
  const Engine::Impl& m = *engine_->impl_;
  const int64_t bs = m.config.block_size;
  const int64_t end = std::max<int64_t>(0, n_tokens) / bs * bs;
  return kv::transfer_blocks(m.layout, std::clamp<int64_t>(n_known, 0, end) / bs * bs, end, bs).size();
}

std::optional<PromptKv> PromptKvExchange::take_prompt_kv(uint64_t request_id, const std::vector<int32_t>& prompt,
                                                         uint64_t cache_salt, int64_t n_known) {
  Engine::Impl& m = *engine_->impl_;
  if (!m.prompt_kv_store) fail("this engine keeps no prompts' K/V (EngineConfig::prompt_kv_store_bytes is 0)");
  std::optional<PromptKv> kv = m.prompt_kv_store->take(request_id, prompt, kv::mix64(m.hash_key ^ cache_salt),
                                                       n_known, m.config.block_size);
  if (kv) {
    kv->format = m.kv_format;
    kv->cache_salt = cache_salt;
  }
  return kv;
}

std::future<int64_t> PromptKvExchange::cached_prompt_tokens(std::vector<int32_t> prompt, uint64_t cache_salt) {
  Engine::Impl& m = *engine_->impl_;
  m.check_prompt_kv_possible();
  return m.run_on_loop([&m, prompt = std::move(prompt), cache_salt] {
    return engine::cached_prompt_tokens(m.kv_space, prompt, kv::mix64(m.hash_key ^ cache_salt));
  });
}

std::future<int64_t> PromptKvExchange::import_prompt_kv(std::vector<int32_t> prompt, PromptKv kv) {
  Engine::Impl& m = *engine_->impl_;
  m.check_prompt_kv_possible();
  if (kv.format != m.kv_format) {
    fail("the K/V was computed for another model or cache configuration (format {:016x}, this engine's {:016x}): "
         "both engines need the same model file, KV cache type, rotation and block size", kv.format, m.kv_format);
  }
  engine::check_imported_pages(m.cache, kv);
  // The task runs on the loop, which the engine (and so m) outlives.
  return m.run_on_loop([&m, prompt = std::move(prompt), kv = std::move(kv)] {
    const int64_t added =
        engine::import_prompt_kv(m.kv_space, m.cache, prompt, kv::mix64(m.hash_key ^ kv.cache_salt), kv);
    m.imported_tokens += static_cast<uint64_t>(added);
    return added;
  });
}

PromptKvStats PromptKvExchange::stats() const {
  const Engine::Impl& m = *engine_->impl_;
  PromptKvStats s;
  // The store of kept prompts is taken from by other threads: read now, not at the last step.
  if (m.prompt_kv_store) {
    const engine::PromptKvStoreCounters kept = m.prompt_kv_store->counters();
    s.stored = kept.stored;
    s.taken = kept.taken;
    s.evicted = kept.evicted;
  }
  s.imported_tokens = m.imported_tokens;
  return s;
}

}  // namespace lumen
