#pragma once
// An image in a prompt, as the engine takes it: the image's features (embedding vectors from
// the model's image encoder, lumen/image_encoder.h) stand at n_tokens consecutive positions of
// the prompt, whose token ids there are only placeholders (the model's image token, or any id
// in the vocabulary: the features replace their embeddings).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace lumen {

// An image's identity: 128 bits of a hash of its content (ImageEncoder's inputs, e.g. the file's
// bytes). Equal ids are taken to be the same image: the prefix cache shares the K/V of blocks
// holding image positions only between prompts with the same tokens and the same image ids there.
using ImageContentHash = std::array<uint64_t, 2>;

struct PromptImage {
  ImageContentHash content_hash{};
  int64_t first_token = 0;  // the first position it covers
  int64_t n_tokens = 0;     // positions covered: [first_token, first_token + n_tokens)
  // n_tokens x the model's embedding_length floats, row-major; shared, never copied (the
  // request's forks and recomputes after preemption read the same vectors).
  std::shared_ptr<const std::vector<float>> embeddings;
};

}  // namespace lumen
