#pragma once
// The wkv7 loop (rwkv_wkv7.h), included by the portable unit and by the AVX2 one
// (rwkv_wkv7_avx2.cc), which compiles the same loop with eight-lane FMA.
// In an unnamed namespace: each unit keeps its own copy, compiled with its own flags.
#include <cstdint>

#include "backend/cpu/rwkv_wkv7.h"

namespace lumen::backend::cpu {
namespace {

constexpr int64_t kWkvLanes = 8;

// sum_j x_j y_j in kWkvLanes partial sums.
inline float wkv_dot(const float* x, const float* y, int64_t size) {
  float partial[kWkvLanes] = {};
  int64_t j = 0;
  for (; j + kWkvLanes <= size; j += kWkvLanes) {
    for (int64_t l = 0; l < kWkvLanes; ++l) partial[l] += x[j + l] * y[j + l];
  }
  float sum = 0.0f;
  for (; j < size; ++j) sum += x[j] * y[j];
  for (int64_t l = 0; l < kWkvLanes; ++l) sum += partial[l];
  return sum;
}

inline void wkv7_head_loop(const Wkv7Task& task, int64_t head) {
  const int64_t size = task.head_size, first = head * size;
  float* state = task.state + static_cast<size_t>(first) * static_cast<size_t>(size);
  for (int64_t t = 0; t < task.n; ++t) {
    const size_t row = static_cast<size_t>(t) * task.stride + static_cast<size_t>(first);
    const float *r = task.r + row, *w = task.w + row, *k = task.k + row;
    const float *v = task.v + row, *a = task.a + row, *b = task.b + row;
    float* out = task.out + static_cast<size_t>(t) * task.out_stride + first;
    for (int64_t i = 0; i < size; ++i) {
      float* s = state + static_cast<size_t>(i) * static_cast<size_t>(size);
      const float sa = wkv_dot(a, s, size);
      const float vi = v[i];
      float partial[kWkvLanes] = {};
      int64_t j = 0;
      for (; j + kWkvLanes <= size; j += kWkvLanes) {
        for (int64_t l = 0; l < kWkvLanes; ++l) {
          const float h = s[j + l] * w[j + l] + k[j + l] * vi + b[j + l] * sa;
          s[j + l] = h;
          partial[l] += h * r[j + l];
        }
      }
      float sum = 0.0f;
      for (; j < size; ++j) {
        const float h = s[j] * w[j] + k[j] * vi + b[j] * sa;
        s[j] = h;
        sum += h * r[j];
      }
      for (int64_t l = 0; l < kWkvLanes; ++l) sum += partial[l];
      out[i] = sum;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
