// Engine::encode_image: an image file through the model's encoder and the feature cache.
#include "engine/engine_impl.h"
#include "util/error.h"

namespace lumen {

PromptImage Engine::encode_image(std::span<const uint8_t> file) {
  const std::shared_ptr<const ImageEncoder> encoder = impl_->handle.image_encoder();
  if (!encoder) fail("this model has no vision encoder (a projector file, --mmproj): it takes text only");
  PromptImage image;
  image.content_hash = engine::image_content_hash(file.data(), file.size());
  image.embeddings = impl_->image_features.find(image.content_hash);
  if (!image.embeddings) {
    auto features = std::make_shared<const std::vector<float>>(encoder->encode(file));
    const auto width = static_cast<size_t>(impl_->model.hparams.embedding_length);
    if (features->empty() || features->size() % width != 0) {
      fail("the image encoder returned {} values, not whole vectors of {}", features->size(), width);
    }
    impl_->image_features.insert(image.content_hash, features);
    image.embeddings = std::move(features);
  }
  image.n_tokens = static_cast<int64_t>(image.embeddings->size() / impl_->model.hparams.embedding_length);
  return image;
}

}  // namespace lumen
