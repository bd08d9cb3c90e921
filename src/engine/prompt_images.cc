#include "engine/prompt_images.h"

#include <algorithm>
#include <cmath>

#include "kv/block_hash.h"
#include "util/error.h"

namespace lumen::engine {

void check_prompt_images(std::span<const PromptImage> images, int64_t prompt_len, int64_t embedding_length) {
  int64_t end_of_last = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const PromptImage& image = images[i];
    if (image.n_tokens <= 0 || image.first_token < end_of_last || image.first_token > prompt_len - image.n_tokens) {
      fail(
          "image {} covers prompt positions [{}, +{}): images must lie in the prompt's {} positions, in order, "
          "without overlapping",
          i, image.first_token, image.n_tokens, prompt_len);
    }
    const auto width = static_cast<size_t>(embedding_length);
    const size_t have = image.embeddings ? image.embeddings->size() / width : 0;
    if (!image.embeddings || image.embeddings->size() % width != 0 || image.embeddings_row < 0 ||
        static_cast<size_t>(image.embeddings_row) > have ||
        static_cast<size_t>(image.n_tokens) > have - static_cast<size_t>(image.embeddings_row)) {
      fail("image {} takes embedding rows [{}, +{}) of {} values (rows of width {})", i, image.embeddings_row,
           image.n_tokens, image.embeddings ? image.embeddings->size() : 0, embedding_length);
    }
    // A NaN or infinity would poison every later position's attention, the cached K/V with it.
    const float* rows = image.embeddings->data() + static_cast<size_t>(image.embeddings_row) * width;
    if (!std::all_of(rows, rows + static_cast<size_t>(image.n_tokens) * width,
                     [](float v) { return std::isfinite(v); })) {
      fail("image {} has embedding values that are not finite", i);
    }
    end_of_last = image.first_token + image.n_tokens;
  }
}

std::vector<kv::SequenceBlocks::BlockSalt> image_block_salts(std::span<const PromptImage> images, int64_t block_size) {
  std::vector<kv::SequenceBlocks::BlockSalt> salts;
  for (const PromptImage& image : images) {
    const uint64_t id = kv::mix64(image.content_hash[0] ^ kv::mix64(image.content_hash[1]));
    const auto first = static_cast<size_t>(image.first_token / block_size);
    const auto last = static_cast<size_t>((image.first_token + image.n_tokens - 1) / block_size);
    for (size_t b = first; b <= last; ++b) {
      // Also where the image starts and ends and which of its rows it takes, so two images in
      // one block, one image moved by a token, or another tile of it, key it differently.
      const uint64_t where = kv::mix64(kv::mix64(static_cast<uint64_t>(image.first_token) * 0x9e3779b97f4a7c15ULL ^
                                                 static_cast<uint64_t>(image.n_tokens)) ^
                                       static_cast<uint64_t>(image.embeddings_row));
      const uint64_t salt = kv::mix64(id ^ where);
      if (!salts.empty() && salts.back().block == b) {
        salts.back().salt = kv::mix64(salts.back().salt ^ salt);
      } else {
        salts.push_back({b, salt});
      }
    }
  }
  return salts;
}

void check_whole_image_spans(std::span<const PromptImage> images, int64_t max_num_batched_tokens) {
  for (const PromptImage& image : images) {
    if (image.n_tokens > max_num_batched_tokens) {
      fail(
          "an image takes {} positions, and this model's image positions attend to each other, so they are computed "
          "in one step; max_num_batched_tokens is {}: raise it to at least {}",
          image.n_tokens, max_num_batched_tokens, image.n_tokens);
    }
  }
}

int64_t whole_image_span_chunk(std::span<const PromptImage> images, int64_t from, int64_t n, int64_t limit) {
  if (n <= 0) return n;
  const int64_t end = from + n;
  for (const PromptImage& image : images) {
    const int64_t span_end = image.first_token + image.n_tokens;
    if (image.first_token >= end) break;                            // in order (check_prompt_images)
    if (end >= span_end) continue;                                  // the chunk ends after this span, or at its end
    if (image.first_token > from) return image.first_token - from;  // ends inside it: stop before it
    // The span started at or before `from`: its rest comes whole or not at all.
    return span_end - from <= limit ? span_end - from : 0;
  }
  return n;
}

bool holds_image_rows(std::span<const PromptImage> images, int64_t from, int64_t n) {
  return std::ranges::any_of(images, [&](const PromptImage& image) {
    return image.first_token < from + n && from < image.first_token + image.n_tokens;
  });
}

void append_key_ends(std::span<const PromptImage> images, int64_t from, int64_t n, std::vector<int32_t>& out) {
  const int64_t end = from + n;
  for (int64_t p = from; p < end; ++p) out.push_back(static_cast<int32_t>(p + 1));
  for (const PromptImage& image : images) {
    const int64_t span_end = image.first_token + image.n_tokens;
    const int64_t lo = std::max(from, image.first_token), hi = std::min(end, span_end);
    if (lo >= hi) continue;
    if (span_end > end)
      fail("model runner: a chunk ends inside an image span ({} of {}..{})", end, image.first_token, span_end);
    for (int64_t p = lo; p < hi; ++p) out[out.size() - static_cast<size_t>(end - p)] = static_cast<int32_t>(span_end);
  }
}

void append_image_spans(std::span<const PromptImage> images, int64_t first_position, int64_t n, int64_t first_row,
                        int64_t embedding_length, std::vector<model::EmbeddingSpan>& out) {
  const int64_t end = first_position + n;
  for (const PromptImage& image : images) {
    const int64_t lo = std::max(first_position, image.first_token);
    const int64_t hi = std::min(end, image.first_token + image.n_tokens);
    if (lo >= hi) continue;
    const float* values = image.embeddings->data() +
                          static_cast<size_t>((image.embeddings_row + lo - image.first_token) * embedding_length);
    out.push_back({first_row + (lo - first_position), hi - lo, values});
  }
}

}  // namespace lumen::engine
