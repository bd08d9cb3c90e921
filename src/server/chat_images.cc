#include "server/chat_images.h"

#include <span>

#include "lumen/image_markers.h"
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
  // A count that does not match is the request's doing (a template that did not place them): a
  // 400. The placing itself is the one every door shares (lumen/image_markers.h), which throws
  // lumen::Error for a marker that is not one control token.
  const std::optional<size_t> n_markers = count_image_markers(model, marker, prompt);
  if (n_markers && *n_markers != images.size()) {
    invalid("messages", "the chat template placed {} image markers for {} images", *n_markers, images.size());
  }
  return place_images_at_markers(model, marker, prompt, images);
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
