// Loading an mmproj file and encoding one image with it (vision_model.h).
#include "vision/vision_model.h"

#include <mutex>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "util/error.h"
#include "vision/backend_tower.h"
#include "vision/projector_family.h"
#include "vision/vision_hparams.h"
#include "vision/vision_weights.h"
#include "vision/vit_encoder.h"

namespace lumen::vision {

struct VisionModel::State {
  State(gguf::GgufFile mapped, backend::CpuBackend* shared, const ProjectorFamily* of)
      : file(std::move(mapped)), backend(shared), family(of) {}
  gguf::GgufFile file;  // the weights' bytes (mapped): the views point into it
  std::unique_ptr<backend::CpuBackend> own_backend;
  backend::CpuBackend* backend = nullptr;
  const ProjectorFamily* family = nullptr;
  VisionWeights weights;
  // The tower on another backend (LoadOptions::tower_backend), with its own binding of the
  // weights there; null when the CPU runs it.
  std::shared_ptr<backend::Backend> tower_backend;
  VisionWeights tower_weights;
  std::string tower_placement = "cpu";
  std::mutex encoding;  // one encode at a time: the backend's pool runs one job at a time
};

VisionModel::~VisionModel() = default;

std::unique_ptr<VisionModel> VisionModel::load(const std::string& mmproj_path, const LoadOptions& options) {
  gguf::GgufFile file = gguf::GgufFile::open(mmproj_path);
  ReadHParams read = read_vision_hparams(file.metadata(), mmproj_path);
  std::unique_ptr<VisionModel> model(new VisionModel());
  model->hp_ = read.hp;
  model->state_ = std::make_unique<State>(std::move(file), options.backend, read.family);
  State& s = *model->state_;
  if (s.backend == nullptr) {
    s.own_backend = std::make_unique<backend::CpuBackend>(options.threads);
    s.backend = s.own_backend.get();
  }
  std::vector<VisionTensorSpec> specs = vit_tensor_specs();
  specs.insert(specs.end(), s.family->tensors.begin(), s.family->tensors.end());
  s.weights = bind_vision_weights(s.file, specs, model->hp_, read.block_count, *s.backend);
  if (options.tower_backend) {
    std::optional<std::string> refusal = backend_tower_refusal(*options.tower_backend, model->hp_, s.weights);
    if (!refusal) {
      try {
        VisionHParams hp = model->hp_;
        s.tower_weights =
            bind_vision_weights(s.file, specs, hp, read.block_count, *options.tower_backend, VectorsOn::Backend);
        s.tower_backend = options.tower_backend;
      } catch (const std::exception& e) {
        refusal = e.what();  // a weight type it does not read, say
      }
    }
    s.tower_placement = refusal ? fmt::format("cpu ({})", *refusal) : std::string(options.tower_backend->name());
  }
  return model;
}

const std::string& VisionModel::tower_placement() const { return state_->tower_placement; }

std::vector<float> VisionModel::encode(std::span<const float> chw_pixels, int width, int height) const {
  return encode_batch(chw_pixels, 1, width, height);
}

std::vector<float> VisionModel::encode_batch(std::span<const float> chw_pixels, int n_images, int width,
                                             int height) const {
  if (width != hp_.image_size || height != hp_.image_size) {
    fail("the {} encoder takes {}x{} pixels, got {}x{} (resize the image first)", hp_.projector_type, hp_.image_size,
         hp_.image_size, width, height);
  }
  if (n_images < 1 || n_images > kMaxBatchImages) {
    fail("a batch of {} images: the encoder takes 1 to {} at once", n_images, kMaxBatchImages);
  }
  const size_t per_image = 3 * static_cast<size_t>(width) * static_cast<size_t>(height);
  if (chw_pixels.size() != per_image * static_cast<size_t>(n_images)) {
    fail("{} images of {}x{} pixels have {} values (CHW), got {}", n_images, width, height,
         per_image * static_cast<size_t>(n_images), chw_pixels.size());
  }
  std::lock_guard lock(state_->encoding);
  const VisionWeights& w = state_->weights;
  std::vector<float> tower = state_->tower_backend ? run_vit_on_backend(*state_->tower_backend, state_->tower_weights,
                                                                        hp_, chw_pixels, n_images)
                                                   : run_vit(*state_->backend, w, hp_, chw_pixels, n_images);
  const int64_t rows = vit_rows(w, hp_), per_out = hp_.n_image_tokens * hp_.n_embd_out;
  std::vector<float> features(static_cast<size_t>(n_images * per_out));
  if (state_->tower_backend && (state_->family->project_on_backend || state_->family->prepare)) {
    project_on_tower_backend(tower, rows, n_images, features);
    return features;
  }
  for (int64_t i = 0; i < n_images; ++i) {
    const std::span<float> own(tower.data() + i * rows * hp_.n_embd, static_cast<size_t>(rows * hp_.n_embd));
    state_->family->project({*state_->backend, w, hp_, own, rows}, features.data() + i * per_out);
  }
  return features;
}

// The projector where the tower ran: each image's tower rows go back up (a few MB) and its
// features come down (LLaVA's MLP); or its rows are reshaped on the host and only the final
// linear runs there (Gemma 3, Idefics3).
void VisionModel::project_on_tower_backend(std::span<float> tower, int64_t rows, int64_t n_images,
                                           std::vector<float>& features) const {
  backend::Backend& be = *state_->tower_backend;
  const ProjectorFamily& family = *state_->family;
  const int64_t per_out = hp_.n_image_tokens * hp_.n_embd_out;
  const int64_t in_width =
      family.prepare ? (state_->tower_weights.*family.final_linear)->dims[0] : static_cast<int64_t>(hp_.n_embd);
  const int64_t in_rows = family.prepare ? hp_.n_image_tokens : rows;
  const std::unique_ptr<backend::Buffer> in_buffer =
      be.allocate(static_cast<size_t>(in_rows * in_width) * sizeof(float));
  const std::unique_ptr<backend::Buffer> out_buffer = be.allocate(static_cast<size_t>(per_out) * sizeof(float));
  backend::TensorView in = backend::f32_matrix(static_cast<float*>(in_buffer->data()), in_width, in_rows);
  backend::TensorView out =
      backend::f32_matrix(static_cast<float*>(out_buffer->data()), hp_.n_embd_out, hp_.n_image_tokens);
  for (int64_t i = 0; i < n_images; ++i) {
    const std::span<float> own(tower.data() + i * rows * hp_.n_embd, static_cast<size_t>(rows * hp_.n_embd));
    if (family.prepare) {
      const std::vector<float> prepared = family.prepare({*state_->backend, state_->weights, hp_, own, rows});
      if (prepared.size() != static_cast<size_t>(in.elements())) {
        fail("the {} projector prepared {} values for its linear of {} x {}", hp_.projector_type, prepared.size(),
             in_rows, in_width);
      }
      be.copy_from_host(prepared.data(), in);
      be.matmul(*(state_->tower_weights.*family.final_linear), in, out);
    } else {
      be.copy_from_host(own.data(), in);
      family.project_on_backend({be, state_->tower_weights, hp_, in}, out);
    }
    be.copy_to_host(out, features.data() + i * per_out);
  }
}

}  // namespace lumen::vision
