#pragma once
// Internal to the tensor module: how ggml's reference K-quant quantizers choose a sub-block's
// scale (and offset) and its integer levels. llama-quantize calls these reference quantizers
// whenever it has no importance matrix, so reproducing them float operation for float
// operation (same expressions, same order, no contraction: the module builds with
// -ffp-contract=off) is what makes `lumen quantize` write the same bytes.
//
// This is a separate method from kquant_fit.h (Lumen's own fit, used by quantize_row): both
// aim at a small squared error, but only this one reproduces llama.cpp's files.
#include <bit>
#include <cstdint>

namespace lumen::tensor::kernels::ggml_search {

// Below this largest magnitude ggml treats a group as all zeros.
inline constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, through the float adder: adding 1.5 * 2^23 leaves the
// rounded integer in the low mantissa bits. Valid for |value| < 2^22; outside (or for NaN)
// the result is garbage, but the same garbage ggml gets, which is what bit-exactness needs.
inline int nearest_int(float value) {
  const float shifted = value + 12582912.0f;
  const auto bits = std::bit_cast<int32_t>(shifted);
  return (bits & 0x007fffff) - 0x00400000;
}

// Symmetric levels in [-nmax, nmax - 1] for the n values of x, weighted by x^2, trying 18
// scales around nmax / max|x| and keeping the best least-squares fit. Writes level + nmax to
// levels and returns the scale (0 for an all-zero group). Q6_K's sub-blocks.
float symmetric_scale_search(int n, int nmax, const float* x, int8_t* levels);

// Symmetric levels as above from the single scale nmax / max|x|, then up to five sweeps that
// move one level at a time while that raises the x^2-weighted fit. Q3_K's sub-blocks.
float symmetric_level_refinement(int n, int nmax, const float* x, int8_t* levels);

// Affine levels in [0, nmax] with x ~= scale * level - offset, offset >= 0 (a group that is
// all positive gets offset 0): starts from the range [min(x, 0), max x], then tries nstep + 1
// scales (rmin + rdelta * step + nmax) / range, refitting scale and offset by weighted least
// squares and keeping the one with the least weighted error (|error| when mean_abs_error,
// else error^2). `scratch` holds n levels. Returns the scale; *offset receives the offset.
// Q2_K, Q4_K and Q5_K's sub-blocks.
struct AffineSearch {
  int nmax;
  float rmin;
  float rdelta;
  int nstep;
  bool mean_abs_error;
};
float affine_scale_search(int n, const float* x, const float* weights, const AffineSearch& search,
                          uint8_t* levels, float* offset, uint8_t* scratch);

}  // namespace lumen::tensor::kernels::ggml_search
