// Idefics3 and SmolVLM: clip.projector_type "idefics3", as convert_hf_to_gguf.py --mmproj writes
// it. A SigLIP tower (patch bias, no class token, tanh GELU, post-LayerNorm) over one tile;
// the connector's pixel shuffle folds each merge x merge square of patches into one token of
// merge^2 times the width (scale_factor), then one linear map without bias (mm.model.fc) into
// the text model's width. The image splitting into tiles is the preprocessing's.
#include "vision/families/families.h"
#include "vision/families/merge_factor.h"
#include "vision/host_ops.h"

namespace lumen::vision {

namespace {

constexpr int64_t kMaxTilesPerSide = 8;

// The image splitting's longest edge, as convert_hf_to_gguf.py writes it from the processor's
// size.longest_edge; llama.cpp's mtmd falls back to the tile size, so does this. Bounded so that
// an image is at most 8 x 8 tiles plus the global one (SmolVLM's largest is 4 x 4 + 1 at 2048 / 512,
// Idefics3's 4 x 4 + 1 at 1456 / 364): a file cannot make one image cost more.
void idefics3_finish(const gguf::Metadata& meta, VisionHParams& hp) {
  set_merge_factor(meta, hp, 2);
  const uint64_t edge = meta.find_unsigned("clip.vision.preproc_image_size").value_or(hp.image_size);
  if (edge < static_cast<uint64_t>(hp.image_size) || edge > static_cast<uint64_t>(kMaxTilesPerSide * hp.image_size)) {
    fail("clip.vision.preproc_image_size {} is out of range for tiles of {} (from the tile size to {} times it)", edge,
         hp.image_size, kMaxTilesPerSide);
  }
  hp.tiling_longest_edge = static_cast<int64_t>(edge);
}

// transformers' Idefics3Connector.pixel_shuffle: token (i, j) of the merged grid is the
// concatenation, rows a of the square outer and columns b inner, of patch (i*s + a, j*s + b).
std::vector<float> idefics3_prepare(const ProjectInput& in) {
  const VisionHParams& hp = in.hp;
  const int64_t side = hp.patches_per_side(), s = hp.merge, merged_side = side / s, e = hp.n_embd;
  const int64_t width = e * s * s;
  std::vector<float> shuffled(static_cast<size_t>(hp.n_image_tokens * width));
  for_each_row(in.backend.pool(), hp.n_image_tokens, [&](int64_t token) {
    const int64_t i = token / merged_side, j = token % merged_side;
    float* dst = shuffled.data() + token * width;
    for (int64_t a = 0; a < s; ++a) {
      for (int64_t b = 0; b < s; ++b) {
        const float* src = in.tower.data() + ((i * s + a) * side + j * s + b) * e;
        std::copy(src, src + e, dst + (a * s + b) * e);
      }
    }
  });
  return shuffled;
}

// The shuffle, then mm.model.fc.
void idefics3_project(const ProjectInput& in, float* out) {
  std::vector<float> shuffled = idefics3_prepare(in);
  const VisionHParams& hp = in.hp;
  const int64_t width = hp.n_embd * hp.merge * hp.merge;
  backend::TensorView x = backend::f32_matrix(shuffled.data(), width, hp.n_image_tokens);
  backend::TensorView o = backend::f32_matrix(out, hp.n_embd_out, hp.n_image_tokens);
  in.backend.matmul(*in.weights.mm_fc, x, o);
}

}  // namespace

ProjectorFamily idefics3_family() {
  using enum VDim;
  using enum VRole;
  using W = VisionWeights;
  ProjectorFamily f;
  f.projector_type = "idefics3";
  f.model = "Idefics3 / SmolVLM (SigLIP + pixel shuffle + linear)";
  f.resize = ResizeMode::LongestEdgeTiles;
  f.resize_filter = 1;  // Idefics3ImageProcessor's resample=1 (Lanczos)
  // The template's marker; Idefics3Processor writes each tile with its own row/column text, so
  // the image's prompt text depends on its size: vision/tiled_prompt_layout.h writes it.
  f.image_marker = "<image>";
  f.default_activation = Activation::GeluTanh;
  f.tensors = {
      {"mm.model.fc.weight", {MergedEmbd, TextEmbd}, Matrix, true, &W::mm_fc},
  };
  f.finish_hparams = idefics3_finish;
  f.project = idefics3_project;
  f.prepare = idefics3_prepare;
  f.final_linear = &W::mm_fc;
  return f;
}

}  // namespace lumen::vision
