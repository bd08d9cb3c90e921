// An mmproj file as the engine's image encoder (mmproj_image_encoder.h).
#include "vision/mmproj_image_encoder.h"

#include "image/decode.h"
#include "image/preprocess.h"
#include "util/error.h"

namespace lumen::vision {

namespace {

// The family's resize as image::preprocess names it; the tiled one has no single-image form.
image::ResizeMode preprocess_mode(const VisionHParams& hp, const std::string& path) {
  switch (hp.resize) {
    case ResizeMode::ShortestEdgeCenterCrop: return image::ResizeMode::kShortestEdgeCenterCrop;
    case ResizeMode::Squash: return image::ResizeMode::kSquare;
    case ResizeMode::LongestEdgeTiles: break;
  }
  fail(
      "{}: projector type \"{}\" cuts images into tiles, whose prompt text depends on each image's size; "
      "Lumen's engine does not take tiled images yet (supported: mlp (LLaVA-1.5), gemma3)",
      path, hp.projector_type);
}

}  // namespace

std::shared_ptr<MmprojImageEncoder> MmprojImageEncoder::load(const std::string& mmproj_path, unsigned threads) {
  std::unique_ptr<VisionModel> model = VisionModel::load(mmproj_path, {.backend = nullptr, .threads = threads});
  preprocess_mode(model->hparams(), mmproj_path);  // refuses a tiled family now, not at the first image
  return std::shared_ptr<MmprojImageEncoder>(new MmprojImageEncoder(std::move(model)));
}

int64_t MmprojImageEncoder::embedding_length() const { return model_->hparams().n_embd_out; }

EncodedImage MmprojImageEncoder::encode(std::span<const uint8_t> file) const {
  const VisionHParams& hp = model_->hparams();
  const image::RgbImage rgb = image::decode(file);
  image::PreprocessParams params;
  params.size = static_cast<int>(hp.image_size);
  params.mode = preprocess_mode(hp, hp.projector_type);
  params.filter = image::resize_filter_from_pil(hp.resize_filter);
  for (int c = 0; c < 3; ++c) {
    params.mean[static_cast<size_t>(c)] = hp.mean[c];
    params.std[static_cast<size_t>(c)] = hp.std[c];
  }
  const image::PixelTensor pixels = image::preprocess(rgb, params);
  EncodedImage encoded;
  encoded.features = model_->encode(pixels.chw, pixels.width, pixels.height);
  encoded.layout.push_back({hp.image_before, model_->image_tokens()});
  if (!hp.image_after.empty()) encoded.layout.push_back({hp.image_after, 0});
  return encoded;
}

std::string MmprojImageEncoder::image_marker() const { return model_->hparams().image_marker; }

}  // namespace lumen::vision
