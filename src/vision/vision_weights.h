#pragma once
// The tensors of a vision tower and its projector as the backend uses them, and the
// declarations they are bound from. A declaration names the tensor as llama.cpp's converters
// write it, its shape in named dimensions and its role; the binder (vision_weights.cc) checks
// the whole file against the ViT's declarations plus the projector family's before anything
// runs, so a missing, extra or misshapen tensor fails at load with its name.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "vision/vision_model.h"

namespace lumen::vision {

struct VisionLayer {
  std::optional<backend::TensorView> ln1_w, ln1_b, ln2_w, ln2_b;
  std::optional<backend::TensorView> q, q_b, k, k_b, v, v_b, o, o_b;
  std::optional<backend::TensorView> up, up_b, down, down_b;
};

struct VisionWeights {
  std::optional<backend::TensorView> patch, patch_b;  // patch: the convolution as a {C*p*p, n_embd} matrix
  std::optional<backend::TensorView> position, class_embd;
  std::optional<backend::TensorView> pre_ln_w, pre_ln_b, post_ln_w, post_ln_b;
  std::vector<VisionLayer> layers;
  // Projector tensors: LLaVA's MLP (mm.0, mm.2), Gemma 3's norm and input projection, Idefics3's fc.
  std::optional<backend::TensorView> mm_0, mm_0_b, mm_2, mm_2_b;
  std::optional<backend::TensorView> mm_soft_emb_norm, mm_input_projection, mm_fc;
  // f32 copies the loader made (vectors stored in another type, transposed matrices).
  std::vector<std::vector<float>> owned;
};

// A dimension by name. Free ones (ProjHidden, TextEmbd) are whatever the first tensor that
// uses them says, and must agree wherever else they appear.
enum class VDim { Embd, FeedForward, Channels, PatchSize, Positions, MergedEmbd, ProjHidden, TextEmbd };

enum class VRole {
  Matrix,      // through matmul: {in, out}, any weight type the backend reads
  Conv,        // the patch convolution {p, p, C, n_embd}: used as the matrix {C*p*p, n_embd}
  Table,       // rows read by get_rows (position embeddings)
  Vector,      // read on the host as f32 (norms, biases, the class embedding): converted if stored otherwise
  Transposed,  // a matrix stored {out, in} (Gemma 3's input projection): transposed to f32 at load
};

using VisionSlot = std::variant<std::optional<backend::TensorView> VisionWeights::*,
                                std::optional<backend::TensorView> VisionLayer::*>;

struct VisionTensorSpec {
  std::string name;  // per-layer tensors: "v.blk.{}.attn_q.weight", {} the layer
  std::vector<VDim> shape;
  VRole role = VRole::Matrix;
  bool required = true;
  VisionSlot slot;

  bool per_layer() const { return slot.index() == 1; }
};

// The ViT's own tensors (CLIP and SigLIP share the layout; the optional ones say which is which).
std::vector<VisionTensorSpec> vit_tensor_specs();

// Where the f32 vectors (VRole::Vector, VRole::Transposed) are bound: in host memory, which the
// CPU backend and the host steps read, or uploaded to the backend (a device runs the tower's
// norms and biases as ops: backend_tower.h).
enum class VectorsOn { Host, Backend };

// Binds every declared tensor of `file` (layers below hp.n_layer; the file may hold the layers
// after the last one used, as LLaVA files with an explicit feature layer do). Fills
// hp.n_embd_out from the free dimension TextEmbd. Throws lumen::Error naming the tensor.
VisionWeights bind_vision_weights(const gguf::GgufFile& file, const std::vector<VisionTensorSpec>& specs,
                                  VisionHParams& hp, int64_t block_count, backend::Backend& backend,
                                  VectorsOn vectors = VectorsOn::Host);

}  // namespace lumen::vision
