// Gemma 3's vision projector: clip.projector_type "gemma3", as convert_hf_to_gguf.py --mmproj
// writes it. A SigLIP tower (patch bias, no class token, tanh GELU, post-LayerNorm); its
// patch grid average-pooled in merge x merge squares (merge = scale_factor, 4 unless the file
// says otherwise: 64x64 patches to 256 tokens), then Gemma's RMS norm (the converter has
// already added the 1 to its weight) and the input projection into the text model's width.
// The projection is stored {text, vision} (transformers keeps it as a raw parameter used as
// x @ W): the loader transposes it into an f32 matrix.
#include "vision/families/families.h"
#include "vision/families/merge_factor.h"
#include "vision/host_ops.h"

namespace lumen::vision {

namespace {

void gemma3_finish(const gguf::Metadata& meta, VisionHParams& hp) { set_merge_factor(meta, hp, 4); }

// The tower's patch grid average-pooled in merge x merge squares, then Gemma's RMS norm: the rows
// the input projection reads.
std::vector<float> gemma3_prepare(const ProjectInput& in) {
  const VisionHParams& hp = in.hp;
  const int64_t side = hp.patches_per_side(), k = hp.merge, pooled_side = side / k, e = hp.n_embd;
  std::vector<float> pooled(static_cast<size_t>(hp.n_image_tokens * e));
  const float inv = 1.0f / static_cast<float>(k * k);
  for_each_row(in.backend.pool(), hp.n_image_tokens, [&](int64_t token) {
    const int64_t oy = token / pooled_side, ox = token % pooled_side;
    float* dst = pooled.data() + token * e;
    for (int64_t a = 0; a < k; ++a) {
      for (int64_t b = 0; b < k; ++b) {
        const float* src = in.tower.data() + ((oy * k + a) * side + ox * k + b) * e;
        for (int64_t c = 0; c < e; ++c) dst[c] += src[c];
      }
    }
    for (int64_t c = 0; c < e; ++c) dst[c] *= inv;
  });
  backend::TensorView p = backend::f32_matrix(pooled.data(), e, hp.n_image_tokens);
  rms_norm_rows(in.backend.pool(), p, *in.weights.mm_soft_emb_norm, hp.eps);
  return pooled;
}

void gemma3_project(const ProjectInput& in, float* out) {
  std::vector<float> pooled = gemma3_prepare(in);
  const backend::TensorView p = backend::f32_matrix(pooled.data(), in.hp.n_embd, in.hp.n_image_tokens);
  backend::TensorView o = backend::f32_matrix(out, in.hp.n_embd_out, in.hp.n_image_tokens);
  in.backend.matmul(*in.weights.mm_input_projection, p, o);
}

}  // namespace

ProjectorFamily gemma3_family() {
  using enum VDim;
  using enum VRole;
  using W = VisionWeights;
  ProjectorFamily f;
  f.projector_type = "gemma3";
  f.model = "Gemma 3 (SigLIP + average pool + RMS norm + projection)";
  f.resize = ResizeMode::Squash;
  // Gemma3ImageProcessor's resample=2 (bilinear). The chat template writes "<start_of_image>";
  // Gemma3Processor replaces it with "\n\n<start_of_image>", the soft tokens, "<end_of_image>\n\n"
  // (llama.cpp's mtmd puts the same two markers around the image, without the blank lines).
  f.resize_filter = 2;
  f.image_marker = "<start_of_image>";
  f.image_before = "\n\n<start_of_image>";
  f.image_after = "<end_of_image>\n\n";
  // Gemma3ForConditionalGeneration, given the processor's token_type_ids, lets an image's
  // positions see each other both ways; the mask is causal everywhere else.
  f.image_attends_both_ways = true;
  f.default_activation = Activation::GeluTanh;
  f.tensors = {
      {"mm.soft_emb_norm.weight", {Embd}, Vector, true, &W::mm_soft_emb_norm},
      {"mm.input_projection.weight", {TextEmbd, Embd}, Transposed, true, &W::mm_input_projection},
  };
  f.finish_hparams = gemma3_finish;
  f.project = gemma3_project;
  f.prepare = gemma3_prepare;
  f.final_linear = &W::mm_input_projection;
  return f;
}

}  // namespace lumen::vision
