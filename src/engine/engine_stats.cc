// What an engine reports about itself (EngineStats): counters the loop thread copies after each
// step, so that stats() may be called from any thread.
#include "engine/engine_impl.h"

namespace lumen {

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
  if (m.states) {
    s.state_slots_total = m.states->n_slots();
    s.state_cache_bytes = m.states->bytes();
    s.state_slots_used = m.states->n_slots() - m.scheduler.n_free_state_slots();
  }
  if (m.state_swap) s.state_swap_slots_used = m.state_swap->n_slots() - m.state_swap->n_free();
  if (m.snapshots) {
    s.state_snapshots_used = m.snapshots->n_used();
    s.state_snapshots_total = m.snapshots->n_entries();
    s.state_snapshot_bytes = m.snapshots->bytes();
    const engine::StateSnapshotCounters& sc = m.snapshots->counters();
    s.state_prefix_queries = sc.queries;
    s.state_prefix_hits = sc.hits;
    s.state_prefix_hit_tokens = sc.hit_tokens;
  }
  const kv::PrefixCacheCounters& c = m.pool.counters();
  s.prefix_queried_blocks = c.queried_blocks;
  s.prefix_hit_blocks = c.hit_blocks;
  s.prefix_evictions = c.evictions;
  s.computed_tokens = m.computed_tokens;
  s.generated_tokens = m.outputs.generated_tokens();
  s.preemptions = m.scheduler.n_preemptions();
  s.swapped_out_blocks = m.scheduler.n_swapped_out_blocks();
  s.context_shifts = m.scheduler.n_context_shifts();
  s.kv_evictions = m.scheduler.n_kv_evictions();
  s.late_grammar_masks = m.outputs.deferred_samples();
  s.steps = m.steps;
  s.step_seconds = m.step_seconds;
  s.forward_seconds = m.forward_seconds;
  s.argmax_rows = m.runner.argmax_rows();
  s.leading_rows = m.runner.leading_rows();
  s.rows_brought_back = m.runner.rows_brought_back();
  s.max_model_len = m.max_model_len;
  const engine::SpeculationCounters& spec = m.speculation.counters();
  s.spec_drafts = spec.drafts;
  s.spec_draft_tokens = spec.draft_tokens;
  s.spec_accepted_tokens = spec.accepted_tokens;
  s.spec_branch_tokens = spec.branch_tokens;
  s.spec_paused_steps = spec.paused_steps;
  if (const model::ExpertParallelFfn* parallel = m.model.transformer->expert_parallel()) {
    // The load counts every expert on every rank (each routes every token); ranks hold equal
    // contiguous ranges.
    const model::ExpertLoad& load = *m.model.transformer->expert_load();
    const int ranks = m.model.transformer->expert_shard().size;
    s.expert_pairs_per_rank.assign(static_cast<size_t>(ranks), 0);
    const int64_t per_rank = load.experts / ranks;
    for (size_t i = 0; i < load.tokens.size(); ++i) {
      s.expert_pairs_per_rank[static_cast<size_t>((static_cast<int64_t>(i) % load.experts) / per_rank)] +=
          load.tokens[i];
    }
    s.expert_exchanged_bytes = parallel->traffic().bytes;
    const auto rows = m.model.transformer->attention_rows_per_rank();
    s.attention_rows_per_rank.assign(rows.begin(), rows.end());
  }
  std::lock_guard lock(stats_mutex);
  snapshot = s;
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lock(impl_->stats_mutex);
    s = impl_->snapshot;
  }
  s.image_feature_cache_hits = impl_->image_features.hits();
  s.image_feature_cache_misses = impl_->image_features.misses();
  s.image_feature_cache_bytes = impl_->image_features.bytes();
  // Submitted but not yet seen by the loop: waiting too.
  std::lock_guard lock(impl_->inbox_mutex);
  s.waiting += static_cast<int64_t>(impl_->inbox.size());
  return s;
}

}  // namespace lumen
