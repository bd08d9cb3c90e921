#pragma once
// The token-by-token scan's loop (ssm_scan.h), included by the portable unit and by the AVX2 one
// (ssm_scan_avx2.cc), which compiles the same loop with eight-lane FMA: its sums over the state
// run in 8 partial sums either way (vectorizable lanes), so only FMA's single rounding differs.
// In an unnamed namespace: each unit keeps its own copy, compiled with its own flags.
#include <cmath>
#include <cstdint>

#include "backend/cpu/ssm_scan.h"

namespace lumen::backend::cpu {
namespace {

inline void scan_head(const SsmScanTask& task, int64_t head) {
  constexpr int64_t kLanes = 8;
  const int64_t s_size = task.state_size, first = head * task.head_dim;
  const int64_t group = head / task.heads_per_group;
  const float a = task.a[head], d = task.d[head], bias = task.dt_bias[head];
  for (int64_t t = 0; t < task.n; ++t) {
    const float* x = task.x + static_cast<size_t>(t) * task.x_stride;
    const float* b = task.b + static_cast<size_t>(t) * task.b_stride + group * s_size;
    const float* c = task.c + static_cast<size_t>(t) * task.c_stride + group * s_size;
    float* y = task.y + static_cast<size_t>(t) * task.y_stride;
    const float dt = ssm_softplus(task.dt[static_cast<size_t>(t) * task.dt_stride + static_cast<size_t>(head)] + bias);
    const float decay = std::exp(dt * a);
    for (int64_t i = first; i < first + task.head_dim; ++i) {
      float* state = task.state + static_cast<size_t>(i) * static_cast<size_t>(s_size);
      const float x_dt = x[i] * dt;
      float partial[kLanes] = {};
      int64_t s = 0;
      for (; s + kLanes <= s_size; s += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) {
          const float h = state[s + l] * decay + b[s + l] * x_dt;
          state[s + l] = h;
          partial[l] += h * c[s + l];
        }
      }
      float sum = 0.0f;
      for (; s < s_size; ++s) {
        const float h = state[s] * decay + b[s] * x_dt;
        state[s] = h;
        sum += h * c[s];
      }
      for (int64_t l = 0; l < kLanes; ++l) sum += partial[l];
      y[i] = sum + x[i] * d;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
