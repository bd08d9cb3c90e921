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
    const auto want = static_cast<size_t>(image.n_tokens) * static_cast<size_t>(embedding_length);
    if (!image.embeddings || image.embeddings->size() != want) {
      fail("image {} has {} embedding values; {} tokens of width {} need {}", i,
           image.embeddings ? image.embeddings->size() : 0, image.n_tokens, embedding_length, want);
    }
    // A NaN or infinity would poison every later position's attention, the cached K/V with it.
    if (!std::all_of(image.embeddings->begin(), image.embeddings->end(), [](float v) { return std::isfinite(v); })) {
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
      // Also where the image starts and ends, so two images in one block, or one image moved by
      // a token, key it differently.
      const uint64_t where = kv::mix64(static_cast<uint64_t>(image.first_token) * 0x9e3779b97f4a7c15ULL ^
                                       static_cast<uint64_t>(image.n_tokens));
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

void append_image_spans(std::span<const PromptImage> images, int64_t first_position, int64_t n, int64_t first_row,
                        int64_t embedding_length, std::vector<model::EmbeddingSpan>& out) {
  const int64_t end = first_position + n;
  for (const PromptImage& image : images) {
    const int64_t lo = std::max(first_position, image.first_token);
    const int64_t hi = std::min(end, image.first_token + image.n_tokens);
    if (lo >= hi) continue;
    const float* values = image.embeddings->data() + static_cast<size_t>((lo - image.first_token) * embedding_length);
    out.push_back({first_row + (lo - first_position), hi - lo, values});
  }
}

}  // namespace lumen::engine
