// LLaVA-1.5 (and 1.6's base path, BakLLaVA, ShareGPT4V...): clip.projector_type "mlp", as
// llama.cpp's legacy convert_image_encoder_to_gguf.py writes it. A CLIP tower (class token,
// pre-LayerNorm, quick GELU unless clip.use_gelu) whose file already stops at the layer LLaVA
// reads (vision_feature_layer -2: block_count is the full tower's minus one; an explicit
// clip.vision.feature_layer picks it otherwise), no post-LayerNorm; the class token is dropped
// (vision_feature_select_strategy "default") and each patch row goes through
// linear -> GELU -> linear (mm.0, mm.2) into the text model's width.
//
// The GELU between the two linears is transformers' "gelu" (erf), the reference's; llama.cpp's
// graph uses its tanh approximation there (they differ by under 1e-3 of a unit activation).
#include "vision/families/families.h"
#include "vision/host_ops.h"

namespace lumen::vision {

namespace {

void llava_finish(const gguf::Metadata&, VisionHParams& hp) { hp.n_image_tokens = hp.n_patches(); }

void llava_project(const ProjectInput& in, float* out) {
  const VisionHParams& hp = in.hp;
  const int64_t skip = in.n_rows - hp.n_patches();  // the class token, first
  backend::TensorView patches = backend::f32_matrix(in.tower.data() + skip * hp.n_embd, hp.n_embd, hp.n_patches());
  const int64_t hidden = in.weights.mm_0->dims[1];
  std::vector<float> mid(static_cast<size_t>(hp.n_patches() * hidden));
  backend::TensorView m = backend::f32_matrix(mid.data(), hidden, hp.n_patches());
  in.backend.matmul(*in.weights.mm_0, patches, m);
  in.backend.add_row(m, *in.weights.mm_0_b);
  activate(in.backend.pool(), m, Activation::GeluErf);
  backend::TensorView o = backend::f32_matrix(out, hp.n_embd_out, hp.n_patches());
  in.backend.matmul(*in.weights.mm_2, m, o);
  in.backend.add_row(o, *in.weights.mm_2_b);
}

// llava_project in backend ops: the same linears, the bias rows and the erf GELU.
void llava_project_on_backend(const BackendProjectInput& in, backend::TensorView& out) {
  const VisionHParams& hp = in.hp;
  backend::Backend& be = in.backend;
  const int64_t skip = in.tower.rows() - hp.n_patches();  // the class token, first
  const backend::TensorView patches = backend::f32_matrix(static_cast<float*>(in.tower.data) + skip * in.tower.dims[0],
                                                          in.tower.dims[0], hp.n_patches());
  const int64_t hidden = in.weights.mm_0->dims[1];
  const std::unique_ptr<backend::Buffer> mid_buffer =
      be.allocate(static_cast<size_t>(hp.n_patches() * hidden) * sizeof(float));
  backend::TensorView mid = backend::f32_matrix(static_cast<float*>(mid_buffer->data()), hidden, hp.n_patches());
  be.matmul(*in.weights.mm_0, patches, mid);
  be.add_row(mid, *in.weights.mm_0_b);
  be.activation(mid, Activation::GeluErf);
  be.matmul(*in.weights.mm_2, mid, out);
  be.add_row(out, *in.weights.mm_2_b);
}

}  // namespace

ProjectorFamily llava_mlp_family() {
  using enum VDim;
  using enum VRole;
  using W = VisionWeights;
  ProjectorFamily f;
  f.projector_type = "mlp";
  f.model = "LLaVA-1.5 (CLIP ViT + 2-layer MLP)";
  f.resize = ResizeMode::ShortestEdgeCenterCrop;
  // CLIPImageProcessor's resample=3 (bicubic); LlavaProcessor expands each "<image>" into the
  // image's rows of "<image>" with nothing around them (llama.cpp's mtmd adds nothing either).
  f.resize_filter = 3;
  f.image_marker = "<image>";
  f.default_activation = Activation::QuickGelu;
  f.tensors = {
      {"mm.0.weight", {Embd, ProjHidden}, Matrix, true, &W::mm_0},
      {"mm.0.bias", {ProjHidden}, Vector, true, &W::mm_0_b},
      {"mm.2.weight", {ProjHidden, TextEmbd}, Matrix, true, &W::mm_2},
      {"mm.2.bias", {TextEmbd}, Vector, true, &W::mm_2_b},
  };
  f.finish_hparams = llava_finish;
  f.project = llava_project;
  f.project_on_backend = llava_project_on_backend;
  return f;
}

}  // namespace lumen::vision
