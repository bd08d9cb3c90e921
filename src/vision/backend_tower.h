#pragma once
// The ViT tower (vit_encoder.h) through backend ops alone, its activations in the backend's own
// memory: how a GPU runs it (a CLIP or SigLIP tower is hundreds of GFLOP an image, seconds
// to a minute on a CPU). The same steps as run_vit, each an op: matmul for the patch
// convolution and the projections, get_rows and add for the class token and the positions,
// layer_norm, activation for the FFN, bidirectional_attention over each image's own rows. Only
// the patches go up and the tower's output comes back; the projector then runs on the CPU
// (vision_model.cc). Attention and the norms are in double on every backend, so the output
// differs from run_vit's by rounding alone (VisionBackendTower checks both on the CPU backend).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "vision/vision_weights.h"

namespace lumen::vision {

// Why `backend` cannot run this tower (an op or a feature it lacks, a head too wide, a norm
// without its bias), or nullopt when it can. Asked at load: a refused tower runs on the CPU.
std::optional<std::string> backend_tower_refusal(const backend::Backend& backend, const VisionHParams& hp,
                                                 const VisionWeights& w);

// run_vit's output, computed on `backend` with weights bound there (bind_vision_weights with
// VectorsOn::Backend). At most max_rows rows (images times vit_rows) are in flight at once:
// larger batches run in groups of images, so memory stays bounded.
std::vector<float> run_vit_on_backend(backend::Backend& backend, const VisionWeights& w, const VisionHParams& hp,
                                      std::span<const float> chw, int64_t n_images, int64_t max_rows = 16384);

}  // namespace lumen::vision
