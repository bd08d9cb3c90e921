#pragma once
// ALiBi (Press et al., "Train Short, Test Long"): attention without position embeddings, each
// head's scores biased by how far a key lies from its query, times a head-specific slope. The
// slopes follow llama.cpp's convention (ggml's soft_max with max_bias), so a GGUF model gives the
// same scores: for n heads, with n2 the largest power of two not above n, head h < n2 has slope
// m0^(h+1) with m0 = 2^(-max_bias / n2); the heads past n2 (when n is not a power of two)
// interleave a second series, m1^(2(h - n2) + 1) with m1 = 2^(-max_bias / 2 / n2).
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace lumen::backend::common {

// Query head `head`'s slope among `n_heads` (0 when max_bias is 0: no bias).
inline float alibi_slope(float max_bias, int64_t n_heads, int64_t head) {
  if (max_bias <= 0.0f) return 0.0f;
  const int64_t n2 = int64_t{1} << static_cast<int>(std::floor(std::log2(static_cast<double>(n_heads))));
  const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n2));
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
  return head < n2 ? std::pow(m0, static_cast<float>(head + 1)) : std::pow(m1, static_cast<float>(2 * (head - n2) + 1));
}

// What the slope multiplies: minus the distance between the positions (llama.cpp's mask value,
// key - query for a causal key; a key past its query, in a span that attends both ways, is
// penalised by its distance the same way).
inline float alibi_distance(int64_t query_pos, int64_t key_pos) {
  return -static_cast<float>(std::llabs(query_pos - key_pos));
}

}  // namespace lumen::backend::common
