// Engine::encode_image: an image file through the model's encoder and the feature cache.
#include "engine/engine_impl.h"
#include "util/error.h"

namespace lumen {

namespace {

// The layout must place every feature row exactly once.
void check_encoded(const EncodedImage& image, size_t width) {
  if (image.features.empty() || image.features.size() % width != 0) {
    fail("the image encoder returned {} values, not whole vectors of {}", image.features.size(), width);
  }
  int64_t placed = 0;
  for (const EncodedImage::Piece& piece : image.layout) {
    if (piece.n_tokens < 0) fail("the image encoder's layout has a piece of {} positions", piece.n_tokens);
    placed += piece.n_tokens;
  }
  if (placed != static_cast<int64_t>(image.features.size() / width)) {
    fail("the image encoder's layout places {} positions for {} feature vectors", placed,
         image.features.size() / width);
  }
}

}  // namespace

Engine::ImageFeatures Engine::encode_image(std::span<const uint8_t> file) {
  const std::shared_ptr<const ImageEncoder> encoder = impl_->handle.image_encoder();
  if (!encoder) fail("this model has no vision encoder (a projector file, --mmproj): it takes text only");
  ImageFeatures out;
  out.content_hash = engine::image_content_hash(file.data(), file.size());
  out.encoded = impl_->image_features.find(out.content_hash);
  if (!out.encoded) {
    auto encoded = std::make_shared<const EncodedImage>(encoder->encode(file));
    check_encoded(*encoded, static_cast<size_t>(impl_->model.hparams.embedding_length));
    impl_->image_features.insert(out.content_hash, encoded);
    out.encoded = std::move(encoded);
  }
  return out;
}

}  // namespace lumen
