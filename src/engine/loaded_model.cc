#include "engine/loaded_model.h"

namespace lumen::engine {

LoadedModel LoadedModel::load(const std::string& path, backend::Backend& backend) {
  auto file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
  model::HParams hparams = model::read_hparams(*file);
  tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_gguf(*file);
  auto transformer = std::make_unique<model::Transformer>(backend, *file, hparams);
  return {std::move(file), std::move(hparams), std::move(tokenizer), std::move(transformer)};
}

}  // namespace lumen::engine
