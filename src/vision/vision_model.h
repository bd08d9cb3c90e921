#pragma once
// A vision encoder and its projector, loaded from the projector ("mmproj") GGUF that llama.cpp's
// converters write beside a vision-language model's text GGUF (general.architecture "clip",
// clip.* keys, v.* and mm.* tensors). encode() turns one preprocessed image (the Hugging Face
// processor's pixel_values: CHW floats, already resized and normalised) into the rows that
// replace the prompt's image tokens: image_tokens() rows of n_embd_out floats each.
//
// The matrices run through the CPU backend's matmul (any weight type it reads: f32, f16, q8_0...);
// LayerNorms, activations and softmax run on host rows over the backend's thread pool. Given a
// tower backend that has every op the tower needs (LoadOptions::tower_backend: a GPU's), the
// tower runs there as backend ops instead (backend_tower.h), as the text encoder's layers do
// (model/encoder.cc), and only the projector stays on the CPU. Which projector a file holds is its clip.projector_type;
// each supported one is a declarative family under vision/families/ (projector_family.h).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend_types.h"

namespace lumen::backend {
class Backend;
class CpuBackend;
}

namespace lumen::vision {

// How the model's processor brings an image of another shape to image_size (for the image
// preprocessing, which happens before encode()).
enum class ResizeMode {
  ShortestEdgeCenterCrop,  // LLaVA-1.5's CLIP processor: shortest edge to image_size, then a centre crop
  Squash,                  // Gemma 3: both sides to image_size, the aspect ratio not kept
  LongestEdgeTiles,        // Idefics3 / SmolVLM: longest edge bounded, tiles of image_size plus a global view
};

// The FFN's activation inside the vision tower: the backend's (Backend::activation runs it on a
// device; host_ops.cc on the CPU's host rows).
using Activation = backend::Activation;

struct VisionHParams {
  std::string projector_type;  // clip.projector_type
  int64_t image_size = 0;      // pixels per side the encoder takes
  int64_t patch_size = 0;
  int64_t n_embd = 0;  // the tower's width
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_layer = 0;  // layers run (block_count, or the feature layer LLaVA reads)
  double eps = 0.0;     // LayerNorm epsilon
  Activation ffn_act = Activation::QuickGelu;
  float mean[3] = {0.5f, 0.5f, 0.5f};
  float std[3] = {0.5f, 0.5f, 0.5f};
  ResizeMode resize = ResizeMode::Squash;
  // The Pillow filter number the model's processor resizes with (1 Lanczos, 2 bilinear, 3 bicubic).
  int resize_filter = 3;
  // How the model's chat template and processor write an image (MmprojImageEncoder's
  // image_marker() and EncodedImage::layout):
  // the marker the template writes, and the text around the image's positions.
  std::string image_marker, image_before, image_after;
  bool image_attends_both_ways = false;  // ProjectorFamily::image_attends_both_ways
  int64_t merge = 1;           // Gemma 3's pooling kernel, Idefics3's pixel-shuffle factor (1: none)
  // Idefics3 / SmolVLM: the longest side an image is resized to before it is cut into tiles of
  // image_size (clip.vision.preproc_image_size; image_size when absent: one tile, never split).
  int64_t tiling_longest_edge = 0;
  int64_t n_image_tokens = 0;  // rows encode() returns per image
  int64_t n_embd_out = 0;      // their width: the text model's embedding width

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
};

struct LoadOptions {
  // The CPU backend to run on (not owned; its thread pool is shared). Null: the model makes its
  // own with `threads` workers (0: one per hardware thread). A shared pool runs one job at a
  // time: the owner calls encode() from the thread that runs its other work on that backend.
  backend::CpuBackend* backend = nullptr;
  unsigned threads = 0;
  // The backend the tower runs on when it can (a GPU's; backend_tower.h): its weights are
  // uploaded there and each encode runs its layers there, and the projector's linears too (a
  // pooling or shuffle before them stays on the host). Null, or a backend that lacks an op the
  // tower needs (tower_placement() says which): the CPU.
  std::shared_ptr<backend::Backend> tower_backend = nullptr;
};

struct VisionWeights;
struct ProjectorFamily;

class VisionModel {
 public:
  // Throws lumen::Error "<path>: ..." for a file that is not an mmproj, holds a projector_type
  // no family declares (listing those that are), or misses, adds or misshapes a tensor.
  static std::unique_ptr<VisionModel> load(const std::string& mmproj_path, const LoadOptions& options = {});
  ~VisionModel();
  VisionModel(const VisionModel&) = delete;
  VisionModel& operator=(const VisionModel&) = delete;

  const VisionHParams& hparams() const { return hp_; }
  // Where the tower runs: "cpu", the tower backend's name, or "cpu (<why not the other>)".
  const std::string& tower_placement() const;
  int64_t image_tokens() const { return hp_.n_image_tokens; }
  // One image's features: image_tokens() x n_embd_out floats, row-major. chw_pixels holds
  // 3 x height x width values; width and height must be image_size (the preprocessing's job),
  // otherwise lumen::Error and nothing else changes. One call at a time per model (serialised).
  std::vector<float> encode(std::span<const float> chw_pixels, int width, int height) const;
  // Several images (or tiles) at once, their pixels one after the other: n_images x
  // image_tokens() x n_embd_out floats, image after image. The images share the matmuls (each
  // weight streams once per batch); memory grows with the batch, which is capped at
  // kMaxBatchImages (more is refused with lumen::Error).
  static constexpr int kMaxBatchImages = 16;
  std::vector<float> encode_batch(std::span<const float> chw_pixels, int n_images, int width, int height) const;

 private:
  struct State;
  VisionModel() = default;
  // The projector of each image on the tower's backend (ProjectorFamily::project_on_backend, or
  // its prepare on the host and final_linear there).
  void project_on_tower_backend(std::span<float> tower, int64_t rows, int64_t n_images,
                                std::vector<float>& features) const;
  VisionHParams hp_;
  std::unique_ptr<State> state_;
};

}  // namespace lumen::vision
