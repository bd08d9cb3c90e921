// Image files in `lumen run`'s prompt (run_images.h).
#include "cli/run_images.h"

#include <algorithm>
#include <span>

#include "cli/text_file.h"
#include "image/decode_limits.h"
#include "server/chat_images.h"
#include "util/error.h"

namespace lumen::cli {

std::string read_image_file(const std::string& path) {
  return read_text_file(path, "image file", image::DecodeLimits{}.max_bytes);
}

std::vector<PromptImage> place_run_images(Engine& engine, const Model& model, const std::vector<std::string>& files,
                                          std::vector<int32_t>& prompt) {
  if (files.empty()) return {};
  const std::shared_ptr<const ImageEncoder> encoder = model.image_encoder();
  if (!encoder) fail("--image needs a vision-language model's projector file: give it with --mmproj");
  const std::string marker_text = encoder->image_marker();
  const std::vector<int32_t> marker = model.tokenize(marker_text, {.add_special = false, .parse_special = true});
  if (marker.size() != 1) fail("the model's image marker \"{}\" is not one token of its vocabulary", marker_text);
  const auto n_markers = static_cast<size_t>(std::count(prompt.begin(), prompt.end(), marker[0]));
  if (n_markers != 0 && n_markers != files.size()) {
    fail(
        "the prompt spells the image marker \"{}\" {} times for {} --image files (spell it once per image, or "
        "not at all to put the images first)",
        marker_text, n_markers, files.size());
  }
  if (n_markers == 0) {
    // After a leading BOS, if the tokenizer wrote one: the images come first in the text.
    const auto at = prompt.begin() + (model.tokenize("", {.add_special = true}).empty() ? 0 : 1);
    prompt.insert(at, files.size(), marker[0]);
  }
  std::vector<Engine::ImageFeatures> images;
  for (const std::string& file : files) {
    const std::string bytes = read_image_file(file);
    try {
      images.push_back(engine.encode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    } catch (const Error& e) {
      fail("{}: {}", file, e.what());
    }
  }
  return server::expand_image_markers(model, marker_text, prompt, images);
}

}  // namespace lumen::cli
