#include "backend/cpu/ssm_conv.h"

#include <algorithm>
#include <type_traits>

#include "backend/cpu/activation.h"

namespace lumen::backend::cpu {

void ssm_conv_channels(const SsmConvTask& task, int64_t c0, int64_t c1) {
  const int64_t k = task.kernel, n = task.n, history = k - 1, width = c1 - c0;
  // Input row i of the concatenation [window, rows] (i in -(k - 1) .. n - 1).
  auto input = [&](int64_t i) -> const float* {
    return i >= 0 ? task.x + static_cast<size_t>(i) * task.x_stride
                  : task.window + static_cast<size_t>(history + i) * static_cast<size_t>(task.channels);
  };
  // Per channel, its k taps (contiguous in the weight) against the k inputs, summed from 0 oldest
  // first, then the bias: no transposed copy of the taps, so a decode step reads each weight
  // once and allocates nothing. Mamba 2's kernel is 4 taps: that case gets a fixed-trip loop.
  auto rows = [&]<int64_t kTaps>(std::integral_constant<int64_t, kTaps>) {
    const int64_t taps = kTaps > 0 ? kTaps : k;
    for (int64_t t = 0; t < n; ++t) {
      float* out = task.out + static_cast<size_t>(t) * task.out_stride;
      const float* in[kSsmConvMaxTaps];  // the backend refuses longer kernels
      for (int64_t j = 0; j < taps; ++j) in[j] = input(t - history + j);
      for (int64_t c = c0; c < c1; ++c) {
        const float* w = task.weight + c * taps;
        float sum = 0.0f;
        for (int64_t j = 0; j < taps; ++j) sum += w[j] * in[j][c];
        out[c] = sum + task.bias[c];
      }
      silu_row(out + c0, width, out + c0);
    }
  };
  if (k == 4) {
    rows(std::integral_constant<int64_t, 4>{});
  } else {
    rows(std::integral_constant<int64_t, 0>{});
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
