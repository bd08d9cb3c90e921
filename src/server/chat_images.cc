#include "server/chat_images.h"

#include <algorithm>
#include <span>

#include "server/api_error.h"
#include "server/image_fetch.h"
#include "util/error.h"

namespace lumen::server {

void check_images_servable(const Model& model, const std::vector<ImagePart>& images) {
  if (images.empty()) return;
  if (!model.image_encoder()) {
    invalid("messages",
            "this model has no vision encoder; start lumen serve with --mmproj (the model's projector file)");
  }
}

std::vector<PromptImage> expand_image_markers(const Model& model, const std::string& marker,
                                              std::vector<int32_t>& prompt,
                                              const std::vector<Engine::ImageFeatures>& images) {
  const TokenizeOptions special{.add_special = false, .parse_special = true};
  const std::vector<int32_t> marker_ids = model.tokenize(marker, special);
  if (marker_ids.size() != 1 || model.tokenize(marker, {.add_special = false, .parse_special = false}) == marker_ids) {
    fail("the image marker \"{}\" is not one control token of the model's vocabulary", marker);
  }
  const int32_t id = marker_ids[0];
  const auto n_markers = static_cast<size_t>(std::count(prompt.begin(), prompt.end(), id));
  if (n_markers != images.size()) {
    invalid("messages", "the chat template placed {} image markers for {} images", n_markers, images.size());
  }
  std::vector<PromptImage> placed;
  std::vector<int32_t> out;
  size_t next = 0;
  for (int32_t token : prompt) {
    if (token != id) {
      out.push_back(token);
      continue;
    }
    const Engine::ImageFeatures& image = images[next++];
    // The rows are the encoded image's own vector, shared with the feature cache.
    const std::shared_ptr<const std::vector<float>> rows(image.encoded, &image.encoded->features);
    int64_t row = 0;
    for (const EncodedImage::Piece& piece : image.encoded->layout) {
      const std::vector<int32_t> text = model.tokenize(piece.text, special);
      out.insert(out.end(), text.begin(), text.end());
      if (piece.n_tokens == 0) continue;
      placed.push_back({image.content_hash, static_cast<int64_t>(out.size()), piece.n_tokens, rows, row});
      out.insert(out.end(), static_cast<size_t>(piece.n_tokens), id);
      row += piece.n_tokens;
    }
  }
  prompt = std::move(out);
  return placed;
}

std::vector<PromptImage> place_chat_images(Engine& engine, const Model& model, const std::vector<ImagePart>& images,
                                           const ImageFetchLimits& fetch, std::vector<int32_t>& prompt) {
  check_images_servable(model, images);
  std::vector<Engine::ImageFeatures> encoded;
  for (const ImagePart& image : images) {
    const std::string fetched = image.remote_url.empty() ? std::string() : fetch_image(image.remote_url, fetch);
    const std::string& bytes = image.remote_url.empty() ? image.bytes : fetched;
    try {
      encoded.push_back(engine.encode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    } catch (const Error& e) {
      invalid("messages", "image {}: {}", encoded.size(), e.what());
    }
  }
  return expand_image_markers(model, model.image_encoder()->image_marker(), prompt, encoded);
}

}  // namespace lumen::server
