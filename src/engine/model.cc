// lumen::Model: loading a GGUF onto a device, tokenizing, and rendering a chat.
#include "lumen/model.h"

#include <fmt/format.h>

#include <map>

#include "chat/builtin_templates.h"
#include "chat/message_roles.h"
#include "engine/chat_prompt.h"
#include "engine/device.h"
#include "engine/gpu_layers_split.h"
#include "engine/model_state.h"
#include "gguf/file.h"
#include "model/expert_partition.h"
#include "tensor/dtype.h"
#include "vision/mmproj_image_encoder.h"
#include "util/error.h"

namespace lumen {

namespace engine {

namespace {

ModelInfo describe(const LoadedModel& model, const std::string& path) {
  ModelInfo info;
  info.path = path;
  info.architecture = model.hparams.architecture;
  info.vocab_size = static_cast<int64_t>(model.tokenizer.vocab().size());
  info.context_length = static_cast<int64_t>(model.hparams.context_length);
  std::map<std::string, uint64_t> bytes_by_type;
  for (const auto& t : model.file->tensors()) {
    info.parameters += static_cast<uint64_t>(t.elements);
    info.file_bytes += t.bytes;
    if (t.dims.size() >= 2) bytes_by_type[std::string(tensor::dtype_name(t.type))] += t.bytes;
  }
  uint64_t most = 0;
  for (const auto& [type, bytes] : bytes_by_type) {
    if (bytes > most) most = bytes, info.weight_type = type;
  }
  return info;
}

// The template source given, else the one a name chooses, else the file's, else its family's built-in one (Gemma); a
// file whose template is missing or does not parse leaves the model without one (and says why), since only chat needs
// it.
void attach_chat_template(ModelState& state, const std::string& builtin_name, const std::string& source = {}) {
  if (!builtin_name.empty() && !source.empty())
    fail("choose a built-in chat template or a template's source, not both");
  if (!source.empty()) {
    try {
      state.chat_template = chat::ChatTemplate::parse(source);
    } catch (const Error& e) {
      fail("the chat template given cannot be used ({})", e.what());
    }
    state.chat_template_source = source;
    return;
  }
  if (!builtin_name.empty()) {
    const auto text = chat::builtin_chat_template(builtin_name);
    if (!text) fail("unknown chat template '{}' (see `lumen chat-template list`)", builtin_name);
    state.chat_template = chat::ChatTemplate::parse(*text);
    state.chat_template_source = std::string(*text);
    return;
  }
  const auto text = state.model->file->metadata().find_string("tokenizer.chat_template");
  if (!text) {
    if (auto family = chat::builtin_chat_template_name_for_architecture(state.model->hparams.architecture)) {
      state.chat_template_source = std::string(*chat::builtin_chat_template(*family));
      state.chat_template = chat::ChatTemplate::parse(state.chat_template_source);
      return;
    }
    state.chat_template_problem = "the model has no chat template";
    return;
  }
  try {
    state.chat_template = chat::ChatTemplate::parse(*text);
    state.chat_template_source = std::string(*text);
  } catch (const Error& e) {
    state.chat_template_problem = fmt::format("the model's chat template cannot be used ({})", e.what());
  }
}

std::string token_text(const tokenizer::Vocab& vocab, std::optional<int32_t> id) {
  return id ? vocab.tokens[static_cast<size_t>(*id)] : std::string();
}

}  // namespace

// A vision-language model's projector file as its image encoder, on a CPU pool of its own. On a
// device the tower runs there when the device has its ops (vision/backend_tower.h), on a backend
// of its own: images are encoded on the callers' threads, beside the engine's steps.
static void attach_mmproj(ModelState& state, const std::string& path, const ModelOptions& options) {
  std::shared_ptr<backend::Backend> tower;
  if (options.device != "cpu") tower = engine::make_backend(options.device, options.threads);
  auto encoder = vision::MmprojImageEncoder::load(options.mmproj, options.threads, std::move(tower));
  state.info.vision_tower = encoder->model().tower_placement();
  const auto width = static_cast<int64_t>(state.model->hparams.embedding_length);
  if (encoder->embedding_length() != width) {
    fail("{}: the projector's image features are {} wide, but {}'s embeddings are {}: it belongs to another model",
         options.mmproj, encoder->embedding_length(), path, width);
  }
  // The layouts' markers must be tokens of this vocabulary (parsed as one token each when
  // special text is parsed), or the prompt text around an image would be wrong without a word.
  for (const std::string& token : encoder->control_tokens()) {
    if (state.model->tokenizer.encode(token, {.add_special = false, .parse_special = true}).size() != 1) {
      fail(
          "{}: the projector writes the token \"{}\" around images, but {}'s vocabulary has no such token: it "
          "belongs to another model",
          options.mmproj, token, path);
    }
  }
  state.image_encoder = std::move(encoder);
}

Model borrow_model(LoadedModel& model, backend::Backend& backend) {
  auto state = std::make_shared<ModelState>();
  state->backend = &backend;
  state->model = &model;
  state->info = describe(model, "");
  state->info.device = "borrowed";
  attach_chat_template(*state, "");
  return ModelAccess::wrap(std::move(state));
}

}  // namespace engine

Model::Model(std::shared_ptr<ModelState> state) : state_(std::move(state)) {}

Model Model::load(const std::string& path, const ModelOptions& options) {
  if (!options.mmproj.empty() && options.vocab_only) {
    fail("a projector file (--mmproj {}) needs the model's weights, not its vocabulary only", options.mmproj);
  }
  auto state = std::make_shared<ModelState>();
  int gpu_layers = kAllGpuLayers;  // what --n-gpu-layers resolves to, auto included
  if (options.vocab_only) {
    state->owned_model = std::make_unique<engine::LoadedModel>(engine::LoadedModel::load_vocab(path));
  } else {
    engine::check_gpu_layers_option(options);
    state->owned_backend = engine::make_backend(options.device, options.threads);
    engine::ModelPart part;
    if (options.n_gpu_layers != kAllGpuLayers) {
      // The CPU embeds and runs the first layers, the device the rest (engine/gpu_layers_split.h).
      state->owned_second_backend = std::move(state->owned_backend);
      state->owned_backend = engine::make_backend("cpu", options.threads);
      part.split = engine::gpu_layers_split(options, *state->owned_second_backend, &gpu_layers);
    }
    state->backend = state->owned_backend.get();
    if (options.data_parallel_attention && options.expert_parallel_size <= 1) {
      fail("--data-parallel-attention needs expert parallelism (--expert-parallel-size 2 or more)");
    }
    if (options.expert_parallel_size != 1) {
      // Before MPI and before any weight: the hyperparameters say whether the experts split.
      model::check_expert_parallel(model::read_hparams(gguf::GgufFile::open(path)), options.expert_parallel_size);
    }
    if (options.tensor_parallel_size != 1 || options.pipeline_parallel_size != 1 || options.expert_parallel_size != 1 ||
        options.context_parallel_size != 1) {
      if (options.pipeline_micro_batches < 0) {
        fail("pipeline_micro_batches must be 0 (four times the stages) or more (got {})", options.pipeline_micro_batches);
      }
      state->parallel = engine::join_model_parallel_group(options.tensor_parallel_size, options.pipeline_parallel_size,
                                                          options.expert_parallel_size, options.context_parallel_size);
      state->parallel->set_data_parallel_attention(options.data_parallel_attention);
      part.group = state->parallel.get();
      part.max_micro_batches =
          options.pipeline_micro_batches > 0 ? options.pipeline_micro_batches : 4 * options.pipeline_parallel_size;
    }
    state->owned_model =
        std::make_unique<engine::LoadedModel>(engine::LoadedModel::load(path, *state->backend, part));
  }
  state->model = state->owned_model.get();
  state->info = engine::describe(*state->model, path);
  if (!options.vocab_only) state->info.device = options.device;
  state->info.n_gpu_layers = gpu_layers;
  if (state->parallel) {
    state->info.parallel_rank = state->parallel->rank();
    state->info.tensor_parallel_rank = state->parallel->tensor_rank();
    state->info.tensor_parallel_size = state->parallel->tensor_size();
    state->info.pipeline_stage = state->parallel->stage();
    state->info.pipeline_parallel_size = state->parallel->pipeline_size();
    state->info.expert_parallel_size = state->parallel->expert_size();
    state->info.context_parallel_size = state->parallel->context_size();
  }
  if (state->model->transformer) state->info.weight_bytes = state->model->transformer->weights().bound_bytes;
  engine::attach_chat_template(*state, options.chat_template, options.chat_template_source);
  if (!options.mmproj.empty()) engine::attach_mmproj(*state, path, options);
  return Model(std::move(state));
}

const ModelInfo& Model::info() const { return state_->info; }

std::string chat_message_role_problem(const nlohmann::json& message, size_t index) {
  return chat::message_role_problem(message, index);
}

const std::string& Model::chat_template_source() const { return state_->chat_template_source; }

std::vector<int32_t> Model::tokenize(std::string_view text, const TokenizeOptions& options) const {
  return state_->model->tokenizer.encode(text, {.add_special = options.add_special, .parse_special = options.parse_special});
}

std::string Model::detokenize(std::span<const int32_t> tokens, bool skip_special) const {
  const int64_t vocab_size = info().vocab_size;
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab_size) fail("token id {} is outside the vocabulary [0, {})", t, vocab_size);
  }
  return state_->model->tokenizer.decode(std::vector<int32_t>(tokens.begin(), tokens.end()),
                                         {.skip_special = skip_special});
}

std::string Model::token_bytes(int32_t token) const { return state_->model->tokenizer.token_bytes(token); }

bool Model::ends_generation(int32_t token) const { return state_->model->tokenizer.vocab().ends_generation(token); }

bool Model::has_chat_template() const { return state_->chat_template.has_value(); }

const std::string& Model::chat_template_problem() const { return state_->chat_template_problem; }

std::vector<int32_t> Model::chat_prompt(const nlohmann::ordered_json& messages, const ChatOptions& options) const {
  if (!state_->chat_template) fail("{}", state_->chat_template_problem);
  const tokenizer::Tokenizer& tokenizer = state_->model->tokenizer;
  const tokenizer::Vocab& vocab = tokenizer.vocab();
  engine::ChatPromptOptions prompt_options;
  prompt_options.render.add_generation_prompt = options.add_generation_prompt;
  prompt_options.render.bos_token = engine::token_text(vocab, vocab.special.bos);
  prompt_options.render.eos_token = engine::token_text(vocab, vocab.special.eos);
  prompt_options.render.tools = options.tools;
  prompt_options.render.extra_context = options.extra_context;
  if (options.max_rendered_bytes > 0) prompt_options.render.limits.max_output_bytes = options.max_rendered_bytes;
  prompt_options.parse_special_in_messages = options.parse_special_in_messages;
  prompt_options.continue_final_message = options.continue_final_message;
  std::vector<int32_t> prompt = engine::chat_prompt_tokens(*state_->chat_template, tokenizer, messages, prompt_options);
  // A model that wants BOS gets exactly one, whether or not its template writes it.
  if (vocab.special.add_bos && vocab.special.bos && (prompt.empty() || prompt[0] != *vocab.special.bos)) {
    prompt.insert(prompt.begin(), *vocab.special.bos);
  }
  return prompt;
}

std::shared_ptr<const ImageEncoder> Model::image_encoder() const { return state_->image_encoder; }

void Model::set_image_encoder(std::shared_ptr<const ImageEncoder> encoder) {
  if (encoder && state_->model != nullptr &&
      encoder->embedding_length() != static_cast<int64_t>(state_->model->hparams.embedding_length)) {
    fail("the image encoder's vectors are {} wide; the model's embeddings are {}", encoder->embedding_length(),
         state_->model->hparams.embedding_length);
  }
  state_->image_encoder = std::move(encoder);
}

}  // namespace lumen
