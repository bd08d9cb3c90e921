#include "backend/cpu/ssm_conv.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/activation.h"

namespace lumen::backend::cpu {

void ssm_conv_channels(const SsmConvTask& task, int64_t c0, int64_t c1) {
  const int64_t k = task.kernel, n = task.n, history = k - 1, width = c1 - c0;
  // Input row i of the concatenation [window, rows] (i in -(k - 1) .. n - 1).
  auto input = [&](int64_t i) -> const float* {
    return i >= 0 ? task.x + static_cast<size_t>(i) * task.x_stride
                  : task.window + static_cast<size_t>(history + i) * static_cast<size_t>(task.channels);
  };
  // The taps tap-major (taps[j][c]), so each tap is one pass over contiguous channels (the
  // weight rows are channel-major: k floats per channel).
  std::vector<float> taps(static_cast<size_t>(k * width));
  for (int64_t c = 0; c < width; ++c) {
    for (int64_t j = 0; j < k; ++j) taps[static_cast<size_t>(j * width + c)] = task.weight[(c0 + c) * k + j];
  }
  for (int64_t t = 0; t < n; ++t) {
    float* out = task.out + static_cast<size_t>(t) * task.out_stride + c0;
    std::fill_n(out, width, 0.0f);
    for (int64_t j = 0; j < k; ++j) {  // oldest first, as ggml sums them
      const float* in = input(t - history + j) + c0;
      const float* w = taps.data() + j * width;
      for (int64_t c = 0; c < width; ++c) out[c] += w[c] * in[c];
    }
    for (int64_t c = 0; c < width; ++c) out[c] += task.bias[c0 + c];
    silu_row(out, width, out);
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
