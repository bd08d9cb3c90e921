#pragma once
// A chat request's images turned into the engine's prompt images: each image file encoded
// (Engine::encode_image, through the feature cache), and each image marker the chat template
// wrote into the prompt expanded into that image's positions. Only markers the template wrote
// count: message text is tokenized as plain text (a client writing "<image>" gets those
// characters, never an image slot), so the marker's control token can come from nowhere else.
#include <cstdint>
#include <vector>

#include "lumen/engine.h"
#include "lumen/image_encoder.h"
#include "lumen/model.h"
#include "server/image_fetch.h"
#include "server/image_parts.h"

namespace lumen::server {

// 400 unless the served model can take images: it has a vision encoder.
void check_images_servable(const Model& model, const std::vector<ImagePart>& images);

// Replaces the i-th marker token of `prompt` with format.before, images[i].n_tokens placeholder
// positions (the marker's own id) and format.after, setting images[i].first_token. Throws
// ApiError(400) when the prompt holds another number of markers than images (the template did
// not place them), lumen::Error when the marker is not one control token.
void expand_image_markers(const Model& model, const ImageEncoder::PromptFormat& format, std::vector<int32_t>& prompt,
                          std::vector<PromptImage>& images);

// Fetches the remote ones (image_fetch.h), encodes them all (check_images_servable first) and
// expands the prompt's markers for them.
std::vector<PromptImage> place_chat_images(Engine& engine, const Model& model, const std::vector<ImagePart>& images,
                                           const ImageFetchLimits& fetch, std::vector<int32_t>& prompt);

}  // namespace lumen::server
