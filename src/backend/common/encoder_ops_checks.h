#pragma once
// The argument checks of the LayerNorm blocks' ops and the encoder's attention
// (Backend::layer_norm, bidirectional_attention), run in front of every backend.
#include <span>

#include "backend/backend_types.h"

namespace lumen::backend::common {

// x, out f32 of one shape; weight and bias f32 of one row's length.
void check_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out);
// Shapes of q, k, v and out against the config; each slice's rows inside the batch, no two
// slices sharing a row, no mask; out overlapping none of q, k, v; a config with nothing but
// heads and a scale.
void check_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                   std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                   const TensorView& out);

}  // namespace lumen::backend::common
