#pragma once
// Quantization of activations (the x of y = W x) into 8-bit blocks before the integer dot
// products. The arithmetic follows llama.cpp's run-time quantizers on x86, not the reference
// ones used for weight files: the scale's inverse is computed as 127 / amax, codes round half
// to even, and Q8_K keeps the sign of the largest element in its scale. The differences are a
// few codes at rounding boundaries, but they propagate through every layer; matching them is
// what lets Lumen's logits agree with llama.cpp's to rounding noise.
#include <cstdint>

#include "tensor/dtype.h"

namespace lumen::backend::cpu {

// `act` is Q8_0, Q8_1 or Q8_K; n a multiple of its block size. Scalar reference for the SIMD
// quantizers, which must produce the same bytes.
void quantize_activation_row(tensor::DType act, const float* x, void* dst, int64_t n);

}  // namespace lumen::backend::cpu
