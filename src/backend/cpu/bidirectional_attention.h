#pragma once
// An encoder's attention on the CPU (Backend::bidirectional_attention): one query head of one
// row over every row of its sequence, in double. The CUDA kernel computes the same values
// (cuda/bidirectional_attention_math.h).
#include <cstdint>
#include <vector>

#include "backend/backend_types.h"

namespace lumen::backend::cpu {

// out[d] = sum_j p_j v_j[d] / sum_j p_j with p_j = exp(s_j - max s), s_j = q.k_j * scale, over
// rows j of [first, first + n) of k and v at column offset kv_offset; q, out head_dim values.
// scores: scratch of n doubles.
void bidirectional_attention_head(const float* q, const TensorView& k, const TensorView& v, int64_t first, int64_t n,
                                  int64_t kv_offset, int64_t head_dim, float scale, std::vector<double>& scores,
                                  float* out);

}  // namespace lumen::backend::cpu
