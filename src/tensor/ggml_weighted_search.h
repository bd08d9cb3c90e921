#pragma once
// Internal to the tensor module: the importance-weighted scale searches ggml's quantizers use
// when llama-quantize has an importance matrix. Each weight says how much an element's squared
// error counts (the imatrix's mean squared activation of that column, shaped by the value
// itself). As in ggml_kquant_search.h, every expression keeps the reference's operand order so
// the chosen levels, hence the bytes, are the same.
#include <cstdint>

namespace lumen::tensor::kernels::ggml_weighted {

// Symmetric levels l in [-nmax, nmax - 1] (stored as l + nmax) minimising
// sum w * (x - scale * l)^2, trying 19 scales around nmax / max|x| and keeping the best
// least-squares fit. Returns the scale (0 for an all-zero group).
float symmetric_search(int n, int nmax, const float* x, const float* weights, int8_t* levels);

// Affine levels in [0, nmax] with x ~= scale * level - offset, offset >= 0: starts from
// [min(x, 0), max x], then tries 37 scales (-0.9 + 0.05 * step + nmax) / range and refits
// scale and offset by weighted least squares, keeping the least weighted squared error.
// `scratch` holds n levels. Returns the scale; *offset receives the offset.
float affine_search(int n, int nmax, const float* x, const float* weights, uint8_t* levels, float* offset,
                    uint8_t* scratch);

// Levels in [0, nmax] for non-negative values (a super-block's sub-block scales or offsets):
// the best of 9 scales near nmax / max, then up to five sweeps moving single levels while the
// weighted fit improves. Returns the scale.
float positive_search(int n, int nmax, const float* x, const float* weights, uint8_t* levels);

}  // namespace lumen::tensor::kernels::ggml_weighted
