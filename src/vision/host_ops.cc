#include "vision/host_ops.h"

#include <algorithm>
#include <cmath>

namespace lumen::vision {

namespace {

using backend::TensorView;

const float* floats(const TensorView& v) { return static_cast<const float*>(v.data); }

// Rows per task: enough work to outweigh handing a task out.
constexpr int64_t kRowsPerTask = 8;

float apply(Activation act, float x) {
  const double v = x;
  switch (act) {
    case Activation::QuickGelu: return static_cast<float>(v / (1.0 + std::exp(-1.702 * v)));
    case Activation::GeluTanh: {
      const double inner = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
      return static_cast<float>(0.5 * v * (1.0 + std::tanh(inner)));
    }
    case Activation::GeluErf: return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    case Activation::Silu: return static_cast<float>(v / (1.0 + std::exp(-v)));
  }
  return x;
}

}  // namespace

void for_each_row(ThreadPool& pool, int64_t rows, const std::function<void(int64_t)>& fn) {
  pool.parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, unsigned) {
    for (int64_t r = task * kRowsPerTask; r < std::min(rows, (task + 1) * kRowsPerTask); ++r) fn(r);
  });
}

void layer_norm(ThreadPool& pool, const TensorView& x, const TensorView& w, const TensorView* b, double eps,
                TensorView& out) {
  const int64_t width = x.dims[0];
  for_each_row(pool, x.dims[1], [&](int64_t r) {
    const float* in = x.row<float>(r);
    float* o = out.row<float>(r);
    double mean = 0.0;
    for (int64_t c = 0; c < width; ++c) mean += in[c];
    mean /= static_cast<double>(width);
    double var = 0.0;
    for (int64_t c = 0; c < width; ++c) var += (in[c] - mean) * (in[c] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(width) + eps);
    for (int64_t c = 0; c < width; ++c) {
      const double bias = b != nullptr ? floats(*b)[c] : 0.0;
      o[c] = static_cast<float>((in[c] - mean) * inv * floats(w)[c] + bias);
    }
  });
}

void rms_norm_rows(ThreadPool& pool, TensorView& x, const TensorView& w, double eps) {
  const int64_t width = x.dims[0];
  for_each_row(pool, x.dims[1], [&](int64_t r) {
    float* row = x.row<float>(r);
    double sum = 0.0;
    for (int64_t c = 0; c < width; ++c) sum += static_cast<double>(row[c]) * row[c];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(width) + eps);
    for (int64_t c = 0; c < width; ++c) row[c] = static_cast<float>(row[c] * inv * floats(w)[c]);
  });
}

void activate(ThreadPool& pool, TensorView& x, Activation act) {
  for_each_row(pool, x.dims[1], [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = apply(act, row[c]);
  });
}

void softmax_rows(ThreadPool& pool, TensorView& x) {
  for_each_row(pool, x.dims[1], [&](int64_t r) {
    float* row = x.row<float>(r);
    const float most = *std::max_element(row, row + x.dims[0]);
    double sum = 0.0;
    for (int64_t c = 0; c < x.dims[0]; ++c) sum += (row[c] = std::exp(row[c] - most));
    const double inv = 1.0 / sum;
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = static_cast<float>(row[c] * inv);
  });
}

}  // namespace lumen::vision
