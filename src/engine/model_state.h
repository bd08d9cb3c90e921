#pragma once
// What a lumen::Model handle shares: the loaded model, the device it runs on and its chat
// template. Lumen's own code reaches the loaded parts through engine::model_state(model) (the
// public header keeps them opaque); tests and tools that build a model and backend themselves
// wrap them with borrow_model.
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "chat/chat_template.h"
#include "engine/loaded_model.h"
#include "engine/model_parallel.h"
#include "lumen/model.h"

namespace lumen {

// In namespace lumen, as the public Model names it.
struct ModelState {
  // Declared first, destroyed last: the weights may live in the backend's memory.
  std::unique_ptr<backend::Backend> owned_backend;
  // A model split over two backends (ModelOptions::n_gpu_layers): the second one, the device;
  // owned_backend is then the CPU's.
  std::unique_ptr<backend::Backend> owned_second_backend;
  backend::Backend* backend = nullptr;  // null when vocab_only
  // The processes a model is spread over (ModelOptions::tensor_parallel_size and
  // pipeline_parallel_size); null for a model in one process. Outlives the weights, whose
  // forward passes talk through it.
  std::unique_ptr<engine::ModelParallelGroup> parallel;
  std::unique_ptr<engine::LoadedModel> owned_model;
  engine::LoadedModel* model = nullptr;
  std::optional<chat::ChatTemplate> chat_template;
  std::string chat_template_source;   // its Jinja text (tool calling reads which format it speaks)
  std::string chat_template_problem;  // why chat_template is empty
  ModelInfo info;
  std::shared_ptr<const ImageEncoder> image_encoder;  // a vision-language model's; null: text only
};

// Model's friend: the state behind a handle, and a handle over a state.
struct ModelAccess {
  static ModelState& state(const Model& model) { return *model.state_; }
  static Model wrap(std::shared_ptr<ModelState> state) { return Model(std::move(state)); }
};

namespace engine {

using lumen::ModelState;

inline ModelState& model_state(const Model& model) { return ModelAccess::state(model); }

// A Model over a loaded model and backend that the caller owns and keeps alive longer than
// every copy of the handle (and every Engine made from it). Its chat template is the file's.
Model borrow_model(LoadedModel& model, backend::Backend& backend);

}  // namespace engine
}  // namespace lumen
