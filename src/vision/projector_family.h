#pragma once
// A projector family as data: the clip.projector_type it reads, the projector's tensors, how
// the file's keys finish its hyperparameters, and the step that turns the tower's output rows
// into the features that replace the image tokens. One file per family under
// vision/families/, plus its line in families/registry.cc.
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/metadata.h"
#include "vision/vision_model.h"
#include "vision/vision_weights.h"

namespace lumen::vision {

// What a projector step reads: the tower's output (n_rows x n_embd f32, the class token first
// when the tower has one) and the model.
struct ProjectInput {
  backend::CpuBackend& backend;
  const VisionWeights& weights;
  const VisionHParams& hp;
  std::span<float> tower;  // may be overwritten
  int64_t n_rows = 0;
};

// The same step in a backend's ops, where the tower ran (a GPU): the tower's output rows are in
// the backend's memory, and so are the weights (bound there with the tower's).
struct BackendProjectInput {
  backend::Backend& backend;
  const VisionWeights& weights;
  const VisionHParams& hp;
  const backend::TensorView& tower;  // n_rows x n_embd
};

struct ProjectorFamily {
  std::string_view projector_type;  // clip.projector_type
  std::string_view model;           // which models write it, for messages and docs
  ResizeMode resize = ResizeMode::Squash;
  int resize_filter = 3;  // Pillow's number: the filter the model's Hugging Face processor resizes with
  // The image's text in a chat prompt, as the model's chat template and Hugging Face processor
  // write it: the template's marker for an image part, replaced by `before`, the image's
  // positions, then `after` (MmprojImageEncoder makes them its EncodedImage::layout).
  std::string_view image_marker, image_before, image_after;
  // Whether an image's positions attend to each other both ways in the language model (Gemma 3:
  // its processor's token_type_ids; llama.cpp's mtmd decodes such an image non-causally).
  bool image_attends_both_ways = false;
  // The tower's FFN activation when the file sets neither clip.use_gelu nor clip.use_silu.
  Activation default_activation = Activation::QuickGelu;
  std::vector<VisionTensorSpec> tensors;
  // Reads the family's own keys into hp (merge factor) and sets hp.n_image_tokens; throws
  // lumen::Error for values it cannot run.
  void (*finish_hparams)(const gguf::Metadata& meta, VisionHParams& hp) = nullptr;
  // Writes hp.n_image_tokens x hp.n_embd_out floats to out.
  void (*project)(const ProjectInput& in, float* out) = nullptr;
  // Optional: `project` in backend ops, for a family whose projector is worth a GPU (LLaVA's two
  // wide linears: 24 GFLOP an image, most of a second on a CPU). Writes out (the backend's
  // memory, n_image_tokens x n_embd_out).
  void (*project_on_backend)(const BackendProjectInput& in, backend::TensorView& out) = nullptr;
  // Optional, for a projector that is a reshaping on the host and then one linear without bias
  // (Gemma 3's pooling and norm, Idefics3's pixel shuffle): the rows that linear reads
  // (n_image_tokens of them), and the linear. `project` is the two on the CPU; with a tower on
  // another backend, the rows go there and the linear runs there.
  std::vector<float> (*prepare)(const ProjectInput& in) = nullptr;
  std::optional<backend::TensorView> VisionWeights::*final_linear = nullptr;
};

// The family declaring `projector_type`; throws lumen::Error listing the supported ones.
const ProjectorFamily& projector_family_for(std::string_view projector_type);
std::vector<std::string_view> projector_types();

}  // namespace lumen::vision
