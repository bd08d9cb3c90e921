#include "vision/vit_encoder.h"

#include <numeric>

#include "vision/host_ops.h"
#include "vision/vit_attention.h"

namespace lumen::vision {

namespace {

using backend::TensorView;

// The image cut into patches, one row per patch (row-major over the patch grid), each row in
// the convolution kernel's order: channel, then y, then x.
std::vector<float> patch_rows(std::span<const float> chw, const VisionHParams& hp) {
  const int64_t p = hp.patch_size, side = hp.patches_per_side(), size = hp.image_size;
  const int64_t cols = 3 * p * p;
  std::vector<float> rows(static_cast<size_t>(hp.n_patches() * cols));
  for (int64_t py = 0; py < side; ++py) {
    for (int64_t px = 0; px < side; ++px) {
      float* row = rows.data() + (py * side + px) * cols;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t y = 0; y < p; ++y) {
          const float* src = chw.data() + c * size * size + (py * p + y) * size + px * p;
          std::copy(src, src + p, row + (c * p + y) * p);
        }
      }
    }
  }
  return rows;
}

}  // namespace

int64_t vit_rows(const VisionWeights& w, const VisionHParams& hp) { return hp.n_patches() + (w.class_embd ? 1 : 0); }

std::vector<float> run_vit(backend::CpuBackend& backend, const VisionWeights& w, const VisionHParams& hp,
                           std::span<const float> chw) {
  ThreadPool& pool = backend.pool();
  const int64_t n = vit_rows(w, hp), e = hp.n_embd, first_patch = w.class_embd ? 1 : 0;
  std::vector<float> x_data(static_cast<size_t>(n * e)), h_data(x_data.size()), t_data(x_data.size());
  std::vector<float> q_data(x_data.size()), k_data(x_data.size()), v_data(x_data.size());
  std::vector<float> up_data(static_cast<size_t>(n * hp.n_ff));
  TensorView x = backend::f32_matrix(x_data.data(), e, n), h = backend::f32_matrix(h_data.data(), e, n);
  TensorView t = backend::f32_matrix(t_data.data(), e, n);
  TensorView q = backend::f32_matrix(q_data.data(), e, n), k = backend::f32_matrix(k_data.data(), e, n);
  TensorView v = backend::f32_matrix(v_data.data(), e, n), up = backend::f32_matrix(up_data.data(), hp.n_ff, n);

  // Patch embeddings (and the class token before them), plus the learned positions.
  std::vector<float> patches = patch_rows(chw, hp);
  TensorView patch_in = backend::f32_matrix(patches.data(), 3 * hp.patch_size * hp.patch_size, hp.n_patches());
  TensorView patch_out = backend::f32_matrix(x_data.data() + first_patch * e, e, hp.n_patches());
  backend.matmul(*w.patch, patch_in, patch_out);
  if (w.patch_b) backend.add_row(patch_out, *w.patch_b);
  if (w.class_embd) std::copy_n(static_cast<const float*>(w.class_embd->data), e, x_data.data());
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  backend.get_rows(*w.position, positions, t);
  backend.add(x, t, x);
  if (w.pre_ln_w) layer_norm(pool, x, *w.pre_ln_w, w.pre_ln_b ? &*w.pre_ln_b : nullptr, hp.eps, x);

  for (const VisionLayer& l : w.layers) {
    layer_norm(pool, x, *l.ln1_w, &*l.ln1_b, hp.eps, h);
    const backend::Backend::MatmulOutput qkv[] = {{&*l.q, &q}, {&*l.k, &k}, {&*l.v, &v}};
    backend.matmul_same_input(h, qkv);
    if (l.q_b) backend.add_row(q, *l.q_b);
    if (l.k_b) backend.add_row(k, *l.k_b);
    if (l.v_b) backend.add_row(v, *l.v_b);
    vit_attention(backend, q, k, v, hp.n_head, h);
    backend.matmul(*l.o, h, t);
    if (l.o_b) backend.add_row(t, *l.o_b);
    backend.add(x, t, x);
    layer_norm(pool, x, *l.ln2_w, &*l.ln2_b, hp.eps, h);
    backend.matmul(*l.up, h, up);
    if (l.up_b) backend.add_row(up, *l.up_b);
    activate(pool, up, hp.ffn_act);
    backend.matmul(*l.down, up, t);
    if (l.down_b) backend.add_row(t, *l.down_b);
    backend.add(x, t, x);
  }
  if (w.post_ln_w) layer_norm(pool, x, *w.post_ln_w, w.post_ln_b ? &*w.post_ln_b : nullptr, hp.eps, x);
  return x_data;
}

}  // namespace lumen::vision
