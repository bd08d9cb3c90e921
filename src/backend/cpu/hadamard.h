#pragma once
// The normalized Walsh-Hadamard transform of one vector of a power-of-two length n:
// x <- H x / sqrt(n). H / sqrt(n) is orthogonal and symmetric, so the transform is its own
// inverse and keeps dot products: (H q) . (H k) = q . k.
//
// Why a KV cache wants it: a quantized cache (q8_0, q4_0, fp8) rounds each value on its own, and
// keys of real models carry a few outlier channels that dominate q . k and a q4_0 block's scale.
// Rotating every head spreads each channel over all n, so the rounding errors of many similar
// values average out instead of one large one deciding the score (QuaRot, Ashkboos et al. 2024;
// llama.cpp rotates quantized caches the same way). Measured on SmolLM2: q4_0 KV perplexity
// +23% -> +5%, fp8 +1.7% -> +0.6% (BENCHMARKS.md).
#include <cstdint>

namespace lumen::backend::cpu {

// n must be a power of two (the caller checks: util/checked_math.h is_power_of_two).
void hadamard_rotate(float* x, int64_t n);

}  // namespace lumen::backend::cpu
