#pragma once
// Placing given embedding vectors (ForwardBatch::embeddings: an image encoder's features) over
// the token embeddings of a step's rows.
#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "model/forward_batch.h"

namespace lumen::model {

// Fails (lumen::Error) for a span outside rows [0, n_rows), without values, or overlapping another.
void check_embedding_spans(std::span<const EmbeddingSpan> spans, int64_t n_rows);

// Copies each span's vectors into its rows of x (n_rows x embedding_length, F32). Called after
// the token rows were looked up and scaled: the given vectors are taken as they are, never
// scaled by sqrt(embedding_length) the way Gemma's token embeddings are. llama.cpp does the same
// (src/models/gemma3.cpp scales only a batch of tokens, "do not normalize weights for raw
// embeddings input"), and Gemma 3's projector already ends in its own norm.
void place_embedding_spans(backend::Backend& backend, const backend::TensorView& x,
                           std::span<const EmbeddingSpan> spans);

}  // namespace lumen::model
