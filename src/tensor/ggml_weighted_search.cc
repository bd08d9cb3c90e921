// ggml's weighted searches (ggml_weighted_search.h). Products such as w * x * l are evaluated
// left to right with l converted to float, exactly as the reference writes them: one changed
// rounding changes a level, hence a byte of the file.
#include "tensor/ggml_weighted_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/ggml_kquant_search.h"

namespace lumen::tensor::kernels::ggml_weighted {
namespace {

using ggml_search::kGroupMaxEps;
using ggml_search::nearest_int;

float as_float(int value) { return static_cast<float>(value); }
int clamp_level(int level, int lo, int hi) { return std::max(lo, std::min(hi, level)); }

struct Sums {
  float lx = 0.0f;
  float l2 = 0.0f;
};

Sums symmetric_sums(int n, int nmax, const float* x, const float* w, float iscale) {
  Sums sums;
  for (int i = 0; i < n; ++i) {
    const float l = as_float(clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    sums.lx += w[i] * x[i] * l;
    sums.l2 += w[i] * l * l;
  }
  return sums;
}

void store_symmetric(int n, int nmax, const float* x, float iscale, int8_t* levels) {
  for (int i = 0; i < n; ++i) {
    levels[i] = static_cast<int8_t>(nmax + clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
  }
}

}  // namespace

float symmetric_search(int n, int nmax, const float* x, const float* weights, int8_t* levels) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, int8_t{0});
    return 0.0f;
  }
  float iscale = as_float(-nmax) / max;
  store_symmetric(n, nmax, x, iscale, levels);
  Sums sums = symmetric_sums(n, nmax, x, weights, iscale);
  float scale = sums.l2 != 0.0f ? sums.lx / sums.l2 : 0.0f;
  float best = scale * sums.lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(as_float(nmax) + 0.1f * as_float(step)) / max;
    sums = symmetric_sums(n, nmax, x, weights, iscale);
    if (sums.l2 > 0.0f && sums.lx * sums.lx > best * sums.l2) {
      store_symmetric(n, nmax, x, iscale, levels);
      scale = sums.lx / sums.l2;
      best = scale * sums.lx;
    }
  }
  return scale;
}

float affine_search(int n, int nmax, const float* x, const float* weights, uint8_t* levels, float* offset,
                    uint8_t* scratch) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max <= min) {
    std::memset(levels, 0, static_cast<size_t>(n));
    *offset = -min;
    return 0.0f;
  }
  float iscale = as_float(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    levels[i] = static_cast<uint8_t>(clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * as_float(levels[i]) + min - x[i];
    best_error += weights[i] * (diff * diff);
  }
  constexpr float kRmin = -0.9f, kRdelta = 0.05f;
  constexpr int kSteps = 36;
  for (int step = 0; step <= kSteps; ++step) {
    iscale = (kRmin + kRdelta * as_float(step) + as_float(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
      scratch[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * as_float(l);
      sum_l2 += w * as_float(l) * as_float(l);
      sum_xl += w * as_float(l) * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * as_float(scratch[i]) + this_min - x[i];
      error += weights[i] * (diff * diff);
    }
    if (error < best_error) {
      std::memcpy(levels, scratch, static_cast<size_t>(n));
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *offset = -min;
  return scale;
}

float positive_search(int n, int nmax, const float* x, const float* weights, uint8_t* levels) {
  float max = 0.0f;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kGroupMaxEps) {
    std::fill(levels, levels + n, uint8_t{0});
    return 0.0f;
  }
  float iscale = as_float(nmax) / max;
  for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float first_scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - first_scale * as_float(levels[i]);
    best_error += weights[i] * diff * diff;
  }
  for (int step = -4; step <= 4; ++step) {
    if (step == 0) continue;
    const float iscale_step = (0.1f * as_float(step) + as_float(nmax)) / max;
    const float scale_step = 1.0f / iscale_step;
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_step * x[i]));
      const float diff = x[i] - scale_step * as_float(l);
      error += weights[i] * diff * diff;
    }
    if (error < best_error) {
      best_error = error;
      iscale = iscale_step;
    }
  }
  float sum_lx = 0.0f;
  float sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    levels[i] = static_cast<uint8_t>(l);
    sum_lx += weights[i] * x[i] * as_float(l);
    sum_l2 += weights[i] * as_float(l) * as_float(l);
  }
  // Sweeps that move one level at a time to the value that best fits the others' scale.
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = weights[i];
      const float li = as_float(levels[i]);
      float slx = sum_lx - w * x[i] * li;
      float sl2 = sum_l2 - w * li * li;
      if (!(slx > 0.0f && sl2 > 0.0f)) continue;
      const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
      if (new_l == levels[i]) continue;
      slx += w * x[i] * as_float(new_l);
      sl2 += w * as_float(new_l) * as_float(new_l);
      if (slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        levels[i] = static_cast<uint8_t>(new_l);
        sum_lx = slx;
        sum_l2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

}  // namespace lumen::tensor::kernels::ggml_weighted
