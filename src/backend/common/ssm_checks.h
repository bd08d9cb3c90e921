#pragma once
// The argument checks of Backend::ssm_conv and ssm_scan (Mamba 2), in front of every backend:
// every backend accepts and refuses the same calls with the same words, before anything is read
// or written. Each throws lumen::Error.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::backend::common {

// The longest convolution kernel any backend takes (Mamba 2's is 4 taps): the CPU keeps a row's
// inputs on the stack, the CUDA kernel a channel's in registers.
inline constexpr int64_t kSsmConvMaxTaps = 64;

// x f32 {channels, n}, weight f32 {kernel, channels} with contiguous rows (1 to kSsmConvMaxTaps
// taps), bias f32 {channels}, out f32 {channels, n} apart from x; each sequence's rows inside
// the batch, its conv_window f32 {channels, kernel - 1} contiguous, no two windows the same.
void check_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                    std::span<const SsmSequence> seqs, const TensorView& out);

// The scan's shape, as ssm_scan reads it from its operands.
struct SsmScanShape {
  int64_t inner = 0, heads = 0, groups = 0, state_size = 0, head_dim = 0;
};

// Heads of weights.head_dim dividing x's width, groups dividing the heads, dt f32 {heads, n}, b
// and c f32 {state size * groups, n}, A, D and dt's bias f32 with one value per head, y f32
// {inner, n} apart from every input; each sequence's rows inside the batch, its state f32
// {state size, inner} contiguous, no two states the same. Returns the shape.
SsmScanShape check_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                            const SsmScanWeights& weights, std::span<const SsmSequence> seqs, const TensorView& y);

}  // namespace lumen::backend::common
