#include "vision/vit_encoder.h"

#include <numeric>

#include "vision/host_ops.h"
#include "vision/vit_attention.h"

namespace lumen::vision {

using backend::TensorView;

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

int64_t vit_rows(const VisionWeights& w, const VisionHParams& hp) { return hp.n_patches() + (w.class_embd ? 1 : 0); }

std::vector<float> run_vit(backend::CpuBackend& backend, const VisionWeights& w, const VisionHParams& hp,
                           std::span<const float> chw, int64_t n_images) {
  ThreadPool& pool = backend.pool();
  const int64_t n = vit_rows(w, hp), e = hp.n_embd, first_patch = w.class_embd ? 1 : 0;
  const int64_t rows = n * n_images, np = hp.n_patches(), image_values = 3 * hp.image_size * hp.image_size;
  std::vector<float> x_data(static_cast<size_t>(rows * e)), h_data(x_data.size()), t_data(x_data.size());
  std::vector<float> q_data(x_data.size()), k_data(x_data.size()), v_data(x_data.size());
  std::vector<float> up_data(static_cast<size_t>(rows * hp.n_ff));
  TensorView x = backend::f32_matrix(x_data.data(), e, rows), h = backend::f32_matrix(h_data.data(), e, rows);
  TensorView t = backend::f32_matrix(t_data.data(), e, rows);
  TensorView q = backend::f32_matrix(q_data.data(), e, rows), k = backend::f32_matrix(k_data.data(), e, rows);
  TensorView v = backend::f32_matrix(v_data.data(), e, rows);
  TensorView up = backend::f32_matrix(up_data.data(), hp.n_ff, rows);
  // An image's rows of a batch-wide matrix.
  const auto image_rows = [&](std::vector<float>& data, int64_t image, int64_t first, int64_t count) {
    return backend::f32_matrix(data.data() + (image * n + first) * e, e, count);
  };

  // Patch embeddings of every image in one matmul, then each image's rows laid out as the class
  // token (when the tower has one) and its patches, plus the learned positions.
  const int64_t patch_values = 3 * hp.patch_size * hp.patch_size;
  std::vector<float> patches(static_cast<size_t>(n_images * np * patch_values));
  std::vector<float> embedded(static_cast<size_t>(n_images * np * e));
  for (int64_t i = 0; i < n_images; ++i) {
    const std::vector<float> one = patch_rows(chw.subspan(static_cast<size_t>(i * image_values), image_values), hp);
    std::copy(one.begin(), one.end(), patches.begin() + i * np * patch_values);
  }
  TensorView patch_in = backend::f32_matrix(patches.data(), patch_values, n_images * np);
  TensorView patch_out = backend::f32_matrix(embedded.data(), e, n_images * np);
  backend.matmul(*w.patch, patch_in, patch_out);
  if (w.patch_b) backend.add_row(patch_out, *w.patch_b);
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  TensorView pos = image_rows(t_data, 0, 0, n);
  backend.get_rows(*w.position, positions, pos);
  for (int64_t i = 0; i < n_images; ++i) {
    if (w.class_embd) std::copy_n(static_cast<const float*>(w.class_embd->data), e, x_data.data() + i * n * e);
    std::copy_n(embedded.data() + i * np * e, np * e, x_data.data() + (i * n + first_patch) * e);
    TensorView xi = image_rows(x_data, i, 0, n);
    backend.add(xi, pos, xi);
  }
  if (w.pre_ln_w) layer_norm(pool, x, *w.pre_ln_w, w.pre_ln_b ? &*w.pre_ln_b : nullptr, hp.eps, x);

  for (const VisionLayer& l : w.layers) {
    layer_norm(pool, x, *l.ln1_w, &*l.ln1_b, hp.eps, h);
    const backend::Backend::MatmulOutput qkv[] = {{&*l.q, &q}, {&*l.k, &k}, {&*l.v, &v}};
    backend.matmul_same_input(h, qkv);
    if (l.q_b) backend.add_row(q, *l.q_b);
    if (l.k_b) backend.add_row(k, *l.k_b);
    if (l.v_b) backend.add_row(v, *l.v_b);
    for (int64_t i = 0; i < n_images; ++i) {  // each image attends over its own rows only
      TensorView out = image_rows(h_data, i, 0, n);
      vit_attention(backend, image_rows(q_data, i, 0, n), image_rows(k_data, i, 0, n), image_rows(v_data, i, 0, n),
                    hp.n_head, out);
    }
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
