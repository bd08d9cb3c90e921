#pragma once
// A model ready to run: its mapped file (which the weights point into, so it lives as long as
// the model), hyperparameters, tokenizer and forward pass on a backend. Lumen's public handle on
// it is lumen::Model (engine/model_state.h).
#include <functional>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace lumen::engine {

class ModelParallelGroup;

// Which part of a model spread over processes this one loads: the group it belongs to (null:
// the whole model) and how many micro-batches a pipeline's forward pass may go in. And, for a
// model split over two backends (model/backend_split.h), where the second one starts: decided
// once the file is open (--n-gpu-layers auto weighs its tensors); none: one backend.
struct ModelPart {
  ModelParallelGroup* group = nullptr;
  int max_micro_batches = 1;
  std::function<model::BackendSplit(const gguf::GgufFile& file, const model::HParams& hp)> split;
};

struct LoadedModel {
  std::unique_ptr<gguf::GgufFile> file;
  model::HParams hparams;
  tokenizer::Tokenizer tokenizer;
  std::unique_ptr<model::Transformer> transformer;

  // Throws lumen::Error naming what is wrong with the file. With a group: this process's part
  // of the model (model/tensor_shard.h, model/pipeline_stage.h).
  static LoadedModel load(const std::string& path, backend::Backend& backend, const ModelPart& part = {});
  // The file and tokenizer, without the weights (transformer stays null) or the block
  // hyperparameters (hparams holds only the architecture and context length, when given).
  static LoadedModel load_vocab(const std::string& path);
};

}  // namespace lumen::engine
