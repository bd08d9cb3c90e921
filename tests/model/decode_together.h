#pragma once
// Decode steps of several sequences at once on the real model, straight through
// Transformer::forward: each sequence's prompt is prefilled on its own (its own blocks of one
// cache), then every step feeds each sequence its greedy token, one token per sequence. So all
// decode steps have the same shape while their token ids and positions differ: what a replayed
// step (Backend::run_replayable, CUDA graphs) must handle.
#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "engine/loaded_model.h"
#include "model/kv_cache.h"

namespace lumen::testing {

// The logits of every decode step (n_seqs rows of the vocabulary each). Sequence s's prompt has
// first_prompt + 7 s tokens.
inline std::vector<std::vector<float>> decode_together(engine::LoadedModel& model, backend::Backend& backend,
                                                       size_t n_seqs, int decode_steps, int64_t first_prompt = 12) {
  constexpr int64_t kBlock = 16;
  const int64_t blocks_per_seq = (first_prompt + 7 * static_cast<int64_t>(n_seqs) + decode_steps) / kBlock + 1;
  model::KvCache cache(backend, model.hparams, blocks_per_seq * static_cast<int64_t>(n_seqs), kBlock);
  const auto vocab = static_cast<size_t>(model.hparams.vocab_size);
  std::vector<std::vector<int32_t>> tables(n_seqs, std::vector<int32_t>(static_cast<size_t>(blocks_per_seq)));
  std::vector<int32_t> next(n_seqs), position(n_seqs);
  for (size_t s = 0; s < n_seqs; ++s) {
    std::iota(tables[s].begin(), tables[s].end(), static_cast<int32_t>(s * static_cast<size_t>(blocks_per_seq)));
    std::vector<int32_t> prompt(static_cast<size_t>(first_prompt) + 7 * s);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(200 + 31 * (i + s) % 4000);
    std::vector<int32_t> pos(prompt.size());
    std::iota(pos.begin(), pos.end(), 0);
    const backend::SequenceSlice slice{0, static_cast<int64_t>(prompt.size()), 0, tables[s]};
    const int32_t last = static_cast<int32_t>(prompt.size() - 1);
    std::vector<float> logits(vocab);
    model.transformer->forward({prompt, pos, std::span(&slice, 1), std::span(&last, 1)}, cache, logits.data());
    next[s] = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    position[s] = static_cast<int32_t>(prompt.size());
  }
  std::vector<std::vector<float>> steps;
  for (int step = 0; step < decode_steps; ++step) {
    std::vector<backend::SequenceSlice> slices;
    std::vector<int32_t> rows(n_seqs);
    for (size_t s = 0; s < n_seqs; ++s) {
      slices.push_back({static_cast<int64_t>(s), 1, position[s], tables[s]});
      rows[s] = static_cast<int32_t>(s);
    }
    std::vector<float> logits(vocab * n_seqs);
    const std::vector<int32_t> tokens = next, positions = position;
    model.transformer->forward({tokens, positions, slices, rows}, cache, logits.data());
    for (size_t s = 0; s < n_seqs; ++s) {
      const float* row = logits.data() + s * vocab;
      next[s] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
      ++position[s];
    }
    steps.push_back(std::move(logits));
  }
  return steps;
}

}  // namespace lumen::testing
