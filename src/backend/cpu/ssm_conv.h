#pragma once
// Mamba 2's causal depthwise convolution (Backend::ssm_conv) for one sequence and a range of
// channels: the taps summed in f32 oldest first, then the bias, then SiLU, as ggml's ssm_conv,
// add and silu compute it; the sequence's window of earlier inputs advanced past its rows.
#include <cstddef>
#include <cstdint>

#include "backend/common/ssm_checks.h"

namespace lumen::backend::cpu {

// The longest kernel the convolution takes (Mamba 2's is 4; every backend's limit, checked in
// front of them): its input rows sit on the stack.
inline constexpr int64_t kSsmConvMaxTaps = common::kSsmConvMaxTaps;

struct SsmConvTask {
  const float* x = nullptr;  // n rows of the sequence, x_stride floats apart
  size_t x_stride = 0;
  int64_t n = 0;
  const float* weight = nullptr;  // kernel taps per channel, oldest first
  int64_t kernel = 0;
  const float* bias = nullptr;
  float* window = nullptr;  // kernel - 1 rows of `channels` values, oldest first
  int64_t channels = 0;
  float* out = nullptr;  // n rows, out_stride floats apart
  size_t out_stride = 0;
};

// Channels [c0, c1) of the task: their outputs, then their part of the window.
void ssm_conv_channels(const SsmConvTask& task, int64_t c0, int64_t c1);

}  // namespace lumen::backend::cpu
