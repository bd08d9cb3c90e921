#include "vision/vit_attention.h"

#include <cmath>
#include <vector>

#include "vision/host_ops.h"

namespace lumen::vision {

using backend::TensorView;

void vit_attention(backend::CpuBackend& backend, const TensorView& q, const TensorView& k, const TensorView& v,
                   int64_t n_head, TensorView& out) {
  const int64_t n = q.dims[1], width = q.dims[0], head_dim = width / n_head;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  ThreadPool& pool = backend.pool();
  // One head's operands, contiguous: K and scaled Q as {head_dim, n}, V transposed {n, head_dim}.
  std::vector<float> kh(static_cast<size_t>(n * head_dim)), qh(kh.size()), vt(kh.size()), oh(kh.size());
  std::vector<float> scores(static_cast<size_t>(n * n));
  TensorView k_view = backend::f32_matrix(kh.data(), head_dim, n);
  TensorView q_view = backend::f32_matrix(qh.data(), head_dim, n);
  TensorView v_view = backend::f32_matrix(vt.data(), n, head_dim);
  TensorView o_view = backend::f32_matrix(oh.data(), head_dim, n);
  TensorView s_view = backend::f32_matrix(scores.data(), n, n);
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t at = h * head_dim;
    for_each_row(pool, n, [&](int64_t r) {
      for (int64_t d = 0; d < head_dim; ++d) {
        kh[r * head_dim + d] = k.row<float>(r)[at + d];
        qh[r * head_dim + d] = q.row<float>(r)[at + d] * scale;
        vt[d * n + r] = v.row<float>(r)[at + d];
      }
    });
    backend.matmul(k_view, q_view, s_view);  // row i: query i's score for every key
    softmax_rows(pool, s_view);
    backend.matmul(v_view, s_view, o_view);  // row i: the weighted sum of the values
    for_each_row(pool, n, [&](int64_t r) {
      for (int64_t d = 0; d < head_dim; ++d) out.row<float>(r)[at + d] = oh[r * head_dim + d];
    });
  }
}

}  // namespace lumen::vision
