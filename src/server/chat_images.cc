#include "server/chat_images.h"

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

void expand_image_markers(const Model& model, const ImageEncoder::PromptFormat& format, std::vector<int32_t>& prompt,
                          std::vector<PromptImage>& images) {
  const std::vector<int32_t> marker = model.tokenize(format.marker, {.add_special = false, .parse_special = true});
  if (marker.size() != 1 || model.tokenize(format.marker, {.add_special = false, .parse_special = false}) == marker) {
    fail("the image marker \"{}\" is not one control token of the model's vocabulary", format.marker);
  }
  const std::vector<int32_t> before = model.tokenize(format.before, {.add_special = false, .parse_special = true});
  const std::vector<int32_t> after = model.tokenize(format.after, {.add_special = false, .parse_special = true});
  size_t n_markers = 0;
  for (int32_t token : prompt) n_markers += token == marker[0] ? 1 : 0;
  if (n_markers != images.size()) {
    invalid("messages", "the chat template placed {} image markers for {} images", n_markers, images.size());
  }
  std::vector<int32_t> out;
  size_t next = 0;
  for (int32_t token : prompt) {
    if (token != marker[0]) {
      out.push_back(token);
      continue;
    }
    PromptImage& image = images[next++];
    out.insert(out.end(), before.begin(), before.end());
    image.first_token = static_cast<int64_t>(out.size());
    out.insert(out.end(), static_cast<size_t>(image.n_tokens), marker[0]);
    out.insert(out.end(), after.begin(), after.end());
  }
  prompt = std::move(out);
}

std::vector<PromptImage> place_chat_images(Engine& engine, const Model& model, const std::vector<ImagePart>& images,
                                           const ImageFetchLimits& fetch, std::vector<int32_t>& prompt) {
  check_images_servable(model, images);
  std::vector<PromptImage> placed;
  for (const ImagePart& image : images) {
    const std::string fetched = image.remote_url.empty() ? std::string() : fetch_image(image.remote_url, fetch);
    const std::string& bytes = image.remote_url.empty() ? image.bytes : fetched;
    try {
      placed.push_back(engine.encode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    } catch (const Error& e) {
      invalid("messages", "image {}: {}", placed.size(), e.what());
    }
  }
  expand_image_markers(model, model.image_encoder()->prompt_format(), prompt, placed);
  return placed;
}

}  // namespace lumen::server
