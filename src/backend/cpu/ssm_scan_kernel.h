#pragma once
// The token-by-token scan's loop (ssm_scan.h): the portable unit's, and the reference the AVX2
// unit (ssm_scan_avx2.cc) follows with intrinsics. The sums over the state run in 8 partial sums
// either way (lane l sums the values s = l mod 8), so only FMA's single rounding differs.
// In an unnamed namespace: each unit keeps its own copy, compiled with its own flags.
#include <cmath>
#include <cstdint>

#include "backend/cpu/ssm_scan.h"

namespace lumen::backend::cpu {
namespace {

// One channel's state row for one token: decay it, add B x dt, and return its sum against C
// (8 partial sums, then the tail, then the partials in order).
inline float scan_channel(float* state, const float* b, const float* c, int64_t s_size, float decay, float x_dt) {
  constexpr int64_t kLanes = 8;
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
  return sum;
}

// Four channels' rows at once, each summed exactly as scan_channel sums it (the same results
// bit for bit): one channel's 8 partial sums are a chain of dependent adds, so a lone channel
// waits on the add's latency every 8 values; four independent chains keep the FMA units busy
// while the state streams through. Decode's scan was latency-bound on that chain.
inline void scan_four_channels(float* state, size_t row, const float* b, const float* c, int64_t s_size, float decay,
                               const float* x_dt, float* sums) {
  constexpr int64_t kLanes = 8, kRows = 4;
  float partial[kRows][kLanes] = {};
  int64_t s = 0;
  for (; s + kLanes <= s_size; s += kLanes) {
    for (int64_t r = 0; r < kRows; ++r) {
      float* st = state + static_cast<size_t>(r) * row;
      for (int64_t l = 0; l < kLanes; ++l) {
        const float h = st[s + l] * decay + b[s + l] * x_dt[r];
        st[s + l] = h;
        partial[r][l] += h * c[s + l];
      }
    }
  }
  for (int64_t r = 0; r < kRows; ++r) {
    float* st = state + static_cast<size_t>(r) * row;
    float sum = 0.0f;
    for (int64_t t = s; t < s_size; ++t) {
      const float h = st[t] * decay + b[t] * x_dt[r];
      st[t] = h;
      sum += h * c[t];
    }
    for (int64_t l = 0; l < kLanes; ++l) sum += partial[r][l];
    sums[r] = sum;
  }
}

inline void scan_head(const SsmScanTask& task, int64_t head) {
  const int64_t s_size = task.state_size, first = head * task.head_dim, end = first + task.head_dim;
  const int64_t group = head / task.heads_per_group;
  const auto row = static_cast<size_t>(s_size);
  const float a = task.a[head], d = task.d[head], bias = task.dt_bias[head];
  for (int64_t t = 0; t < task.n; ++t) {
    const float* x = task.x + static_cast<size_t>(t) * task.x_stride;
    const float* b = task.b + static_cast<size_t>(t) * task.b_stride + group * s_size;
    const float* c = task.c + static_cast<size_t>(t) * task.c_stride + group * s_size;
    float* y = task.y + static_cast<size_t>(t) * task.y_stride;
    const float dt = ssm_softplus(task.dt[static_cast<size_t>(t) * task.dt_stride + static_cast<size_t>(head)] + bias);
    const float decay = std::exp(dt * a);  // once per head and token
    int64_t i = first;
    for (; i + 4 <= end; i += 4) {
      const float x_dt[4] = {x[i] * dt, x[i + 1] * dt, x[i + 2] * dt, x[i + 3] * dt};
      float sums[4];
      scan_four_channels(task.state + static_cast<size_t>(i) * row, row, b, c, s_size, decay, x_dt, sums);
      for (int64_t r = 0; r < 4; ++r) y[i + r] = sums[r] + x[i + r] * d;
    }
    for (; i < end; ++i) {
      y[i] = scan_channel(task.state + static_cast<size_t>(i) * row, b, c, s_size, decay, x[i] * dt) + x[i] * d;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
