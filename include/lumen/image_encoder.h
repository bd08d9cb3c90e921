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

// What an encoder makes of one image: its feature vectors, and how they stand in a prompt.
struct EncodedImage {
  // n x embedding_length floats, row-major: every position the image takes, in prompt order.
  std::vector<float> features;
  // The image's place in a prompt, piece by piece: each piece's text (control tokens, parsed as
  // such: Gemma 3's "\n\n<start_of_image>", SmolVLM's "<fake_token_around_image><row_1_col_1>"),
  // then its next n_tokens feature positions (0: text only, such as a closing
  // "<end_of_image>"). The n_tokens sum to n. A LLaVA image is one piece {"", 576}; SmolVLM's
  // tiles and global image are a piece each, with the row and column markers between them.
  struct Piece {
    std::string text;
    int64_t n_tokens = 0;
  };
  std::vector<Piece> layout;
};

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // The width of a feature vector: the language model's embedding_length.
  virtual int64_t embedding_length() const = 0;
  // The image file (its bytes as sent: PNG, JPEG, WebP, GIF) decoded, preprocessed (tiles
  // included) and encoded. Throws lumen::Error for an image it refuses (format, size, too many
  // pixels). Called from several threads at once (each HTTP request encodes on its own thread).
  virtual EncodedImage encode(std::span<const uint8_t> file) const = 0;
  // What the model's chat template writes for an image part ({"type": "image"}): one control
  // token of the vocabulary ("<image>", "<start_of_image>"). The server replaces each such token
  // the template wrote with the image's layout.
  virtual std::string image_marker() const = 0;
  // Every control token the layouts of encode() may write, image_marker() included (SmolVLM:
  // "<fake_token_around_image>", "<global-img>", "<row_R_col_C>" up to the largest grid). A
  // model whose vocabulary lacks one is refused at load: the token's text would otherwise be
  // tokenized as characters, and the image would stand in the wrong prompt without a word.
  virtual std::vector<std::string> control_tokens() const { return {image_marker()}; }
  // Whether the positions of one image span (PromptImage) attend to each other both ways in
  // the language model (Gemma 3), not only causally. The engine then computes each such span in
  // one step, its rows seeing the whole span (backend::SequenceSlice::key_ends).
  virtual bool image_attends_both_ways() const { return false; }
};

}  // namespace lumen
