#include "backend/cpu/ssm_conv.h"

#include <cmath>

namespace lumen::backend::cpu {

void ssm_conv_channels(const SsmConvTask& task, int64_t c0, int64_t c1) {
  const int64_t k = task.kernel, n = task.n, history = k - 1;
  // Input row i of the concatenation [window, rows] (i in -(k - 1) .. n - 1).
  auto input = [&](int64_t i) -> const float* {
    return i >= 0 ? task.x + static_cast<size_t>(i) * task.x_stride
                  : task.window + static_cast<size_t>(history + i) * static_cast<size_t>(task.channels);
  };
  for (int64_t t = 0; t < n; ++t) {
    float* out = task.out + static_cast<size_t>(t) * task.out_stride;
    for (int64_t c = c0; c < c1; ++c) {
      const float* taps = task.weight + c * k;
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) sum += taps[j] * input(t - history + j)[c];
      const float v = sum + task.bias[c];
      out[c] = v / (1.0f + std::exp(-v));
    }
  }
  // The window keeps the last k - 1 inputs: rows already in it move up by n, the rest come from
  // the rows (ascending j reads only entries not yet overwritten).
  for (int64_t j = 0; j < history; ++j) {
    const float* src = input(n - history + j);
    float* dst = task.window + static_cast<size_t>(j) * static_cast<size_t>(task.channels);
    for (int64_t c = c0; c < c1; ++c) dst[c] = src[c];
  }
}

}  // namespace lumen::backend::cpu
