#pragma once
// lumen::ImageEncoder over a projector (mmproj) file: an image file is decoded (image::decode,
// its default limits), preprocessed as the model's Hugging Face processor does (the family's
// resize mode and filter, the file's image size, mean and std) and run through the vision
// encoder. What differs between models is the projector family's (vision/families/), never
// decided here.
//
// Families whose processor cuts an image into tiles (Idefics3 / SmolVLM) encode each tile and
// the global tile, and say in EncodedImage::layout where each stands with its row and column
// text (tiled_prompt_layout.h).
#include <memory>
#include <string>

#include "lumen/image_encoder.h"
#include "vision/vision_model.h"

namespace lumen::vision {

class MmprojImageEncoder final : public ImageEncoder {
 public:
  // Throws lumen::Error for a file VisionModel::load refuses. threads: the encoder's own CPU pool (0: one per hardware
  // thread); it is not the text model's, so encoding never waits for a forward pass. tower_backend: where the tower
  // runs when it can (LoadOptions::tower_backend: a GPU's, a backend of its own beside the text model's).
  static std::shared_ptr<MmprojImageEncoder> load(const std::string& mmproj_path, unsigned threads = 0,
                                                  std::shared_ptr<backend::Backend> tower_backend = nullptr);

  int64_t embedding_length() const override;
  // Thread-safe: decoding and preprocessing run on the caller's thread; VisionModel::encode
  // serialises the encoder itself (one image at a time on its pool).
  // One image is one run of image_tokens() positions, with the family's text around it (Gemma 3:
  // "\n\n<start_of_image>" before, "<end_of_image>\n\n" after; LLaVA: nothing); a tiled one a
  // run per tile and one for the global tile, each with its markers.
  EncodedImage encode(std::span<const uint8_t> file) const override;
  std::string image_marker() const override;
  bool image_attends_both_ways() const override;
  // The marker, and for a tiled family the tiles' markers up to the largest grid its longest
  // edge allows.
  std::vector<std::string> control_tokens() const override;

  const VisionModel& model() const { return *model_; }

 private:
  explicit MmprojImageEncoder(std::unique_ptr<VisionModel> model) : model_(std::move(model)) {}
  std::unique_ptr<VisionModel> model_;
};

}  // namespace lumen::vision
