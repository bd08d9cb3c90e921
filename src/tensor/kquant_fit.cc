// The K-quant scale search described in kquant_fit.h.
#include "tensor/kquant_fit.h"

#include <algorithm>
#include <cmath>

#include "tensor/fp16.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

// Enough for the alternating refit to settle on every distribution the tests use; more rounds
// changed the error by well under 1%.
constexpr int kRefitRounds = 8;
constexpr float kLargestHalf = 65504.0f;

// Stores a super-scale as f16 and returns the value the dequantizer will see. Scales beyond
// f16 range are clamped, so an oversized block saturates instead of decoding to inf/NaN.
float store_half(float value, uint16_t& bits) {
  bits = float_to_fp16(std::clamp(value, -kLargestHalf, kLargestHalf));
  return fp16_to_float(bits);
}

// floor(value) limited to [lo, hi]; NaN lands on lo.
int floor_clamped(float value, int lo, int hi) {
  if (!(value > static_cast<float>(lo))) return lo;
  if (value >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::floor(value));
}

// ---- affine: x = step * q - offset ----

// Rounds each element to its nearest level and returns the squared error of the rebuilt
// values, computed as the dequantizer computes them. `q` may be null.
double affine_error(const float* x, int n, int q_max, float step, float offset, uint8_t* q) {
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    const int code = step > 0.0f ? clamp_round((x[i] + offset) / step, 0, q_max) : 0;
    const float rebuilt = step * static_cast<float>(code) - offset;
    const double diff = static_cast<double>(x[i]) - static_cast<double>(rebuilt);
    error += diff * diff;
    if (q != nullptr) q[i] = static_cast<uint8_t>(code);
  }
  return error;
}

struct AffineFit {
  float step;
  float offset;  // >= 0: the lowest level, -offset, is never above zero (the format's rule)
};

AffineFit fit_affine(const float* x, int n, int q_max) {
  float lo = std::min(*std::min_element(x, x + n), 0.0f);
  const float hi = *std::max_element(x, x + n);
  if (!(hi > lo)) return {0.0f, -lo};  // constant, non-positive sub-block: the offset says it all

  AffineFit best{(hi - lo) / static_cast<float>(q_max), -lo};
  double best_error = affine_error(x, n, q_max, best.step, best.offset, nullptr);
  AffineFit current = best;
  for (int round = 0; round < kRefitRounds; ++round) {
    // Least squares for x ~ step * q + shift over the current levels q.
    double sum_q = 0, sum_qq = 0, sum_x = 0, sum_xq = 0;
    for (int i = 0; i < n; ++i) {
      const int code = clamp_round((x[i] + current.offset) / current.step, 0, q_max);
      const double q = code;
      sum_q += q;
      sum_qq += q * q;
      sum_x += x[i];
      sum_xq += x[i] * q;
    }
    const double det = n * sum_qq - sum_q * sum_q;
    if (!(det > 0.0)) break;  // all elements on one level: nothing left to fit
    double step = (n * sum_xq - sum_q * sum_x) / det;
    double shift = (sum_x - step * sum_q) / n;
    if (shift > 0.0) {  // the format cannot lift the lowest level above zero
      shift = 0.0;
      step = sum_xq / sum_qq;
    }
    if (!(step > 0.0)) break;
    current = {static_cast<float>(step), static_cast<float>(-shift)};
    const double error = affine_error(x, n, q_max, current.step, current.offset, nullptr);
    if (error < best_error) {
      best_error = error;
      best = current;
    }
  }
  return best;
}

// ---- symmetric: x = step * q ----

double symmetric_error(const float* x, int n, int q_min, int q_max, float step, int8_t* q) {
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    const int code = step != 0.0f ? clamp_round(x[i] / step, q_min, q_max) : 0;
    const float rebuilt = step * static_cast<float>(code);
    const double diff = static_cast<double>(x[i]) - static_cast<double>(rebuilt);
    error += diff * diff;
    if (q != nullptr) q[i] = static_cast<int8_t>(code);
  }
  return error;
}

// The element of largest magnitude, with its sign (0 when all are zero).
float signed_abs_max(const float* x, int n) {
  float best = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  }
  return best;
}

float fit_symmetric(const float* x, int n, int q_min, int q_max) {
  const float peak = signed_abs_max(x, n);
  if (peak == 0.0f) return 0.0f;
  // Two starts: the peak on the long side of the code range (q_min) or on the short side.
  const float starts[2] = {peak / static_cast<float>(q_min), peak / static_cast<float>(q_max)};
  float best = starts[0];
  double best_error = symmetric_error(x, n, q_min, q_max, best, nullptr);
  for (const float start : starts) {
    float step = start;
    for (int round = 0; round < kRefitRounds; ++round) {
      const double error = symmetric_error(x, n, q_min, q_max, step, nullptr);
      if (error < best_error) {
        best_error = error;
        best = step;
      }
      double sum_xq = 0, sum_qq = 0;
      for (int i = 0; i < n; ++i) {
        const double q = clamp_round(x[i] / step, q_min, q_max);
        sum_xq += x[i] * q;
        sum_qq += q * q;
      }
      if (!(sum_qq > 0.0)) break;
      step = static_cast<float>(sum_xq / sum_qq);
      if (step == 0.0f) break;
    }
  }
  return best;
}

// The integer codes either side of `ideal`, clamped to [lo, hi] (one code when they coincide).
int neighbour_codes(float ideal, int lo, int hi, int codes[2]) {
  const int below = floor_clamped(ideal, lo, hi);
  codes[0] = below;
  if (below + 1 > hi) return 1;
  codes[1] = below + 1;
  return 2;
}

}  // namespace

void quantize_affine_super_block(const float* x, const AffineShape& shape,
                                 AffineSuperBlock& out) {
  const int n = shape.sub_block_size;
  AffineFit fits[kMaxSubBlocks];
  float max_step = 0.0f;
  float max_offset = 0.0f;
  for (int j = 0; j < shape.sub_blocks; ++j) {
    fits[j] = fit_affine(x + j * n, n, shape.q_max);
    max_step = std::max(max_step, fits[j].step);
    max_offset = std::max(max_offset, fits[j].offset);
  }
  const auto code_max = static_cast<float>(shape.code_max);
  const float d = store_half(max_step / code_max, out.d);
  const float dmin = store_half(max_offset / code_max, out.dmin);

  for (int j = 0; j < shape.sub_blocks; ++j) {
    int scale_codes[2] = {0, 0};
    int min_codes[2] = {0, 0};
    const int scale_count =
        d > 0.0f ? neighbour_codes(fits[j].step / d, 0, shape.code_max, scale_codes) : 1;
    const int min_count =
        dmin > 0.0f ? neighbour_codes(fits[j].offset / dmin, 0, shape.code_max, min_codes) : 1;
    double best_error = INFINITY;
    for (int s = 0; s < scale_count; ++s) {
      for (int m = 0; m < min_count; ++m) {
        const float step = d * static_cast<float>(scale_codes[s]);
        const float offset = dmin * static_cast<float>(min_codes[m]);
        const double error = affine_error(x + j * n, n, shape.q_max, step, offset, nullptr);
        if (error < best_error) {
          best_error = error;
          out.scale_codes[j] = static_cast<uint8_t>(scale_codes[s]);
          out.min_codes[j] = static_cast<uint8_t>(min_codes[m]);
        }
      }
    }
    const float step = d * static_cast<float>(out.scale_codes[j]);
    const float offset = dmin * static_cast<float>(out.min_codes[j]);
    affine_error(x + j * n, n, shape.q_max, step, offset, out.q + j * n);
  }
}

void quantize_symmetric_super_block(const float* x, const SymmetricShape& shape,
                                    SymmetricSuperBlock& out) {
  const int n = shape.sub_block_size;
  float steps[kMaxSubBlocks];
  for (int j = 0; j < shape.sub_blocks; ++j) {
    steps[j] = fit_symmetric(x + j * n, n, shape.q_min, shape.q_max);
  }
  // As inside a sub-block: the largest sub-scale takes the most negative code, which has no
  // positive twin, so the full code range stays usable.
  const float largest = signed_abs_max(steps, shape.sub_blocks);
  const float d = store_half(largest / static_cast<float>(shape.code_min), out.d);

  for (int j = 0; j < shape.sub_blocks; ++j) {
    int codes[2] = {0, 0};
    const int count =
        d != 0.0f ? neighbour_codes(steps[j] / d, shape.code_min, shape.code_max, codes) : 1;
    double best_error = INFINITY;
    for (int c = 0; c < count; ++c) {
      const float step = d * static_cast<float>(codes[c]);
      const double error =
          symmetric_error(x + j * n, n, shape.q_min, shape.q_max, step, nullptr);
      if (error < best_error) {
        best_error = error;
        out.scale_codes[j] = static_cast<int8_t>(codes[c]);
      }
    }
    const float step = d * static_cast<float>(out.scale_codes[j]);
    symmetric_error(x + j * n, n, shape.q_min, shape.q_max, step, out.q + j * n);
  }
}

}  // namespace lumen::tensor::kernels
