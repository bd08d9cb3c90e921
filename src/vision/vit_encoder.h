#pragma once
// The ViT tower over one image (CLIP and SigLIP alike): the patch convolution as a matmul over
// the image's patches, the class token (CLIP) first, learned positions, the pre-LayerNorm
// (CLIP), pre-norm blocks of full self-attention and an FFN, then the post-LayerNorm where the
// file keeps one (SigLIP in Gemma 3 and Idefics3; LLaVA's files drop it).
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "vision/vision_weights.h"

namespace lumen::vision {

// The tower's output for n_images images (each 3 x image_size x image_size, one after the
// other in chw): per image vit_rows() rows of n_embd floats, image after image. The images share
// every matmul; each attends over its own rows only.
std::vector<float> run_vit(backend::CpuBackend& backend, const VisionWeights& w, const VisionHParams& hp,
                           std::span<const float> chw, int64_t n_images);

// Rows the tower outputs: the patches, plus the class token when the file has one.
int64_t vit_rows(const VisionWeights& w, const VisionHParams& hp);

// One image (3 x image_size x image_size) cut into patches, one row per patch (row-major over
// the patch grid), each row in the convolution kernel's order: channel, then y, then x.
std::vector<float> patch_rows(std::span<const float> chw, const VisionHParams& hp);

}  // namespace lumen::vision
