#include "vision/host_ops.h"

#include <algorithm>
#include <cmath>

namespace lumen::vision {

namespace {

using backend::TensorView;

const float* floats(const TensorView& v) { return static_cast<const float*>(v.data); }

// Rows per task: enough work to outweigh handing a task out.
constexpr int64_t kRowsPerTask = 8;

// In float, as transformers computes them in an f32 model, one loop per activation so that
// the compiler calls the vector versions of exp, tanh and erf (CMakeLists.txt).
void apply(Activation act, float* x, int64_t n) {
  switch (act) {
    case Activation::QuickGelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
      break;
    case Activation::GeluTanh:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i], inner = 0.7978845608f * (v + 0.044715f * v * v * v);  // sqrt(2 / pi)
        x[i] = 0.5f * v * (1.0f + std::tanh(inner));
      }
      break;
    case Activation::GeluErf:
      for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
      break;
    case Activation::Silu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
      break;
    case Activation::Tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
  }
}

// Scores this far below the row's largest are 0 after the softmax; exp of them would take
// libm's slow underflow path (the spread-out scores of a real tower hit it for most keys), so
// exp sees at most this far down, where it is still an ordinary float, and the result is then
// dropped. Branch-free, so the loop stays vectorized.
constexpr float kExpFloor = -87.0f;

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
  for_each_row(pool, x.dims[1], [&](int64_t r) { apply(act, x.row<float>(r), x.dims[0]); });
}

void softmax_rows(ThreadPool& pool, TensorView& x) {
  for_each_row(pool, x.dims[1], [&](int64_t r) {
    float* row = x.row<float>(r);
    const float most = *std::max_element(row, row + x.dims[0]);
    double sum = 0.0;
    for (int64_t c = 0; c < x.dims[0]; ++c) {
      const float d = row[c] - most;
      const float e = std::exp(std::max(d, kExpFloor));
      sum += (row[c] = d > kExpFloor ? e : 0.0f);
    }
    const double inv = 1.0 / sum;
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = static_cast<float>(row[c] * inv);
  });
}

}  // namespace lumen::vision
