#pragma once
// `lumen chat`'s images: `/image PATH` attaches a file to the next user message. Each file is
// read within the image decoder's byte limit and encoded at once (through Engine::encode_image,
// the same bounded decode, preprocessing and feature cache as the server's image parts), so a
// missing or hostile file is told when it is attached and never reaches the conversation. The
// conversation keeps its images' features: every turn re-renders the whole conversation, and
// each image's markers are expanded again with the same vectors (and the same content hash, so
// the prefix cache reuses the K/V computed in earlier turns).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "lumen/model.h"

namespace lumen::cli {

class ChatImages {
 public:
  // As many as the server takes in one request by default (--max-images-per-request): every
  // turn carries the whole conversation, so this bounds each turn's encoded features too.
  static constexpr size_t kMaxImages = 8;

  ChatImages(Engine& engine, const Model& model) : engine_(engine), model_(model) {}

  // Reads and encodes `path` for the next message. Throws lumen::Error naming the file (and
  // changes nothing) when the model has no image encoder (--mmproj), when the file cannot be read,
  // is too large or is refused by the decoder, or when the conversation already holds kMaxImages.
  void attach(const std::string& path);

  size_t pending() const { return pending_.size(); }

  // The user message's content: the text alone when nothing is attached, else Hugging Face's
  // parts ({"type": "image"} per attached image, then {"type": "text"}) for the chat template to
  // place each image's marker. The attached images join the conversation.
  nlohmann::ordered_json take_user_content(const std::string& text);

  // Undoes the last take_user_content (its turn could not run): its images are pending again.
  void untake();

  // Expands the markers the template wrote in `prompt` for the conversation's images, in order
  // (lumen/image_markers.h). Throws lumen::Error when the template placed another number.
  std::vector<PromptImage> place(std::vector<int32_t>& prompt) const;

  // A new conversation: no images in it, none pending.
  void clear();

 private:
  Engine& engine_;
  const Model& model_;
  std::vector<Engine::ImageFeatures> conversation_;  // in the order their markers appear
  std::vector<Engine::ImageFeatures> pending_;
  size_t last_taken_ = 0;
};

}  // namespace lumen::cli
