// Images placed at a prompt's markers (lumen/image_markers.h).
#include "lumen/image_markers.h"

#include <algorithm>

#include "util/error.h"

namespace lumen {

namespace {

constexpr TokenizeOptions kSpecial{.add_special = false, .parse_special = true};

// The marker's token id, or nothing when the marker is not one control token (text that
// tokenizes the same with and without special parsing is not a control token).
std::optional<int32_t> marker_id(const Model& model, const std::string& marker) {
  const std::vector<int32_t> ids = model.tokenize(marker, kSpecial);
  if (ids.size() != 1 || model.tokenize(marker, {.add_special = false, .parse_special = false}) == ids) {
    return std::nullopt;
  }
  return ids[0];
}

}  // namespace

std::optional<size_t> count_image_markers(const Model& model, const std::string& marker,
                                          const std::vector<int32_t>& prompt) {
  const std::optional<int32_t> id = marker_id(model, marker);
  if (!id) return std::nullopt;
  return static_cast<size_t>(std::count(prompt.begin(), prompt.end(), *id));
}

std::vector<PromptImage> place_images_at_markers(const Model& model, const std::string& marker,
                                                 std::vector<int32_t>& prompt,
                                                 const std::vector<Engine::ImageFeatures>& images) {
  const std::optional<int32_t> id = marker_id(model, marker);
  if (!id) fail("the image marker \"{}\" is not one control token of the model's vocabulary", marker);
  const auto n_markers = static_cast<size_t>(std::count(prompt.begin(), prompt.end(), *id));
  if (n_markers != images.size()) {
    fail("the chat template placed {} image markers for {} images", n_markers, images.size());
  }
  std::vector<PromptImage> placed;
  std::vector<int32_t> out;
  size_t next = 0;
  for (int32_t token : prompt) {
    if (token != *id) {
      out.push_back(token);
      continue;
    }
    const Engine::ImageFeatures& image = images[next++];
    // The rows are the encoded image's own vector, shared with the feature cache.
    const std::shared_ptr<const std::vector<float>> rows(image.encoded, &image.encoded->features);
    int64_t row = 0;
    for (const EncodedImage::Piece& piece : image.encoded->layout) {
      const std::vector<int32_t> text = model.tokenize(piece.text, kSpecial);
      out.insert(out.end(), text.begin(), text.end());
      if (piece.n_tokens == 0) continue;
      placed.push_back({image.content_hash, static_cast<int64_t>(out.size()), piece.n_tokens, rows, row});
      out.insert(out.end(), static_cast<size_t>(piece.n_tokens), *id);
      row += piece.n_tokens;
    }
  }
  prompt = std::move(out);
  return placed;
}

}  // namespace lumen
