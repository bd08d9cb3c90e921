// An mmproj file as the engine's image encoder (mmproj_image_encoder.h).
#include "vision/mmproj_image_encoder.h"

#include <algorithm>

#include "image/decode.h"
#include "image/image_tiling.h"
#include "image/preprocess.h"
#include "util/error.h"
#include "vision/tiled_prompt_layout.h"

namespace lumen::vision {

namespace {

// The family's single-image resize as image::preprocess names it (the tiled one is split_into_tiles').
image::ResizeMode preprocess_mode(const VisionHParams& hp) {
  return hp.resize == ResizeMode::ShortestEdgeCenterCrop ? image::ResizeMode::kShortestEdgeCenterCrop
                                                         : image::ResizeMode::kSquare;
}

// Idefics3 / SmolVLM: the tiles and the global tile, encoded in batches (they share each
// weight's pass), each tile's rows at its own piece of the layout.
EncodedImage encode_tiles(const VisionModel& model, const image::RgbImage& rgb) {
  const VisionHParams& hp = model.hparams();
  image::TilingParams params;
  params.longest_edge = static_cast<int>(hp.tiling_longest_edge);
  params.tile_size = static_cast<int>(hp.image_size);
  params.filter = image::resize_filter_from_pil(hp.resize_filter);
  for (int c = 0; c < 3; ++c) {
    params.mean[static_cast<size_t>(c)] = hp.mean[c];
    params.std[static_cast<size_t>(c)] = hp.std[c];
  }
  const image::TiledPixels tiled = image::split_into_tiles(rgb, params);
  const auto n_tiles = static_cast<int>(tiled.tiles.size());
  const int side = params.tile_size;
  const size_t tile_values = static_cast<size_t>(3) * static_cast<size_t>(side) * static_cast<size_t>(side);
  EncodedImage encoded;
  encoded.features.reserve(static_cast<size_t>(n_tiles * model.image_tokens() * hp.n_embd_out));
  std::vector<float> batch;
  for (int first = 0; first < n_tiles; first += VisionModel::kMaxBatchImages) {
    const int n = std::min(VisionModel::kMaxBatchImages, n_tiles - first);
    batch.clear();
    for (int t = first; t < first + n; ++t) {
      const std::vector<float>& chw = tiled.tiles[static_cast<size_t>(t)].chw;
      if (chw.size() != tile_values) fail("tile {} is not {} x {} pixels", t, side, side);
      batch.insert(batch.end(), chw.begin(), chw.end());
    }
    const std::vector<float> rows = model.encode_batch(batch, n, side, side);
    encoded.features.insert(encoded.features.end(), rows.begin(), rows.end());
  }
  encoded.layout = idefics3_prompt_layout(tiled.rows, tiled.cols, model.image_tokens());
  return encoded;
}

}  // namespace

std::shared_ptr<MmprojImageEncoder> MmprojImageEncoder::load(const std::string& mmproj_path, unsigned threads,
                                                             std::shared_ptr<backend::Backend> tower_backend) {
  std::unique_ptr<VisionModel> model = VisionModel::load(
      mmproj_path, {.backend = nullptr, .threads = threads, .tower_backend = std::move(tower_backend)});
  return std::shared_ptr<MmprojImageEncoder>(new MmprojImageEncoder(std::move(model)));
}

int64_t MmprojImageEncoder::embedding_length() const { return model_->hparams().n_embd_out; }

EncodedImage MmprojImageEncoder::encode(std::span<const uint8_t> file) const {
  const VisionHParams& hp = model_->hparams();
  const image::RgbImage rgb = image::decode(file);
  if (hp.resize == ResizeMode::LongestEdgeTiles) return encode_tiles(*model_, rgb);
  image::PreprocessParams params;
  params.size = static_cast<int>(hp.image_size);
  params.mode = preprocess_mode(hp);
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

bool MmprojImageEncoder::image_attends_both_ways() const { return model_->hparams().image_attends_both_ways; }

std::vector<std::string> MmprojImageEncoder::control_tokens() const {
  const VisionHParams& hp = model_->hparams();
  std::vector<std::string> tokens = {hp.image_marker};
  if (hp.resize == ResizeMode::LongestEdgeTiles) {
    const auto max_side = static_cast<int>((hp.tiling_longest_edge + hp.image_size - 1) / hp.image_size);
    for (std::string& t : idefics3_control_tokens(max_side)) tokens.push_back(std::move(t));
  }
  return tokens;
}

}  // namespace lumen::vision
