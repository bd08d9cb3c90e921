#pragma once
// The argument checks of RWKV 7's element-wise ops (Backend::rwkv7_norm and the rest), in front
// of every backend: the same calls accepted and refused with the same words everywhere.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::backend::common {

void check_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, int64_t group,
                      const TensorView& out);
// Each sequence's rows inside the batch and apart from the others'; its shift row f32 {width, 1}
// and clear of out; out {width, n * mixes}, overlapping neither x nor a shift row.
void check_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                             const TensorView& out);
void check_rwkv7_value_residual(const TensorView& v, const TensorView& first, const TensorView& mix,
                                const TensorView& v0);
void check_rwkv7_keys(const Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size);
void check_rwkv7_bonus_gate(const TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                            const TensorView& g, const TensorView& r_k, int64_t head_size);

}  // namespace lumen::backend::common
