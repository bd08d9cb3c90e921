// The ViT tower through backend ops (backend_tower.h).
#include "vision/backend_tower.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "util/error.h"
#include "vision/vit_encoder.h"

namespace lumen::vision {

namespace {

using backend::TensorView;

// A matrix of `cols` x `rows` f32 in memory the backend allocated.
struct Activations {
  std::unique_ptr<backend::Buffer> buffer;
  TensorView view;
};

Activations allocate(backend::Backend& backend, int64_t cols, int64_t rows) {
  Activations a;
  a.buffer = backend.allocate(static_cast<size_t>(cols * rows) * sizeof(float));
  a.view = backend::f32_matrix(static_cast<float*>(a.buffer->data()), cols, rows);
  return a;
}

// Rows [first, first + count) of an f32 matrix.
TensorView rows_of(const TensorView& m, int64_t first, int64_t count) {
  return backend::f32_matrix(static_cast<float*>(m.data) + first * m.dims[0], m.dims[0], count);
}

// One group of images through the tower, its output into `out` (host).
void run_group(backend::Backend& be, const VisionWeights& w, const VisionHParams& hp, std::span<const float> chw,
               int64_t n_images, float* out) {
  const int64_t n = vit_rows(w, hp), e = hp.n_embd, np = hp.n_patches(), first_patch = w.class_embd ? 1 : 0;
  const int64_t rows = n * n_images, patch_values = 3 * hp.patch_size * hp.patch_size;
  const int64_t image_values = 3 * hp.image_size * hp.image_size;
  Activations x = allocate(be, e, rows), h = allocate(be, e, rows), t = allocate(be, e, rows);
  Activations q = allocate(be, e, rows), k = allocate(be, e, rows), v = allocate(be, e, rows);
  Activations up = allocate(be, hp.n_ff, rows), pos = allocate(be, e, n);
  Activations patches = allocate(be, patch_values, np);

  // Each image: its patches up, the convolution as a matmul into its patch rows, the class token
  // (a one-row table) before them, then the learned positions.
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  be.get_rows(*w.position, positions, pos.view);
  const int32_t zero = 0;
  for (int64_t i = 0; i < n_images; ++i) {
    const std::vector<float> one = patch_rows(chw.subspan(static_cast<size_t>(i * image_values), image_values), hp);
    be.copy_from_host(one.data(), patches.view);
    TensorView embedded = rows_of(x.view, i * n + first_patch, np);
    be.matmul(*w.patch, patches.view, embedded);
    if (w.patch_b) be.add_row(embedded, *w.patch_b);
    if (w.class_embd) {
      TensorView class_row = rows_of(x.view, i * n, 1);
      be.get_rows(*w.class_embd, std::span(&zero, 1), class_row);
    }
    TensorView xi = rows_of(x.view, i * n, n);
    be.add(xi, pos.view, xi);
  }
  const auto eps = static_cast<float>(hp.eps);
  if (w.pre_ln_w) be.layer_norm(x.view, *w.pre_ln_w, *w.pre_ln_b, eps, x.view);

  std::vector<backend::SequenceSlice> images(static_cast<size_t>(n_images));
  for (int64_t i = 0; i < n_images; ++i) images[static_cast<size_t>(i)] = {i * n, n, 0, {}};
  backend::AttentionConfig config;
  config.n_heads = config.n_kv_heads = hp.n_head;
  config.head_dim = e / hp.n_head;
  config.scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim));
  for (const VisionLayer& l : w.layers) {
    be.layer_norm(x.view, *l.ln1_w, *l.ln1_b, eps, h.view);
    const backend::Backend::MatmulOutput qkv[] = {{&*l.q, &q.view}, {&*l.k, &k.view}, {&*l.v, &v.view}};
    be.matmul_same_input(h.view, qkv);
    if (l.q_b) be.add_row(q.view, *l.q_b);
    if (l.k_b) be.add_row(k.view, *l.k_b);
    if (l.v_b) be.add_row(v.view, *l.v_b);
    be.bidirectional_attention(q.view, k.view, v.view, images, config, h.view);
    be.matmul(*l.o, h.view, t.view);
    if (l.o_b) be.add_row(t.view, *l.o_b);
    be.add(x.view, t.view, x.view);
    be.layer_norm(x.view, *l.ln2_w, *l.ln2_b, eps, h.view);
    be.matmul(*l.up, h.view, up.view);
    if (l.up_b) be.add_row(up.view, *l.up_b);
    be.activation(up.view, hp.ffn_act);
    be.matmul(*l.down, up.view, t.view);
    if (l.down_b) be.add_row(t.view, *l.down_b);
    be.add(x.view, t.view, x.view);
  }
  if (w.post_ln_w) be.layer_norm(x.view, *w.post_ln_w, *w.post_ln_b, eps, x.view);
  be.copy_to_host(x.view, out);
}

}  // namespace

std::optional<std::string> backend_tower_refusal(const backend::Backend& backend, const VisionHParams& hp,
                                                 const VisionWeights& w) {
  if (!backend.supports(backend::BackendFeature::LayerNorm)) {
    return fmt::format("the {} backend has no LayerNorm blocks (layer_norm, activation)", backend.name());
  }
  if (!backend.supports(backend::BackendFeature::Encoder)) {
    return fmt::format("the {} backend has no bidirectional attention", backend.name());
  }
  const int64_t head_dim = hp.n_embd / hp.n_head, widest = backend.max_attention_head_dim();
  if (widest > 0 && head_dim > widest) {
    return fmt::format("the tower's heads have {} values, the {} backend's at most {}", head_dim, backend.name(),
                       widest);
  }
  // The matrices and tables in the file's types (an f32 vector any backend reads).
  std::vector<const std::optional<TensorView>*> stored = {&w.patch, &w.position};
  for (const VisionLayer& l : w.layers) {
    for (const std::optional<TensorView>* m : {&l.q, &l.k, &l.v, &l.o, &l.up, &l.down}) stored.push_back(m);
  }
  for (const std::optional<TensorView>* m : stored) {
    if (*m && !backend.supports_weight_type((*m)->type)) {
      return fmt::format("the {} backend does not read {} weights", backend.name(), tensor::dtype_name((*m)->type));
    }
  }
  // layer_norm takes a bias; every CLIP and SigLIP file has them.
  if ((w.pre_ln_w && !w.pre_ln_b) || (w.post_ln_w && !w.post_ln_b)) return std::string("a LayerNorm without its bias");
  for (const VisionLayer& l : w.layers) {
    if (!l.ln1_b || !l.ln2_b) return std::string("a LayerNorm without its bias");
  }
  return std::nullopt;
}

std::vector<float> run_vit_on_backend(backend::Backend& backend, const VisionWeights& w, const VisionHParams& hp,
                                      std::span<const float> chw, int64_t n_images, int64_t max_rows) {
  const int64_t n = vit_rows(w, hp), image_values = 3 * hp.image_size * hp.image_size;
  if (static_cast<int64_t>(chw.size()) != n_images * image_values) {
    fail("the tower takes {} values for {} images, got {}", n_images * image_values, n_images, chw.size());
  }
  std::vector<float> out(static_cast<size_t>(n_images * n * hp.n_embd));
  const int64_t group = std::max<int64_t>(1, max_rows / n);
  for (int64_t first = 0; first < n_images; first += group) {
    const int64_t count = std::min(group, n_images - first);
    run_group(backend, w, hp,
              chw.subspan(static_cast<size_t>(first * image_values), static_cast<size_t>(count * image_values)), count,
              out.data() + first * n * hp.n_embd);
  }
  return out;
}

}  // namespace lumen::vision
