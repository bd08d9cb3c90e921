// ggml's reference sub-block searches (see ggml_kquant_search.h). Every expression keeps the
// operand order and the float/int conversions of the reference: (w * x) * l is not
// w * (x * l) in float arithmetic, and one flipped last bit changes a level, hence a byte.
#include "tensor/ggml_kquant_search.h"

#include <algorithm>
#include <cmath>

namespace lumen::tensor::kernels::ggml_search {
namespace {

float as_float(int value) { return static_cast<float>(value); }

// The element of largest magnitude, with its sign (the first one on ties).
float signed_max(int n, const float* x, float& amax) {
  float max = 0.0f;
  amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

int clamp_level(int level, int lo, int hi) { return std::max(lo, std::min(hi, level)); }

// The x^2-weighted sums of x * level and level^2 for the levels `iscale` gives.
struct WeightedSums {
  float sum_lx = 0.0f;
  float sum_l2 = 0.0f;
};

WeightedSums symmetric_sums(int n, int nmax, const float* x, float iscale) {
  WeightedSums sums;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    const float w = x[i] * x[i];
    sums.sum_lx += w * x[i] * as_float(l);
    sums.sum_l2 += w * as_float(l) * as_float(l);
  }
  return sums;
}

void store_symmetric_levels(int n, int nmax, const float* x, float iscale, int8_t* levels) {
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(nmax + l);
  }
}

}  // namespace

float symmetric_scale_search(int n, int nmax, const float* x, int8_t* levels) {
  float amax = 0.0f;
  const float max = signed_max(n, x, amax);
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, int8_t{0});
    return 0.0f;
  }
  float iscale = as_float(-nmax) / max;
  store_symmetric_levels(n, nmax, x, iscale, levels);
  WeightedSums sums = symmetric_sums(n, nmax, x, iscale);
  float scale = sums.sum_l2 != 0.0f ? sums.sum_lx / sums.sum_l2 : 0.0f;
  float best = scale * sums.sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(as_float(nmax) + 0.1f * as_float(step)) / max;
    sums = symmetric_sums(n, nmax, x, iscale);
    if (sums.sum_l2 > 0.0f && sums.sum_lx * sums.sum_lx > best * sums.sum_l2) {
      store_symmetric_levels(n, nmax, x, iscale, levels);
      scale = sums.sum_lx / sums.sum_l2;
      best = scale * sums.sum_lx;
    }
  }
  return scale;
}

float symmetric_level_refinement(int n, int nmax, const float* x, int8_t* levels) {
  float amax = 0.0f;
  const float max = signed_max(n, x, amax);
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = as_float(-nmax) / max;
  float sum_lx = 0.0f;
  float sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * as_float(l);
    sum_l2 += w * as_float(l) * as_float(l);
  }
  // Move one level at a time to the value that would be optimal with the others fixed, and
  // keep the move when the fit's figure of merit sum_lx^2 / sum_l2 grows.
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float old_l = as_float(levels[i]);
      float without_lx = sum_lx - w * x[i] * old_l;
      if (!(without_lx > 0.0f)) continue;
      float without_l2 = sum_l2 - w * old_l * old_l;
      const int new_l = clamp_level(nearest_int(x[i] * without_l2 / without_lx), -nmax, nmax - 1);
      if (new_l == levels[i]) continue;
      without_lx += w * x[i] * as_float(new_l);
      without_l2 += w * as_float(new_l) * as_float(new_l);
      if (without_l2 > 0.0f &&
          without_lx * without_lx * sum_l2 > sum_lx * sum_lx * without_l2) {
        levels[i] = static_cast<int8_t>(new_l);
        sum_lx = without_lx;
        sum_l2 = without_l2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(levels[i] + nmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

float affine_scale_search(int n, const float* x, const float* weights, const AffineSearch& search,
                          uint8_t* levels, float* offset, uint8_t* scratch) {
  const int nmax = search.nmax;
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(levels, levels + n, uint8_t{0});
    *offset = -min;
    return 0.0f;
  }
  auto error_of = [&](float diff) { return search.mean_abs_error ? std::fabs(diff) : diff * diff; };

  float iscale = as_float(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    levels[i] = static_cast<uint8_t>(clamp_level(l, 0, nmax));
    const float diff = scale * as_float(levels[i]) + min - x[i];
    best_error += weights[i] * error_of(diff);
  }
  if (search.nstep < 1) {
    *offset = -min;
    return scale;
  }
  for (int step = 0; step <= search.nstep; ++step) {
    iscale = (search.rmin + search.rdelta * as_float(step) + as_float(nmax)) / (max - min);
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
      scratch[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * as_float(l);
      sum_l2 += w * as_float(l) * as_float(l);
      sum_xl += w * as_float(l) * x[i];
    }
    // Weighted least squares for x ~= scale * l + min over these levels.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {  // the offset may only pull levels down
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * as_float(scratch[i]) + this_min - x[i];
      error += weights[i] * error_of(diff);
    }
    if (error < best_error) {
      std::copy(scratch, scratch + n, levels);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *offset = -min;
  return scale;
}

}  // namespace lumen::tensor::kernels::ggml_search
