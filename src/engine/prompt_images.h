#pragma once
// Images in a prompt (lumen/prompt_image.h) as the engine uses them: checked once when the
// request is added, turned into the prefix cache's block salts, and cut into the embedding
// spans of each step's chunk (chunked prefill and recomputes after preemption cut through an
// image anywhere).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/sequence_blocks.h"
#include "lumen/prompt_image.h"
#include "model/forward_batch.h"

namespace lumen::engine {

using PromptImages = std::vector<PromptImage>;

// Fails (lumen::Error) unless the images lie in the prompt [0, prompt_len) in order, without
// overlapping, each with n_tokens finite vectors of embedding_length from its embeddings_row on.
void check_prompt_images(std::span<const PromptImage> images, int64_t prompt_len, int64_t embedding_length);

// The extra prefix-cache salt of every block holding image positions: the content hashes of the
// images it holds (kv::SequenceBlocks::salt_blocks).
std::vector<kv::SequenceBlocks::BlockSalt> image_block_salts(std::span<const PromptImage> images, int64_t block_size);

// The spans of positions [first_position, first_position + n) that images cover, as embedding
// spans of a batch whose row first_row holds first_position; appended to `out`.
void append_image_spans(std::span<const PromptImage> images, int64_t first_position, int64_t n, int64_t first_row,
                        int64_t embedding_length, std::vector<model::EmbeddingSpan>& out);

// Images whose positions attend to each other both ways (Gemma 3) are computed a span in one
// step: its rows must see its later keys. Fails unless every span fits in one step's
// max_num_batched_tokens.
void check_whole_image_spans(std::span<const PromptImage> images, int64_t max_num_batched_tokens);

// How many of a prefill chunk's n wanted tokens from position `from` to compute so that it ends
// outside every image span: cut back to the start of the span it would end in, or, when that
// span starts at or before `from` (nothing would be left), run on to the span's end if that
// stays within `limit` tokens, else 0 (the sequence waits for a step with room).
int64_t whole_image_span_chunk(std::span<const PromptImage> images, int64_t from, int64_t n, int64_t limit);

// Whether positions [from, from + n) hold any image's.
bool holds_image_rows(std::span<const PromptImage> images, int64_t from, int64_t n);

// For each of a chunk's rows [from, from + n) (cache positions), the end (exclusive) of the
// keys it sees: the end of its image span for rows of one, its own position plus one for the
// others (backend::SequenceSlice::key_ends); appended to `out`. The chunk must hold whole spans
// from `from` on (whole_image_span_chunk).
void append_key_ends(std::span<const PromptImage> images, int64_t from, int64_t n, std::vector<int32_t>& out);

}  // namespace lumen::engine
