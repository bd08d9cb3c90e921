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
  // The unweighted K-quants' search already takes weights (theirs come from x): with the
  // importance's weights and this step range, it is ggml's weighted search operation for operation.
  const ggml_search::AffineSearch search{nmax, -0.9f, 0.05f, 36, false};
  return ggml_search::affine_scale_search(n, x, weights, search, levels, offset, scratch);
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
