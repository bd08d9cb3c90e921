#pragma once
// The argument check of the attention op, shared by every backend so they accept and refuse
// the same inputs.
#include <span>

#include "backend/backend.h"

namespace lumen::backend::common {

// Throws lumen::Error unless q, out (f32 {head_dim, n_heads, tokens}), the cache and the
// sequences fit `config` (the checks every backend's attention makes before touching memory).
void check_attention_inputs(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                            const AttentionConfig& config, const TensorView& out);

}  // namespace lumen::backend::common
