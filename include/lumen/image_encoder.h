#pragma once
// The vision half of a vision-language model as the engine uses it: an encoder (a projector
// file's vision tower and connector, `--mmproj`) that turns an image file into feature vectors
// in the language model's embedding space. Those vectors stand at the image's placeholder
// positions of a prompt (lumen/prompt_image.h); Engine::encode_image runs the encoder through
// the engine's feature cache.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lumen {

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // The width of a feature vector: the language model's embedding_length.
  virtual int64_t embedding_length() const = 0;
  // The image file (its bytes as sent: PNG, JPEG, WebP, GIF) decoded, preprocessed and encoded:
  // n_tokens x embedding_length() floats, row-major, n_tokens > 0 the positions the image takes
  // in a prompt. Throws lumen::Error for an image it refuses (format, size, too many pixels).
  // Called from several threads at once (each HTTP request encodes on its own thread).
  virtual std::vector<float> encode(std::span<const uint8_t> file) const = 0;

  // How an image stands in a chat prompt. `marker`: what the model's chat template writes for
  // an image part ({"type": "image"}), one control token of the vocabulary ("<image>",
  // "<start_of_image>"); the server replaces each marker the template wrote with `before`, the
  // image's n_tokens positions, then `after` (control-token text such as Gemma 3's
  // "\n\n<start_of_image>" and "<end_of_image>\n\n"; either may be empty).
  struct PromptFormat {
    std::string marker;
    std::string before;
    std::string after;
  };
  virtual PromptFormat prompt_format() const = 0;
};

}  // namespace lumen
