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
// overlapping, each with n_tokens x embedding_length finite vectors.
void check_prompt_images(std::span<const PromptImage> images, int64_t prompt_len, int64_t embedding_length);

// The extra prefix-cache salt of every block holding image positions: the content hashes of the
// images it holds (kv::SequenceBlocks::salt_blocks).
std::vector<kv::SequenceBlocks::BlockSalt> image_block_salts(std::span<const PromptImage> images, int64_t block_size);

// The spans of positions [first_position, first_position + n) that images cover, as embedding
// spans of a batch whose row first_row holds first_position; appended to `out`.
void append_image_spans(std::span<const PromptImage> images, int64_t first_position, int64_t n, int64_t first_row,
                        int64_t embedding_length, std::vector<model::EmbeddingSpan>& out);

}  // namespace lumen::engine
