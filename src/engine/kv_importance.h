#pragma once
// Importance-based KV eviction (include/lumen/kv_eviction.h: SnapKV and H2O), the engine's side.
//
// Scores. The forward pass adds, for the rows a sequence wants scored, the softmaxed attention
// of each layer's query heads to every cached slot, summed over the query heads sharing a KV
// head, into the sequence's score table: one float per slot, layer and KV head. Scored rows:
// SnapKV's observation window (W rows once per prompt), H2O's every row (the whole prompt once,
// then the one decode row per step). Where the backend declares attention_scored (the CPU's f16
// cache) they come from the attention's own probabilities, at one addition each; otherwise
// Backend::attention_scores runs a second q.k over the scored rows (Transformer::attend).
//
// Eviction. Before a decode step, when due (eviction_due), each layer and KV head chooses the
// slots it keeps (select_snapkv, select_h2o, in slot order), the sequence's blocks are compacted
// into the first ones of its table (SequenceKv::compact) and the runner gathers the kept rows
// head by head (Transformer::compact_kv) before anything else in the step writes the cache.
// Different heads keep different positions, so no token list describes the cache any more:
// `tokens` loses as many entries from its front as positions went (kept aside, to be restored
// when a preempted sequence is recomputed in full), and the sequence's rope positions continue
// from its full length (n_evicted). Kept keys keep their original rotary positions.
//
// Sliding-window layers count their window in slots (the attention masks by slot distance).
// That equals the true distance only while a layer's slots hold consecutive positions, so a
// local layer keeps its most recent slots (keep_recent_in_local_layers) instead of the scored
// ones: its slot j then holds position n_evicted + j, what position_of says, and its window
// covers exactly the kept keys within `window` positions of the query. Nothing a local layer
// could keep by score would serve it longer: queries only move forward, and a key older than
// the recent ones leaves every later query's window first. (Before this, scored slots far back
// stayed within a local layer's slot window: Gemma 3's 512-position layers attended to keys up
// to 1000 positions back, and its perplexity under SnapKV/H2O grew 4-11x; issue 53.)
// The engine refuses layouts that drop out-of-window blocks.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lumen/kv_eviction.h"

namespace lumen::engine {

struct Sequence;

struct KvImportanceState {
  KvImportance config;        // method None: off
  std::vector<float> scores;  // [slot][layer * n_kv_heads + kv_head]
  bool compressed = false;    // SnapKV: the prompt was compressed (or fit the budget)
  int64_t n_evicted = 0;      // positions gone: rope positions run n_evicted ahead of slots
  int64_t n_evicted_prompt = 0;
  std::vector<int32_t> evicted_tokens;  // the entries taken from the front of `tokens`
};

// For a chunk computing slots [n_computed, n_computed + n) of a sequence of n_tokens tokens:
// the first of its rows to score (n: none).
int64_t first_scored_row(const KvImportanceState& state, int64_t n_computed, int64_t n, int64_t n_tokens);

// For a sequence about to decode with n_computed slots: how many slots to keep now, or nullopt.
// SnapKV with a prompt within its budget is marked compressed here (nothing to do).
std::optional<int64_t> eviction_due(KvImportanceState& state, int64_t n_computed, int64_t block_size);

// The slots each of n_lh (layer, KV head) pairs keeps, n_keep each in increasing order:
// keep[lh * n_keep + j]. scores as KvImportanceState::scores for n_slots slots.
std::vector<int32_t> select_snapkv(std::span<const float> scores, int64_t n_slots, int64_t n_lh, int64_t window,
                                   int64_t kernel, int64_t n_keep);
std::vector<int32_t> select_h2o(std::span<const float> scores, int64_t n_slots, int64_t n_lh, int64_t recent,
                                int64_t n_keep);

// For each layer with a sliding window (layer_windows[l] != 0), every KV head's kept slots in
// `keep` (as select_snapkv's) become the last n_keep of n_slots; full-attention layers' stay.
void keep_recent_in_local_layers(std::span<int32_t> keep, std::span<const int64_t> layer_windows, int64_t n_kv_heads,
                                 int64_t n_slots, int64_t n_keep);

// After the sequence's blocks were compacted to n_keep slots: its scores follow their slots
// (H2O; SnapKV's are dropped), and its tokens and counters what it holds.
void record_eviction(Sequence& seq, std::span<const int32_t> keep, int64_t n_keep, int64_t n_lh);
// A sequence that starts over (recomputed after a preemption) gets back every token it had and
// is scored and evicted again from the start.
void restore_evicted(Sequence& seq);

}  // namespace lumen::engine
