#include "model/host_row_ops.h"

#include <algorithm>
#include <cmath>

#include "backend/common/gelu_table.h"

namespace lumen::model {

namespace {

using backend::TensorView;

const float* host_floats(const TensorView& v) { return static_cast<const float*>(v.data); }

}  // namespace

void layer_norm(ThreadPool& pool, const TensorView& x, const TensorView& w, const TensorView& b, double eps,
                TensorView& out) {
  const int64_t width = x.dims[0];
  const float* weight = host_floats(w);
  const float* bias = host_floats(b);
  for_each_row(pool, x, [&](int64_t r) {
    const float* row = x.row<const float>(r);
    float* dst = out.row<float>(r);
    double mean = 0.0;
    for (int64_t c = 0; c < width; ++c) mean += row[c];
    mean /= static_cast<double>(width);
    double var = 0.0;
    for (int64_t c = 0; c < width; ++c) var += (row[c] - mean) * (row[c] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(width) + eps);
    for (int64_t c = 0; c < width; ++c) dst[c] = static_cast<float>((row[c] - mean) * inv * weight[c] + bias[c]);
  });
}

void gelu_erf(ThreadPool& pool, TensorView& x) {
  for_each_row(pool, x, [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) {
      const double v = row[c];
      row[c] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    }
  });
}

void gelu_tanh(ThreadPool& pool, TensorView& x) {
  for_each_row(pool, x, [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = backend::common::gelu_tanh_like_ggml(row[c]);
  });
}

}  // namespace lumen::model
