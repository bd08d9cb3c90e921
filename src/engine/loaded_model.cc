#include "engine/loaded_model.h"

#include "engine/model_parallel.h"

namespace lumen::engine {

LoadedModel LoadedModel::load(const std::string& path, backend::Backend& backend, const ModelPart& part) {
  auto file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
  model::HParams hparams = model::read_hparams(*file);
  tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_gguf(*file);
  model::TensorShard shard;
  model::PipelineStage stage;
  model::ExpertShard experts;
  model::ContextShare context;
  if (part.group != nullptr) {
    shard = part.group->shard();
    stage = part.group->pipeline_stage(hparams.block_count, part.max_micro_batches);
    experts = part.group->expert_shard();
    context = part.group->context();
  }
  const model::BackendSplit split = part.split ? part.split(*file, hparams) : model::BackendSplit{};
  auto transformer =
      std::make_unique<model::Transformer>(backend, *file, hparams, shard, stage, experts, context, split);
  return {std::move(file), std::move(hparams), std::move(tokenizer), std::move(transformer)};
}

LoadedModel LoadedModel::load_vocab(const std::string& path) {
  auto file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
  // Only what describes the file: a vocabulary-only GGUF has no block hyperparameters, and a
  // tokenizer needs none (read_hparams would refuse it).
  model::HParams hparams;
  hparams.architecture = file->metadata().find_string("general.architecture").value_or("");
  hparams.context_length = file->metadata().find_unsigned(hparams.architecture + ".context_length").value_or(0);
  tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_gguf(*file);
  return {std::move(file), std::move(hparams), std::move(tokenizer), nullptr};
}

}  // namespace lumen::engine
