#pragma once
// Images placed in a prompt at the image markers its chat template wrote: what the server, `lumen
// run --image`, `lumen chat`'s /image and the Python package's LLM.chat share, so that an image
// stands in a prompt the same way whichever door it came in by.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "lumen/model.h"
#include "lumen/prompt_image.h"

namespace lumen {

// Replaces the i-th `marker` token of `prompt` with images[i]'s layout (EncodedImage::layout):
// each piece's text, then its feature positions (placeholders: the marker's own id), and returns
// the prompt images of those positions, in order. `marker` is the encoder's image_marker(); it
// must be one control token of the model's vocabulary. Throws lumen::Error, leaving `prompt` as
// it was, when it is not, or when the prompt holds another number of markers than images.
std::vector<PromptImage> place_images_at_markers(const Model& model, const std::string& marker,
                                                 std::vector<int32_t>& prompt,
                                                 const std::vector<Engine::ImageFeatures>& images);

// How many `marker` tokens `prompt` holds; nothing when the marker is not one control token.
std::optional<size_t> count_image_markers(const Model& model, const std::string& marker,
                                          const std::vector<int32_t>& prompt);

}  // namespace lumen
