#pragma once
// One forward pass's input: the tokens of every sequence in the step, concatenated (a flat
// batch), each sequence attending through its own block tables.
#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace lumen::model {

class StateCache;

// Rows of the flat batch whose input is given as embedding vectors rather than looked up from
// token ids: an image's features from a vision encoder, placed at the prompt's image tokens
// (whose ids are then only placeholders). `values` holds n_rows x embedding_length floats in
// host memory, row-major, and must live until forward() returns.
struct EmbeddingSpan {
  int64_t first_row = 0;  // batch row of the first vector
  int64_t n_rows = 0;
  const float* values = nullptr;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;      // all tokens of the step
  std::span<const int32_t> positions;   // one per token
  // One slice per sequence and per layer group of the cache's layout, group by group: the
  // slices of group g are sequences[g * n_seqs, (g + 1) * n_seqs), the same sequences in the
  // same order, each with that group's block table.
  std::span<const backend::SequenceSlice> sequences;
  std::span<const int32_t> logit_rows;  // batch rows whose logits are wanted, in output order
  // Importance-based KV eviction (engine/kv_importance.h): sequences whose attention weights
  // are added to a score table (Backend::attention_scores), layer by layer.
  struct ScoreRequest {
    size_t sequence = 0;      // index into the first group's slices
    int64_t first_row = 0;    // the slice's rows from here on are scored
    float* scores = nullptr;  // [slot][layer * n_kv_heads + kv_head]
  };
  std::span<const ScoreRequest> scores = {};
  // State-space models (model/state_cache.h): the states, and each sequence's slot in them (in
  // the order of the first group's slices). A sequence whose slice starts at position 0 starts
  // from a zero state; any other continues the state its slot holds. Null / empty otherwise.
  StateCache* states = nullptr;
  std::span<const int32_t> state_slots = {};
  // Rows taking given embeddings (EmbeddingSpan), in any order, never overlapping.
  std::span<const EmbeddingSpan> embeddings = {};
  // How the logit rows come back (backend::StepMetadata::row_forms, argmax, leading,
  // leading_scale): empty, or a form per logit row; an Argmax row whose argmax entry's token
  // is not -1 afterwards, or a Leading row whose leading entry's count is not -1, may have no
  // logits written (Transformer::copy_logit_rows brings them back).
  std::span<const uint8_t> row_forms = {};
  backend::RowArgmax* argmax = nullptr;
  backend::RowLeading* leading = nullptr;
  std::span<const float> leading_scale = {};
};

}  // namespace lumen::model
